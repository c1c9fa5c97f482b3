package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// byPort indexes the Services skylb implements with the nodes source by
// their ports (source.Builder.PortKeys): the Services that share a port
// there share it at every node's address, and only the oldest is served.
const byPort = "port"

// portIndex is the index function of byPort: a Service outside the scope is
// none of skylb's.
func (c *Controller) portIndex(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || !c.cfg.Scope.Object(source.KindService, svc) {
		return nil, nil
	}
	return c.caches.builder.PortKeys(svc), nil
}

// portUsers returns source.Listers.PortUsers over the Services' indexer.
func portUsers(ix cache.Indexer) func(key string) []*corev1.Service {
	return func(key string) []*corev1.Service {
		objs, err := ix.ByIndex(byPort, key)
		if err != nil {
			return nil
		}
		out := make([]*corev1.Service, 0, len(objs))
		for _, o := range objs {
			if svc, ok := o.(*corev1.Service); ok {
				out = append(out, svc)
			}
		}
		return out
	}
}

// portsChanged enqueues the Services that share a port with a Service whose
// ports at the nodes' addresses changed (old and cur, nil when it was
// created or deleted): whether they are refused may have changed with it.
// Until the caches have synced, the first full pass, which syncs every
// Service after them, is left to.
func (c *Controller) portsChanged(old, cur any) {
	if !c.phase.cachesSynced.Load() {
		return
	}
	keysOf := func(obj any) []string {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return nil
		}
		keys, _ := c.portIndex(svc)
		return keys
	}
	before, after := keysOf(old), keysOf(cur)
	if old != nil && cur != nil && slices.Equal(before, after) {
		return
	}
	// Whether a Service is refused depends on whether the older Services
	// sharing its ports are: the change runs along shared ports, as far as
	// the builder follows it.
	users := portUsers(c.caches.informers.services.indexer())
	keys, seen := append(before, after...), map[string]bool{}
	for range source.PortConflictDepth + 1 {
		var next []string
		for _, key := range keys {
			if seen[key] {
				continue
			}
			seen[key] = true
			for _, svc := range users(key) {
				c.enqueue(skydns.ObjectKey{Kind: source.KindService, Namespace: svc.Namespace, Name: svc.Name})
				k, _ := c.portIndex(svc)
				next = append(next, k...)
			}
		}
		if keys = next; len(keys) == 0 {
			return
		}
	}
}
