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

// handle enqueues the objects of a kind as they change, with what depends
// on them, and returns whether the handler has been told of every object
// the kind's informers listed.
func (c *Controller) handle(k *objectKind) cache.InformerSynced {
	changed := func(old, cur any) {
		obj := cur
		if obj == nil {
			obj = old
		}
		name, err := cache.DeletionHandlingObjectToName(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		c.enqueue(skydns.ObjectKey{Kind: k.kind, Namespace: name.Namespace, Name: name.Name})
		if k.changed != nil {
			k.changed(c, name, obj, old, cur)
		}
	}
	synced, err := k.informers.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) { changed(obj, nil) },
	})
	if err != nil {
		panic(fmt.Sprintf("add %s event handler: %v", k.kind, err))
	}
	return synced
}

// serviceChanged enqueues what depends on a Service besides the Service
// itself: the Ingresses when it is the ingress controller's, and the
// Gateways it implements with their routes.
func (c *Controller) serviceChanged(obj any, name cache.ObjectName) {
	if name.String() == c.caches.builder.IngressService() {
		c.enqueueAll(source.KindIngress)
	}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	svc, _ := obj.(*corev1.Service)
	c.serviceChangedForGateways(svc, name)
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
			c.enqueue(skydns.ObjectKey{Kind: source.KindService, Namespace: s.Namespace, Name: name})
			svc, _ := c.caches.services.Services(s.Namespace).Get(name)
			c.serviceChanged(svc, cache.NewObjectName(s.Namespace, name))
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
	for _, k := range c.caches.kinds {
		if k.nodeAddressed {
			c.enqueueAll(k.kind)
		}
	}
}

// enqueue adds a key to the queue and remembers when its change was first seen.
func (c *Controller) enqueue(key skydns.ObjectKey) {
	if !c.phase.started.Load() {
		return
	}
	c.observed.see(key)
	c.queue.Add(key)
}

// observations remember, by key, when a change was first seen, until the key
// is synced.
type observations struct {
	mu   sync.Mutex
	seen map[skydns.ObjectKey]time.Time
}

// see remembers now for key, unless a change to it is remembered already.
func (o *observations) see(key skydns.ObjectKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[key]; ok {
		return
	}
	if o.seen == nil {
		o.seen = make(map[skydns.ObjectKey]time.Time)
	}
	o.seen[key] = time.Now()
}

// take returns and forgets when a change to key was first seen; zero if none is remembered.
func (o *observations) take(key skydns.ObjectKey) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.seen[key]
	delete(o.seen, key)
	return t
}
