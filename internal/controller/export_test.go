package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/externaldns"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// NewOnListers returns a Controller whose informers' caches hold objects, as
// the informers' transform leaves them, and which runs nothing: no informer,
// no queue, no publisher. Its syncs read the caches alone.
func NewOnListers(cfg Config, objects ...runtime.Object) (*Controller, error) {
	c := New(cfg, kubefake.New(), nil, nil)
	strip := transform(cfg.Zone, cfg.Scope, cfg.Source.Views)
	for _, obj := range objects {
		inf, err := c.informerOf(obj)
		if err != nil {
			return nil, err
		}
		stripped, err := strip(obj.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		if err := inf.GetIndexer().Add(stripped); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Delete removes an object from the caches, as its deletion would.
func (c *Controller) Delete(obj runtime.Object) error {
	inf, err := c.informerOf(obj)
	if err != nil {
		return err
	}
	return inf.GetIndexer().Delete(obj)
}

// informerOf returns the informer whose cache holds obj: that of its
// namespace when namespaces are watched one by one.
func (c *Controller) informerOf(obj runtime.Object) (cache.SharedIndexInformer, error) {
	var set informerSet
	kind := ""
	switch obj.(type) {
	case *corev1.Service:
		set = c.caches.informers.services
	case *corev1.Node:
		set = c.caches.informers.nodes
	case *discoveryv1.EndpointSlice:
		set = c.caches.informers.slices
	case *networkingv1.Ingress:
		kind = source.KindIngress
	case *gatewayv1.Gateway:
		kind = source.KindGateway
	case *gatewayv1.HTTPRoute:
		kind = source.KindHTTPRoute
	case *gatewayv1.GRPCRoute:
		kind = source.KindGRPCRoute
	case *gatewayv1.TLSRoute:
		kind = source.KindTLSRoute
	case *externaldns.DNSEndpoint:
		kind = source.KindDNSEndpoint
	default:
		return nil, fmt.Errorf("no informer for a %T", obj)
	}
	if k := c.kindOf(kind); k != nil {
		set = k.informers
	}
	if len(set.list) == 0 {
		return nil, fmt.Errorf("no informer for a %T in this scope", obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if i := slices.Index(set.namespaces, m.GetNamespace()); i >= 0 {
		return set.list[i], nil
	}
	return set.list[0], nil
}

// Decision is an outcome as a test compares it.
type Decision struct {
	// Records are the records handed over, as "name host" lines ("name host
	// shared" where the name is shared with other clusters, "name host
	// follows <name>" for a PTR record), and the names emptied, as "name -",
	// sorted.
	Records []string
	// Events are "type reason: message", sorted.
	Events []string
	// Status is, by Service, the load-balancer ingress to write (IPs or host
	// names); an empty list clears it.
	Status map[skydns.ObjectKey][]string
	// Probes are, by object, the health targets wanted.
	Probes map[string][]string
	// Requeue are the keys to sync again later.
	Requeue []skydns.ObjectKey
}

// Sync syncs one object and returns its decision without applying it.
func (c *Controller) Sync(ctx context.Context, key skydns.ObjectKey) (Decision, error) {
	out, err := c.sync(ctx, key)
	if err != nil {
		return Decision{}, err
	}
	return c.decision(out), nil
}

// decision returns out as a test compares it; the status of a Service is
// what its writer would write now.
func (c *Controller) decision(out outcome) Decision {
	var d Decision
	for _, w := range out.records {
		if len(w.want.Records) == 0 {
			d.Records = append(d.Records, w.stored+" -")
		}
		for _, r := range w.want.Records {
			line := r.Name + " " + r.Host
			if w.want.Shared {
				line += fmt.Sprintf(" shared %s %d", w.want.Policy, w.want.Priority)
				if w.want.Unhealthy {
					line += " unhealthy"
				}
			}
			if w.want.Follows != "" {
				line += " follows " + w.want.Follows
			}
			d.Records = append(d.Records, line)
		}
	}
	slices.Sort(d.Records)
	for _, e := range out.events {
		d.Events = append(d.Events, e.kind+" "+e.reason+": "+e.message)
	}
	slices.Sort(d.Events)
	for _, s := range out.status {
		if d.Status == nil {
			d.Status = map[skydns.ObjectKey][]string{}
		}
		ingress := []string{}
		if s.key.Kind == source.KindService {
			svc, err := c.caches.services.Services(s.key.Namespace).Get(s.key.Name)
			if err != nil {
				panic(fmt.Sprintf("status of %s decided, but not in the cache: %v", s.key, err))
			}
			c.mu.Lock()
			pub := c.book.index.Publication(s.key.String())
			c.mu.Unlock()
			for _, ing := range c.serviceStatus(svc, pub).ingress {
				ingress = append(ingress, ing.IP+ing.Hostname)
			}
		}
		d.Status[s.key] = ingress
	}
	for _, p := range out.probes {
		if len(p.targets) == 0 {
			continue
		}
		if d.Probes == nil {
			d.Probes = map[string][]string{}
		}
		for _, t := range p.targets {
			d.Probes[p.source] = append(d.Probes[p.source], t.String())
		}
	}
	for _, r := range out.requeue {
		d.Requeue = append(d.Requeue, r.key)
	}
	return d
}

// IsPermanent reports whether a sync's error is one retrying cannot fix.
func IsPermanent(err error) bool { return isPermanent(err) }
