package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/externaldns"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// objectKind is a kind of object the controller publishes, or reads for
// what others publish (the Gateways, whose addresses routes take): how its
// informers are made and run, how a cached object becomes a publication, and
// what else its changes queue. A new kind is an entry of kindsOf, its
// builder in package source (with its Kubernetes kind, source.Kinds) and
// its RBAC rule.
type objectKind struct {
	kind      string        // source kind: source.KindService, ...
	informers informerSet   // the kind's informers
	indexer   cache.Indexer // their caches, as one
	// served, for the kind of a CRD, is the resource whose informers run
	// once discovery says it is served (see discovery); nil for a kind
	// whose informers run from the start.
	served *servedResource
	// indexers are added to the informers before they run.
	indexers cache.Indexers
	// publication returns what a cached object publishes: nil when it
	// publishes nothing; and the object itself when its status follows its
	// publication (a Service's status and finalizer, a DNSEndpoint's
	// observed generation), for statusOf.
	publication func(c *Controller, obj any) (*source.Publication, any, error)
	// statusOf adds to out the status of an object that publication
	// returned, when it should change; writeStatus writes it (see
	// syncStatus). Both nil for a kind whose status skylb leaves alone.
	statusOf    func(c *Controller, out *outcome, obj any, pub *source.Publication)
	writeStatus func(c *Controller, ctx context.Context, key skydns.ObjectKey) error
	// selected reports whether enqueueAll takes a cached object; nil
	// takes every one.
	selected func(obj any) bool
	// changed queues what else a change of an object affects; nil:
	// nothing.
	changed dependents
	// nodeAddressed says that the kind's addresses may come from the
	// nodes (a Service's, or those a Gateway or route takes from one): a
	// Node's change queues its objects.
	nodeAddressed bool
}

// dependents queues what depends on an object besides itself, given its
// name, the object (cur, or old once deleted), the object before a change
// (nil when added) and after it (nil when deleted).
type dependents func(c *Controller, name cache.ObjectName, obj, old, cur any)

// kindsOf returns the kinds cfg publishes, with their informers made by f:
// svcs and ings are the Services' and the Ingresses' (New reads Services
// for more than their own publications).
func kindsOf(cfg Config, f informerMaker, svcs, ings informerSet) []*objectKind {
	kinds := []*objectKind{{
		kind:        source.KindService,
		informers:   svcs,
		publication: (*Controller).servicePublication,
		// Only a LoadBalancer Service, or one whose status still holds
		// load-balancer addresses, can publish.
		selected: func(obj any) bool {
			s, ok := obj.(*corev1.Service)
			return ok && (s.Spec.Type == corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) > 0)
		},
		changed:       (*Controller).serviceDependents,
		nodeAddressed: true,
		statusOf: func(c *Controller, out *outcome, obj any, pub *source.Publication) {
			c.serviceStatusOf(out, obj.(*corev1.Service), pub)
		},
		writeStatus: (*Controller).syncServiceStatus,
	}, {
		kind:        source.KindIngress,
		informers:   ings,
		publication: (*Controller).ingressPublication,
	}}
	sc := cfg.Scope
	late := func(kind string, r schema.GroupVersionResource, obj runtime.Object) *objectKind {
		return &objectKind{kind: kind, informers: f.of(r, obj, sc.Namespaces), served: &servedResource{GroupVersionResource: r}}
	}
	// The Gateways are read whenever a kind of the Gateway API is
	// published: routes take their addresses.
	if cfg.GatewayAPI && sc.GatewayAPI() {
		gw := late(source.KindGateway, kubeclient.Gateways, &gatewayv1.Gateway{})
		gw.publication, gw.changed, gw.nodeAddressed = (*Controller).gatewayPublication, (*Controller).gatewayDependents, true
		kinds = append(kinds, gw)
		for _, r := range []struct {
			kind  string
			res   schema.GroupVersionResource
			obj   runtime.Object
			route func(any) (source.Route, bool)
		}{
			{source.KindHTTPRoute, kubeclient.HTTPRoutes, &gatewayv1.HTTPRoute{}, routeOf(source.HTTPRoute)},
			{source.KindGRPCRoute, kubeclient.GRPCRoutes, &gatewayv1.GRPCRoute{}, routeOf(source.GRPCRoute)},
			{source.KindTLSRoute, kubeclient.TLSRoutes, &gatewayv1.TLSRoute{}, routeOf(source.TLSRoute)},
		} {
			if !sc.Kind(r.kind) {
				continue
			}
			k := late(r.kind, r.res, r.obj)
			k.indexers = cache.Indexers{byParent: parentIndex(r.route)}
			k.publication, k.nodeAddressed = routePublication(r.kind, r.route), true
			kinds = append(kinds, k)
		}
	}
	if cfg.DNSEndpoint && sc.Kind(source.KindDNSEndpoint) {
		d := late(source.KindDNSEndpoint, kubeclient.DNSEndpoints, &externaldns.DNSEndpoint{})
		d.publication = (*Controller).dnsEndpointPublication
		d.statusOf, d.writeStatus = (*Controller).dnsEndpointStatusOf, (*Controller).syncDNSEndpointStatus
		kinds = append(kinds, d)
	}
	for _, k := range kinds {
		k.indexer = k.informers.indexer()
	}
	return kinds
}

// kindOf returns the entry of a kind; nil for a kind not published.
func (c *Controller) kindOf(kind string) *objectKind {
	return findKind(c.caches.kinds, kind)
}

func findKind(kinds []*objectKind, kind string) *objectKind {
	for _, k := range kinds {
		if k.kind == kind {
			return k
		}
	}
	return nil
}

// servicePublication is what a cached Service publishes.
func (c *Controller) servicePublication(obj any) (*source.Publication, any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil, fmt.Errorf("cached Service is a %T: %w", obj, errPermanent)
	}
	// A Service being deleted publishes nothing; it is returned, for
	// skylb's finalizer holds it until its records are gone.
	if svc.DeletionTimestamp != nil {
		return nil, svc, nil
	}
	// A Service outside the scope, such as the ingress controller's in a
	// namespace not published, is read but not published.
	if !c.cfg.Scope.Object(source.KindService, svc) {
		return nil, nil, nil
	}
	return c.caches.builder.Service(svc), svc, nil
}

// ingressPublication is what a cached Ingress publishes.
func (c *Controller) ingressPublication(obj any) (*source.Publication, any, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok {
		return nil, nil, fmt.Errorf("cached Ingress is a %T: %w", obj, errPermanent)
	}
	if !c.cfg.Scope.Ingress(ing) {
		return nil, nil, nil
	}
	return c.caches.builder.Ingress(ing), nil, nil
}

// serviceDependents queues what depends on a Service besides itself: what
// serviceChanged names, and the Services whose ports it shares.
func (c *Controller) serviceDependents(name cache.ObjectName, obj, old, cur any) {
	c.serviceChanged(obj, name)
	c.portsChanged(old, cur)
}

// cachedKeys returns the keys of a kind's cached objects.
func (k *objectKind) cachedKeys() []skydns.ObjectKey {
	objs := k.indexer.List()
	out := make([]skydns.ObjectKey, 0, len(objs))
	for _, obj := range objs {
		if key, ok := k.keyOf(obj); ok {
			out = append(out, key)
		}
	}
	return out
}

// keyOf returns the key of an object of the kind, or of its tombstone.
func (k *objectKind) keyOf(obj any) (skydns.ObjectKey, bool) {
	name, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		return skydns.ObjectKey{}, false
	}
	return skydns.ObjectKey{Kind: k.kind, Namespace: name.Namespace, Name: name.Name}, true
}

// enqueueAll enqueues every cached object of a kind that it selects.
func (c *Controller) enqueueAll(kind string) {
	k := c.kindOf(kind)
	if k == nil {
		return
	}
	for _, obj := range k.indexer.List() {
		if key, ok := k.keyOf(obj); ok && (k.selected == nil || k.selected(obj)) {
			c.enqueue(key)
		}
	}
}
