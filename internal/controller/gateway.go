package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/source"
)

// byParent indexes routes by the Gateways ("namespace/name") they name as parents.
const byParent = "parent"

// gatewayKind is one Gateway API resource skylb reads, with its informer.
// The informer runs only once discovery says the resource is served.
type gatewayKind struct {
	kind     string // source kind: source.KindGateway, source.KindHTTPRoute, ...
	resource string // plural resource name in discovery
	// informers watch every namespace, or each watched namespace; indexer
	// reads their caches as one.
	informers informerSet
	indexer   cache.Indexer
	// route converts a cached route to what the Builder reads; nil for Gateways.
	route   func(any) (source.Route, bool)
	started atomic.Bool
}

// gatewayState holds the Gateway API informers. They are created at start,
// so that the Builder has its Gateway lister, and run when their CRDs are
// served: a cluster without the Gateway API costs nothing, and one that
// installs it later is picked up without a restart.
type gatewayState struct {
	api   API
	crds  metadata.Interface // nil: discovery every poll only
	poll  time.Duration
	kinds []*gatewayKind // the Gateway first
	// kick is signalled when a Gateway API CRD is created or changes.
	kick chan struct{}
	// running joins the informers started as their resources are served.
	running sync.WaitGroup
}

func newGatewayState(f informerMaker, crds metadata.Interface, poll time.Duration, sc scope.Scope) *gatewayState {
	if !sc.GatewayAPI() {
		return nil
	}
	if poll <= 0 {
		poll = time.Minute
	}
	set := func(r schema.GroupVersionResource, obj runtime.Object) informerSet {
		return f.of(r, obj, sc.Namespaces)
	}
	// The Gateways are read whenever a kind of the Gateway API is
	// published: routes take their addresses.
	g := &gatewayState{api: f.api, crds: crds, poll: poll, kick: make(chan struct{}, 1), kinds: []*gatewayKind{
		{kind: source.KindGateway, resource: kubeclient.Gateways.Resource, informers: set(kubeclient.Gateways, &gatewayv1.Gateway{})},
	}}
	routes := []*gatewayKind{
		{kind: source.KindHTTPRoute, resource: kubeclient.HTTPRoutes.Resource, informers: set(kubeclient.HTTPRoutes, &gatewayv1.HTTPRoute{}), route: func(o any) (source.Route, bool) {
			r, ok := o.(*gatewayv1.HTTPRoute)
			if !ok {
				return source.Route{}, false
			}
			return source.HTTPRoute(r), true
		}},
		{kind: source.KindGRPCRoute, resource: kubeclient.GRPCRoutes.Resource, informers: set(kubeclient.GRPCRoutes, &gatewayv1.GRPCRoute{}), route: func(o any) (source.Route, bool) {
			r, ok := o.(*gatewayv1.GRPCRoute)
			if !ok {
				return source.Route{}, false
			}
			return source.GRPCRoute(r), true
		}},
		{kind: source.KindTLSRoute, resource: kubeclient.TLSRoutes.Resource, informers: set(kubeclient.TLSRoutes, &gatewayv1.TLSRoute{}), route: func(o any) (source.Route, bool) {
			r, ok := o.(*gatewayv1.TLSRoute)
			if !ok {
				return source.Route{}, false
			}
			return source.TLSRoute(r), true
		}},
	}
	for _, k := range routes {
		if sc.Kind(k.kind) {
			g.kinds = append(g.kinds, k)
		}
	}
	for _, k := range g.kinds {
		k.indexer = k.informers.indexer()
	}
	return g
}

// gatewayLister returns the lister of the Gateways the Builder reads: with
// --gateway-class, those of other GatewayClasses are not found, so that the
// routes attached to them take neither their names nor their addresses.
func (g *gatewayState) gatewayLister(sc scope.Scope) gatewaylisters.GatewayLister {
	l := gatewaylisters.NewGatewayLister(g.kinds[0].indexer)
	if len(sc.GatewayClasses) == 0 {
		return l
	}
	return classLister{l, sc}
}

// classLister is a Gateway lister that finds only the Gateways of the
// scope's GatewayClasses.
type classLister struct {
	gatewaylisters.GatewayLister
	sc scope.Scope
}

func (l classLister) List(sel labels.Selector) ([]*gatewayv1.Gateway, error) {
	all, err := l.GatewayLister.List(sel)
	return inClass(l.sc, all), err
}

// inClass returns the Gateways of the scope's GatewayClasses among gws.
func inClass(sc scope.Scope, gws []*gatewayv1.Gateway) []*gatewayv1.Gateway {
	return slices.DeleteFunc(gws, func(gw *gatewayv1.Gateway) bool { return !sc.GatewayClass(string(gw.Spec.GatewayClassName)) })
}

func (l classLister) Gateways(ns string) gatewaylisters.GatewayNamespaceLister {
	return classNamespaceLister{l.GatewayLister.Gateways(ns), l.sc}
}

type classNamespaceLister struct {
	gatewaylisters.GatewayNamespaceLister
	sc scope.Scope
}

func (l classNamespaceLister) List(sel labels.Selector) ([]*gatewayv1.Gateway, error) {
	all, err := l.GatewayNamespaceLister.List(sel)
	return inClass(l.sc, all), err
}

func (l classNamespaceLister) Get(name string) (*gatewayv1.Gateway, error) {
	gw, err := l.GatewayNamespaceLister.Get(name)
	if err == nil && !l.sc.GatewayClass(string(gw.Spec.GatewayClassName)) {
		return nil, apierrors.NewNotFound(gatewayv1.Resource("gateways"), name)
	}
	return gw, err
}

// kindOf returns the gatewayKind of a source kind, or nil.
func (g *gatewayState) kindOf(kind string) *gatewayKind {
	if g == nil {
		return nil
	}
	for _, k := range g.kinds {
		if k.kind == kind {
			return k
		}
	}
	return nil
}

// setupGateway adds the event handlers and the parent index to the Gateway
// API informers, before any of them runs.
func (c *Controller) setupGateway() {
	for _, k := range c.gw.kinds {
		if k.route == nil {
			c.handleGateways(k.informers)
			continue
		}
		if err := k.informers.addIndexers(cache.Indexers{byParent: parentIndex(k.route)}); err != nil {
			panic(fmt.Sprintf("add %s index: %v", k.kind, err))
		}
		// Not in c.caches.synced: these informers run only once discovery finds
		// their resources (see startServed).
		c.handle(k.informers, k.kind, nil)
	}
}

// parentIndex returns the index function of routes by parent Gateway.
func parentIndex(route func(any) (source.Route, bool)) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		r, ok := route(obj)
		if !ok {
			return nil, nil
		}
		var out []string
		for _, ref := range r.ParentRefs {
			if ref.Group != nil && *ref.Group != source.GatewayGroup || ref.Kind != nil && *ref.Kind != "Gateway" {
				continue
			}
			ns := r.Meta.Namespace
			if ref.Namespace != nil && *ref.Namespace != "" {
				ns = string(*ref.Namespace)
			}
			if key := ns + "/" + string(ref.Name); !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
		return out, nil
	}
}

// handleGateways enqueues a Gateway that changes and the routes attached to it.
func (c *Controller) handleGateways(inf informerSet) {
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		c.enqueueGateway(key)
	}
	if _, err := inf.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		panic(fmt.Sprintf("add Gateway event handler: %v", err))
	}
}

// enqueueGateway enqueues a Gateway ("namespace/name") and its routes.
func (c *Controller) enqueueGateway(key string) {
	if c.gw == nil {
		return
	}
	c.enqueueCached(source.KindGateway, key)
	for _, k := range c.gw.kinds {
		if k.route == nil {
			continue
		}
		routes, _ := k.indexer.IndexKeys(byParent, key)
		for _, r := range routes {
			c.enqueueCached(k.kind, r)
		}
	}
}

// serviceChangedForGateways enqueues the Gateways a Service may implement:
// the one named by its label, and those whose annotation names it.
func (c *Controller) serviceChangedForGateways(svc *corev1.Service, key string) {
	if c.gw == nil || !c.gw.kinds[0].started.Load() {
		return
	}
	if svc != nil {
		if name := svc.Labels[source.LabelGatewayName]; name != "" {
			c.enqueueGateway(svc.Namespace + "/" + name)
		}
	}
	for _, obj := range c.gw.kinds[0].indexer.List() {
		gw, ok := obj.(*gatewayv1.Gateway)
		if !ok {
			continue
		}
		v := gw.Annotations[source.AnnotationGatewayService]
		if v != "" && (v == key || gw.Namespace+"/"+v == key) {
			c.enqueueGateway(gw.Namespace + "/" + gw.Name)
		}
	}
}

// gatewayPublication computes the publication of a Gateway or a route; nil
// when it is gone.
func (c *Controller) gatewayPublication(k *gatewayKind, key string) (*source.Publication, error) {
	obj, exists, err := k.indexer.GetByKey(key)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, nil
	}
	sc := c.cfg.Scope
	if k.route == nil {
		gw, ok := obj.(*gatewayv1.Gateway)
		if !ok {
			return nil, fmt.Errorf("cached %s is a %T: %w", key, obj, errPermanent)
		}
		if !sc.Object(source.KindGateway, gw) || !sc.GatewayClass(string(gw.Spec.GatewayClassName)) {
			return nil, nil
		}
		return c.caches.builder.Gateway(gw), nil
	}
	r, ok := k.route(obj)
	if !ok {
		return nil, fmt.Errorf("cached %s is a %T: %w", key, obj, errPermanent)
	}
	if !sc.Object(k.kind, r.Meta) || !c.attachedInClass(k, obj) {
		return nil, nil
	}
	return c.caches.builder.Route(r), nil
}

// attachedInClass reports whether a cached route names a Gateway of the
// scope's GatewayClasses among its parents; any route does without
// --gateway-class.
func (c *Controller) attachedInClass(k *gatewayKind, obj any) bool {
	if len(c.cfg.Scope.GatewayClasses) == 0 {
		return true
	}
	parents, _ := parentIndex(k.route)(obj)
	for _, key := range parents {
		got, ok, _ := c.gw.kinds[0].indexer.GetByKey(key)
		if gw, isGW := got.(*gatewayv1.Gateway); ok && isGW && c.cfg.Scope.GatewayClass(string(gw.Spec.GatewayClassName)) {
			return true
		}
	}
	return false
}

// gatewayKeys returns the keys of every cached Gateway API object.
func (c *Controller) gatewayKeys() []string {
	if c.gw == nil {
		return nil
	}
	var out []string
	for _, k := range c.gw.kinds {
		for _, key := range k.indexer.ListKeys() {
			if s, ok := objectKeyOf(k.kind, key); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// servedGatewayResources asks discovery which Gateway API resources the API
// server serves at v1. A group version it does not know is none served.
func (g *gatewayState) servedGatewayResources(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return g.api.ServedResources(ctx, gatewayv1.SchemeGroupVersion)
}

// startServed runs the informers of the served resources not yet running and
// returns their HasSynced functions.
func (c *Controller) startServed(ctx context.Context) ([]cache.InformerSynced, error) {
	served, err := c.gw.servedGatewayResources(ctx)
	if err != nil {
		return nil, err
	}
	var synced []cache.InformerSynced
	for _, k := range c.gw.kinds {
		if !served[k.resource] || !k.started.CompareAndSwap(false, true) {
			continue
		}
		c.cfg.Log.WithField("resource", k.resource+"."+gatewayv1.GroupName).Info("Gateway API resource served; watching it")
		synced = append(synced, k.informers.run(ctx, &c.gw.running))
	}
	return synced, nil
}

// startGatewayAtStart starts the informers of the Gateway API resources served
// now, so that the first full pass includes them. It retries discovery while
// it fails for another reason than the group not being served: publishing
// without the routes would delete their records until the next pass.
func (c *Controller) startGatewayAtStart(ctx context.Context) []cache.InformerSynced {
	if c.gw == nil {
		return nil
	}
	var synced []cache.InformerSynced
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := c.startServed(ctx)
		if err != nil {
			c.cfg.Log.WithError(err).Warn("Gateway API discovery failed; retrying")
			return false, nil
		}
		synced = s
		return true, nil
	})
	return synced
}

// runGatewayDiscovery starts the informers of Gateway API resources served
// later than the start: it asks discovery every poll interval and, when a
// Gateway API CRD comes or changes (watchGatewayCRDs), every half second
// until what it serves is being watched, for at most crdSettle. Their
// objects come in as informer events and are synced like any change.
func (c *Controller) runGatewayDiscovery(ctx context.Context) {
	if c.gw == nil {
		return
	}
	c.watchGatewayCRDs(ctx)
	tick := time.NewTicker(c.gw.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := c.startServed(ctx); err != nil {
				c.cfg.Log.WithError(err).Debug("Gateway API discovery failed")
			}
		case <-c.gw.kick:
			// A new CRD is served once the API server has established it.
			// The informers run with ctx, not with the poll's shorter one.
			_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, crdSettle, true, func(context.Context) (bool, error) {
				if _, err := c.startServed(ctx); err != nil {
					c.cfg.Log.WithError(err).Debug("Gateway API discovery failed")
				}
				return c.gw.allStarted(), nil
			})
		}
	}
}

// crdSettle bounds how long discovery is asked again after a Gateway API CRD
// changed; a CRD the API server has not established by then waits for the
// next poll.
const crdSettle = 30 * time.Second

// allStarted reports whether every Gateway API resource is being watched.
func (g *gatewayState) allStarted() bool {
	for _, k := range g.kinds {
		if !k.started.Load() {
			return false
		}
	}
	return true
}

// crdResource is what watchGatewayCRDs watches, as metadata only.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// watchGatewayCRDs watches the metadata of CustomResourceDefinitions and
// kicks discovery when one of the Gateway API group is created or changes.
// Without the permission to list them (RBAC of an older release) it says so
// once and leaves discovery to the poll.
func (c *Controller) watchGatewayCRDs(ctx context.Context) {
	if c.gw.crds == nil || c.gw.allStarted() {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := c.gw.crds.Resource(crdResource).List(lctx, metav1.ListOptions{Limit: 1})
	cancel()
	if err != nil {
		c.cfg.Log.WithError(err).WithField("every", c.gw.poll).Warn("cannot list CustomResourceDefinitions: Gateway API CRDs installed later are found by the discovery poll")
		return
	}
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.gw.crds.Resource(crdResource).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.gw.crds.Resource(crdResource).Watch(ctx, o)
		},
	}, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	kick := func(obj any) {
		if m, ok := obj.(metav1.Object); ok && strings.HasSuffix(m.GetName(), "."+gatewayv1.GroupName) && !c.gw.allStarted() {
			select {
			case c.gw.kick <- struct{}{}:
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
	c.gw.running.Go(func() { inf.RunWithContext(ctx) })
}
