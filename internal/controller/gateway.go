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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/skylb/skylb/internal/source"
)

// byParent indexes routes by the Gateways ("namespace/name") they name as parents.
const byParent = "parent"

// gatewayKind is one Gateway API resource skylb reads, with its informer.
// The informer runs only once discovery says the resource is served.
type gatewayKind struct {
	kind     string // source kind: source.KindGateway, source.KindHTTPRoute, ...
	resource string // plural resource name in discovery
	informer cache.SharedIndexInformer
	// route converts a cached route to what the Builder reads; nil for Gateways.
	route   func(any) (source.Route, bool)
	started atomic.Bool
}

// gatewayState holds the Gateway API informers. They are created at start,
// so that the Builder has its Gateway lister, and run when their CRDs are
// served: a cluster without the Gateway API costs nothing, and one that
// installs it later is picked up without a restart.
type gatewayState struct {
	client gatewayclient.Interface
	crds   metadata.Interface // nil: discovery every poll only
	poll   time.Duration
	kinds  []*gatewayKind // the Gateway first
	// kick is signalled when a Gateway API CRD is created or changes.
	kick chan struct{}
	// running joins the informers started as their resources are served.
	running sync.WaitGroup
}

func newGatewayState(client gatewayclient.Interface, crds metadata.Interface, poll time.Duration, transform cache.TransformFunc) *gatewayState {
	if client == nil {
		return nil
	}
	if poll <= 0 {
		poll = time.Minute
	}
	f := gatewayinformers.NewSharedInformerFactoryWithOptions(client, 0, gatewayinformers.WithTransform(transform))
	v1 := f.Gateway().V1()
	return &gatewayState{client: client, crds: crds, poll: poll, kick: make(chan struct{}, 1), kinds: []*gatewayKind{
		{kind: source.KindGateway, resource: "gateways", informer: v1.Gateways().Informer()},
		{kind: source.KindHTTPRoute, resource: "httproutes", informer: v1.HTTPRoutes().Informer(), route: func(o any) (source.Route, bool) {
			r, ok := o.(*gatewayv1.HTTPRoute)
			if !ok {
				return source.Route{}, false
			}
			return source.HTTPRoute(r), true
		}},
		{kind: source.KindGRPCRoute, resource: "grpcroutes", informer: v1.GRPCRoutes().Informer(), route: func(o any) (source.Route, bool) {
			r, ok := o.(*gatewayv1.GRPCRoute)
			if !ok {
				return source.Route{}, false
			}
			return source.GRPCRoute(r), true
		}},
		{kind: source.KindTLSRoute, resource: "tlsroutes", informer: v1.TLSRoutes().Informer(), route: func(o any) (source.Route, bool) {
			r, ok := o.(*gatewayv1.TLSRoute)
			if !ok {
				return source.Route{}, false
			}
			return source.TLSRoute(r), true
		}},
	}}
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
			c.handleGateways(k.informer)
			continue
		}
		if err := k.informer.AddIndexers(cache.Indexers{byParent: parentIndex(k.route)}); err != nil {
			panic(fmt.Sprintf("add %s index: %v", k.kind, err))
		}
		// Not in c.synced: these informers run only once discovery finds
		// their resources (see startServed).
		c.handle(k.informer, k.kind)
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
func (c *Controller) handleGateways(inf cache.SharedIndexInformer) {
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		c.enqueueGateway(key)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
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
	c.enqueue(source.KindGateway + "/" + key)
	for _, k := range c.gw.kinds {
		if k.route == nil {
			continue
		}
		routes, _ := k.informer.GetIndexer().IndexKeys(byParent, key)
		for _, r := range routes {
			c.enqueue(k.kind + "/" + r)
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
	for _, obj := range c.gw.kinds[0].informer.GetStore().List() {
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
	obj, exists, err := k.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, nil
	}
	if k.route == nil {
		gw, ok := obj.(*gatewayv1.Gateway)
		if !ok {
			return nil, fmt.Errorf("cached %s is a %T: %w", key, obj, errPermanent)
		}
		return c.builder.Gateway(gw), nil
	}
	r, ok := k.route(obj)
	if !ok {
		return nil, fmt.Errorf("cached %s is a %T: %w", key, obj, errPermanent)
	}
	return c.builder.Route(r), nil
}

// gatewayKeys returns the keys of every cached Gateway API object.
func (c *Controller) gatewayKeys() []string {
	if c.gw == nil {
		return nil
	}
	var out []string
	for _, k := range c.gw.kinds {
		for _, key := range k.informer.GetStore().ListKeys() {
			out = append(out, k.kind+"/"+key)
		}
	}
	return out
}

// servedGatewayResources asks discovery which Gateway API resources the API
// server serves at v1. A group version it does not know is none served.
func (g *gatewayState) servedGatewayResources() (map[string]bool, error) {
	list, err := g.client.Discovery().ServerResourcesForGroupVersion(gatewayv1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", gatewayv1.GroupVersion, err)
	}
	out := make(map[string]bool, len(list.APIResources))
	for _, r := range list.APIResources {
		out[r.Name] = true
	}
	return out, nil
}

// startServed runs the informers of the served resources not yet running and
// returns their HasSynced functions.
func (c *Controller) startServed(ctx context.Context) ([]cache.InformerSynced, error) {
	served, err := c.gw.servedGatewayResources()
	if err != nil {
		return nil, err
	}
	var synced []cache.InformerSynced
	for _, k := range c.gw.kinds {
		if !served[k.resource] || !k.started.CompareAndSwap(false, true) {
			continue
		}
		c.cfg.Log.WithField("resource", k.resource+"."+gatewayv1.GroupName).Info("Gateway API resource served; watching it")
		c.gw.running.Go(func() { k.informer.RunWithContext(ctx) })
		synced = append(synced, k.informer.HasSynced)
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
	inf := metadatainformer.NewFilteredMetadataInformer(c.gw.crds, crdResource, "", 0, cache.Indexers{}, nil).Informer()
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
