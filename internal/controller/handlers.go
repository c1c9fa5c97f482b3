package controller

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// The informers' event handlers: what a change of each kind of object queues.

// handle enqueues the objects of a kind's informers as they change, with
// what depends on them (nil: nothing), and returns whether the handler has
// been told of every object the informers listed.
func (c *Controller) handle(inf informerSet, kind string, depends dependents) cache.InformerSynced {
	changed := func(old, cur any) {
		obj := cur
		if obj == nil {
			obj = old
		}
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		c.enqueueCached(kind, key)
		if depends != nil {
			depends(c, key, obj, old, cur)
		}
	}
	synced, err := inf.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) { changed(obj, nil) },
	})
	if err != nil {
		panic(fmt.Sprintf("add %s event handler: %v", kind, err))
	}
	return synced
}

// serviceChanged enqueues what depends on a Service ("namespace/name")
// besides the Service itself: the Ingresses when it is the ingress
// controller's, and the Gateways it implements with their routes.
func (c *Controller) serviceChanged(obj any, key string) {
	if key == c.caches.builder.IngressService() {
		c.enqueueAll(source.KindIngress)
	}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	svc, _ := obj.(*corev1.Service)
	c.serviceChangedForGateways(svc, key)
}

// handleSlices enqueues the Service of each EndpointSlice that changes.
func (c *Controller) handleSlices(inf informerSet) {
	enqueue := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			key := s.Namespace + "/" + name
			c.enqueueCached(source.KindService, key)
			svc, _ := c.caches.services.Services(s.Namespace).Get(name)
			c.serviceChanged(svc, key)
		}
	}
	synced, err := inf.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		panic(fmt.Sprintf("add EndpointSlice event handler: %v", err))
	}
	c.caches.synced = append(c.caches.synced, synced)
}

// handleNodes enqueues every Service when a node changes in a way that changes
// the addresses published for it: readiness, addresses, exclusion, deletion.
func (c *Controller) handleNodes(inf informerSet) {
	changed := func() {
		select {
		case c.cfg.NodesChanged <- struct{}{}:
		default:
		}
	}
	all := func(any) {
		c.enqueueAddressUsers()
		changed()
	}
	synced, err := inf.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: all,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			// Not its status's heartbeats: a node's place changes rarely.
			if !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels) || !slices.Equal(o.Spec.PodCIDRs, n.Spec.PodCIDRs) ||
				!slices.Equal(o.Status.Addresses, n.Status.Addresses) {
				changed()
			}
			if !ok1 || !ok2 || source.NodeUsable(o) != source.NodeUsable(n) ||
				!slices.Equal(source.NodeAddresses(o, c.cfg.Source.NodeAddressTypes), source.NodeAddresses(n, c.cfg.Source.NodeAddressTypes)) {
				c.enqueueAddressUsers()
			}
		},
		DeleteFunc: all,
	})
	if err != nil {
		panic(fmt.Sprintf("add Node event handler: %v", err))
	}
	c.caches.synced = append(c.caches.synced, synced)
}

// enqueueAddressUsers enqueues every object whose addresses may come from
// nodes: the Services, and the Gateways and routes that take a Service's.
func (c *Controller) enqueueAddressUsers() {
	c.enqueueAll(source.KindService)
	for _, key := range c.gatewayKeys() {
		c.enqueue(key)
	}
}

// enqueue adds a key to the queue and remembers when its change was first seen.
func (c *Controller) enqueue(key string) {
	if !c.phase.started.Load() {
		return
	}
	c.observed.see(key)
	c.queue.Add(key)
}

// enqueueObject enqueues the object of a kind, namespace and name.
func (c *Controller) enqueueObject(kind, namespace, name string) {
	c.enqueue(skydns.ObjectKey{Kind: kind, Namespace: namespace, Name: name}.String())
}

// enqueueCached enqueues the object of a kind under its key in an informer's
// cache ("namespace/name").
func (c *Controller) enqueueCached(kind, cacheKey string) {
	if key, ok := objectKeyOf(kind, cacheKey); ok {
		c.enqueue(key)
	}
}

// observations remember, by key, when a change was first seen, until the key
// is synced.
type observations struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// see remembers now for key, unless a change to it is remembered already.
func (o *observations) see(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[key]; ok {
		return
	}
	if o.seen == nil {
		o.seen = make(map[string]time.Time)
	}
	o.seen[key] = time.Now()
}

// take returns and forgets when a change to key was first seen; zero if none is remembered.
func (o *observations) take(key string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.seen[key]
	delete(o.seen, key)
	return t
}
