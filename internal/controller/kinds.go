package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// objectKind is a kind of object the controller publishes from informers of
// its own: the Services and the Ingresses (the Gateway API's kinds, whose
// informers start when their CRDs are served, are gatewayState's). A new
// kind is an entry of coreKinds, its informers in New, and its builder in
// package source.
type objectKind struct {
	kind      string        // source kind: source.KindService, ...
	informers informerSet   // the kind's informers
	indexer   cache.Indexer // their caches, as one
	// publication returns what a cached object publishes: nil when it
	// publishes nothing. A Service also returns itself, whose status and
	// finalizer follow its records.
	publication func(c *Controller, obj any) (*source.Publication, *corev1.Service, error)
	// selected reports whether enqueueAll takes a cached object; nil
	// takes every one.
	selected func(obj any) bool
	// changed queues what else a change of an object affects; nil:
	// nothing.
	changed dependents
}

// dependents queues what depends on an object besides itself, given the
// object (cur, or old once deleted), the object before a change (nil when
// added) and after it (nil when deleted).
type dependents func(c *Controller, key string, obj, old, cur any)

// coreKinds returns the kinds of the controller's own informers.
func coreKinds(svcs, ings informerSet) []*objectKind {
	return []*objectKind{{
		kind:        source.KindService,
		informers:   svcs,
		indexer:     svcs.indexer(),
		publication: (*Controller).servicePublication,
		// Only a LoadBalancer Service, or one whose status still holds
		// load-balancer addresses, can publish.
		selected: func(obj any) bool {
			s, ok := obj.(*corev1.Service)
			return ok && (s.Spec.Type == corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) > 0)
		},
		changed: (*Controller).serviceDependents,
	}, {
		kind:        source.KindIngress,
		informers:   ings,
		indexer:     ings.indexer(),
		publication: (*Controller).ingressPublication,
	}}
}

// kindOf returns the entry of one of coreKinds; nil for another kind.
func (c *Controller) kindOf(kind string) *objectKind {
	for _, k := range c.caches.kinds {
		if k.kind == kind {
			return k
		}
	}
	return nil
}

// servicePublication is what a cached Service publishes.
func (c *Controller) servicePublication(obj any) (*source.Publication, *corev1.Service, error) {
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
func (c *Controller) ingressPublication(obj any) (*source.Publication, *corev1.Service, error) {
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
func (c *Controller) serviceDependents(key string, obj, old, cur any) {
	c.serviceChanged(obj, key)
	c.portsChanged(old, cur)
}

// cachedKeys returns the keys of a kind's cached objects.
func (k *objectKind) cachedKeys() []string {
	var out []string
	for _, key := range k.indexer.ListKeys() {
		if s, ok := objectKeyOf(k.kind, key); ok {
			out = append(out, s)
		}
	}
	return out
}

// objectKeyOf returns the key of the object of a kind under its key in an
// informer's cache ("namespace/name").
func objectKeyOf(kind, cacheKey string) (string, bool) {
	ns, name, err := cache.SplitMetaNamespaceKey(cacheKey)
	if err != nil {
		utilruntime.HandleError(err)
		return "", false
	}
	return skydns.ObjectKey{Kind: kind, Namespace: ns, Name: name}.String(), true
}

// enqueueAll enqueues every cached object of a kind that it selects.
func (c *Controller) enqueueAll(kind string) {
	k := c.kindOf(kind)
	if k == nil {
		return
	}
	for _, obj := range k.indexer.List() {
		if m, ok := obj.(metav1.Object); ok && (k.selected == nil || k.selected(obj)) {
			c.enqueueObject(kind, m.GetNamespace(), m.GetName())
		}
	}
}
