package controller

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// servedResource is the resource of a kind whose informers run once the API
// server serves it: a CRD's, which may be installed after skylb starts.
type servedResource struct {
	schema.GroupVersionResource
	started atomic.Bool
}

// discovery starts the informers of the kinds of CRDs (objectKind.served)
// as their resources come to be served. Their informers are created with
// the others, so that the Builder has their listers, and run when served:
// a cluster without the CRDs costs nothing, and one that installs them
// later is picked up without a restart.
type discovery struct {
	api  API
	crds metadata.Interface // nil: discovery every poll only
	poll time.Duration
	// kinds are those of the controller's kinds that wait for their
	// resources.
	kinds []*objectKind
	// kick is signalled when a CRD of one of their groups is created or
	// changes.
	kick chan struct{}
	// running joins the informers started as their resources are served.
	running sync.WaitGroup
}

// newDiscovery returns the discovery of the kinds that wait for their
// resources; nil when none does.
func newDiscovery(api API, crds metadata.Interface, poll time.Duration, kinds []*objectKind) *discovery {
	d := &discovery{api: api, crds: crds, poll: poll, kick: make(chan struct{}, 1)}
	for _, k := range kinds {
		if k.served != nil {
			d.kinds = append(d.kinds, k)
		}
	}
	if len(d.kinds) == 0 {
		return nil
	}
	if d.poll <= 0 {
		d.poll = time.Minute
	}
	return d
}

// served asks discovery which resources of the group versions of the kinds
// the API server serves. A group version it does not know is none served.
func (d *discovery) served(ctx context.Context) (map[schema.GroupVersionResource]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := make(map[schema.GroupVersionResource]bool)
	asked := make(map[schema.GroupVersion]bool)
	for _, k := range d.kinds {
		gv := k.served.GroupVersion()
		if asked[gv] {
			continue
		}
		asked[gv] = true
		res, err := d.api.ServedResources(ctx, gv)
		if err != nil {
			return nil, err
		}
		for r, ok := range res {
			out[gv.WithResource(r)] = ok
		}
	}
	return out, nil
}

// startServed runs the informers of the served resources not yet running and
// returns their HasSynced functions.
func (c *Controller) startServed(ctx context.Context) ([]cache.InformerSynced, error) {
	served, err := c.late.served(ctx)
	if err != nil {
		return nil, err
	}
	var synced []cache.InformerSynced
	for _, k := range c.late.kinds {
		if !served[k.served.GroupVersionResource] || !k.served.started.CompareAndSwap(false, true) {
			continue
		}
		c.cfg.Log.WithField("resource", k.served.GroupResource().String()).Info("resource served; watching it")
		synced = append(synced, k.informers.run(ctx, &c.late.running))
	}
	return synced, nil
}

// startServedAtStart starts the informers of the resources served now, so
// that the first full pass includes them. It retries discovery while it
// fails for another reason than a group not being served: publishing
// without their objects would delete their records until the next pass.
func (c *Controller) startServedAtStart(ctx context.Context) []cache.InformerSynced {
	if c.late == nil {
		return nil
	}
	var synced []cache.InformerSynced
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := c.startServed(ctx)
		if err != nil {
			c.cfg.Log.WithError(err).Warn("API discovery failed; retrying")
			return false, nil
		}
		synced = s
		return true, nil
	})
	return synced
}

// runDiscovery starts the informers of resources served later than the
// start: it asks discovery every poll interval and, when a CRD of their
// groups comes or changes (watchCRDs), every half second until what it
// serves is being watched, for at most crdSettle. Their objects come in as
// informer events and are synced like any change.
func (c *Controller) runDiscovery(ctx context.Context) {
	if c.late == nil {
		return
	}
	c.watchCRDs(ctx)
	tick := time.NewTicker(c.late.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := c.startServed(ctx); err != nil {
				c.cfg.Log.WithError(err).Debug("API discovery failed")
			}
		case <-c.late.kick:
			// A new CRD is served once the API server has established it.
			// The informers run with ctx, not with the poll's shorter one.
			_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, crdSettle, true, func(context.Context) (bool, error) {
				if _, err := c.startServed(ctx); err != nil {
					c.cfg.Log.WithError(err).Debug("API discovery failed")
				}
				return c.late.allStarted(), nil
			})
		}
	}
}

// crdSettle bounds how long discovery is asked again after a CRD changed; a
// CRD the API server has not established by then waits for the next poll.
const crdSettle = 30 * time.Second

// allStarted reports whether every resource waited for is being watched.
func (d *discovery) allStarted() bool {
	for _, k := range d.kinds {
		if !k.served.started.Load() {
			return false
		}
	}
	return true
}

// awaited reports whether a CRD (by name, "<plural>.<group>") is of a group
// whose resources are waited for.
func (d *discovery) awaited(crd string) bool {
	for _, k := range d.kinds {
		if !k.served.started.Load() && strings.HasSuffix(crd, "."+k.served.Group) {
			return true
		}
	}
	return false
}

// crdResource is what watchCRDs watches, as metadata only.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// watchCRDs watches the metadata of CustomResourceDefinitions and kicks
// discovery when one of a group waited for is created or changes. Without
// the permission to list them (RBAC of an older release) it says so once
// and leaves discovery to the poll.
func (c *Controller) watchCRDs(ctx context.Context) {
	if c.late.crds == nil || c.late.allStarted() {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := c.late.crds.Resource(crdResource).List(lctx, metav1.ListOptions{Limit: 1})
	cancel()
	if err != nil {
		c.cfg.Log.WithError(err).WithField("every", c.late.poll).Warn("cannot list CustomResourceDefinitions: CRDs installed later are found by the discovery poll")
		return
	}
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.late.crds.Resource(crdResource).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.late.crds.Resource(crdResource).Watch(ctx, o)
		},
	}, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	kick := func(obj any) {
		if m, ok := obj.(metav1.Object); ok && c.late.awaited(m.GetName()) {
			select {
			case c.late.kick <- struct{}{}:
			default:
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    kick,
		UpdateFunc: func(_, obj any) { kick(obj) },
	}); err != nil {
		c.cfg.Log.WithError(err).Warn("watch CustomResourceDefinitions")
		return
	}
	c.late.running.Go(func() { inf.RunWithContext(ctx) })
}
