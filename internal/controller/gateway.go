package controller

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// The Gateway API's kinds: the Gateways, read for their own names and for
// the addresses their routes take, and the routes (see kindsOf).

// byParent indexes routes by the Gateways ("namespace/name") they name as parents.
const byParent = "parent"

// gatewayLister returns the lister of the Gateways the Builder reads: with
// --gateway-class, those of other GatewayClasses are not found, so that the
// routes attached to them take neither their names nor their addresses.
func gatewayLister(gateways cache.Indexer, sc scope.Scope) gatewaylisters.GatewayLister {
	l := gatewaylisters.NewGatewayLister(gateways)
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

// routeOf returns the conversion of a cached route of type T to what the
// Builder reads.
func routeOf[T any](conv func(T) source.Route) func(any) (source.Route, bool) {
	return func(obj any) (source.Route, bool) {
		r, ok := obj.(T)
		if !ok {
			return source.Route{}, false
		}
		return conv(r), true
	}
}

// gatewayDependents queues the routes attached to a Gateway that changed.
func (c *Controller) gatewayDependents(gw cache.ObjectName, _, _, _ any) {
	for _, k := range c.caches.kinds {
		if k.indexers[byParent] == nil {
			continue
		}
		routes, _ := k.indexer.ByIndex(byParent, gw.String())
		for _, r := range routes {
			if key, ok := k.keyOf(r); ok {
				c.enqueue(key)
			}
		}
	}
}

// enqueueGateway enqueues a Gateway and the routes attached to it.
func (c *Controller) enqueueGateway(gw cache.ObjectName) {
	k := c.kindOf(source.KindGateway)
	if k == nil {
		return
	}
	c.enqueue(skydns.ObjectKey{Kind: k.kind, Namespace: gw.Namespace, Name: gw.Name})
	c.gatewayDependents(gw, nil, nil, nil)
}

// serviceChangedForGateways enqueues the Gateways a Service may implement:
// the one named by its label, and those whose annotation names it.
func (c *Controller) serviceChangedForGateways(svc *corev1.Service, name cache.ObjectName) {
	k := c.kindOf(source.KindGateway)
	if k == nil || !k.served.started.Load() {
		return
	}
	if svc != nil {
		if gw := svc.Labels[source.LabelGatewayName]; gw != "" {
			c.enqueueGateway(cache.NewObjectName(svc.Namespace, gw))
		}
	}
	for _, obj := range k.indexer.List() {
		gw, ok := obj.(*gatewayv1.Gateway)
		if !ok {
			continue
		}
		v := gw.Annotations[source.AnnotationGatewayService]
		if v != "" && (v == name.String() || gw.Namespace == name.Namespace && v == name.Name) {
			c.enqueueGateway(cache.NewObjectName(gw.Namespace, gw.Name))
		}
	}
}

// gatewayPublication is what a cached Gateway publishes.
func (c *Controller) gatewayPublication(obj any) (*source.Publication, any, error) {
	gw, ok := obj.(*gatewayv1.Gateway)
	if !ok {
		return nil, nil, fmt.Errorf("cached Gateway is a %T: %w", obj, errPermanent)
	}
	sc := c.cfg.Scope
	if !sc.Object(source.KindGateway, gw) || !sc.GatewayClass(string(gw.Spec.GatewayClassName)) {
		return nil, nil, nil
	}
	return c.caches.builder.Gateway(gw), nil, nil
}

// routePublication returns what a cached route of a kind publishes, read
// through route.
func routePublication(kind string, route func(any) (source.Route, bool)) func(*Controller, any) (*source.Publication, any, error) {
	return func(c *Controller, obj any) (*source.Publication, any, error) {
		r, ok := route(obj)
		if !ok {
			return nil, nil, fmt.Errorf("cached %s is a %T: %w", kind, obj, errPermanent)
		}
		if !c.cfg.Scope.Object(kind, r.Meta) || !c.attachedInClass(route, obj) {
			return nil, nil, nil
		}
		return c.caches.builder.Route(r), nil, nil
	}
}

// attachedInClass reports whether a cached route names a Gateway of the
// scope's GatewayClasses among its parents; any route does without
// --gateway-class.
func (c *Controller) attachedInClass(route func(any) (source.Route, bool), obj any) bool {
	if len(c.cfg.Scope.GatewayClasses) == 0 {
		return true
	}
	gateways := c.kindOf(source.KindGateway)
	parents, _ := parentIndex(route)(obj)
	for _, key := range parents {
		got, ok, _ := gateways.indexer.GetByKey(key)
		if gw, isGW := got.(*gatewayv1.Gateway); ok && isGW && c.cfg.Scope.GatewayClass(string(gw.Spec.GatewayClassName)) {
			return true
		}
	}
	return false
}
