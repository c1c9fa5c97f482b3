// Package scope says which objects one skylb publishes, and which of the
// records of its owner id it may delete: the namespaces it watches
// (--namespace), the kinds of object it publishes (--source), the labels they
// carry (--label-selector) and the classes of Ingresses and Gateways
// (--ingress-class, --gateway-class). It reads only what it is given.
//
// Namespaces and kinds bound what skylb sees: a record whose source lies
// outside them belongs to objects it cannot see, and is left alone. Labels and
// classes only choose among the objects it sees: an object that stops matching
// them leaves the scope, and its records are removed.
package scope

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// AnnotationIngressClass is the class of an Ingress before
// spec.ingressClassName, still set by many charts.
const AnnotationIngressClass = "kubernetes.io/ingress.class"

// Scope is what one skylb publishes; its zero value is everything.
type Scope struct {
	// Namespaces are the namespaces whose objects are published; empty: all
	// of them.
	Namespaces []string
	// Kinds are the kinds of object published (source.KindService, ...);
	// empty: all of them.
	Kinds []string
	// Selector, when set, is what the labels of a published object match.
	Selector labels.Selector
	// IngressClasses, when set, are the classes of the Ingresses published.
	IngressClasses []string
	// GatewayClasses, when set, are the GatewayClasses of the Gateways
	// published, and of the Gateways a published route attaches to.
	GatewayClasses []string
}

// Sources are the values of --source, each with its kind of object. The
// names of the routes and of DNSEndpoints ("crd") are external-dns's;
// "gateway" publishes the Gateways' own names (the hostnames of their
// listeners).
var Sources = []struct{ Name, Kind string }{
	{"service", source.KindService},
	{"ingress", source.KindIngress},
	{"gateway", source.KindGateway},
	{"gateway-httproute", source.KindHTTPRoute},
	{"gateway-grpcroute", source.KindGRPCRoute},
	{"gateway-tlsroute", source.KindTLSRoute},
	{"crd", source.KindDNSEndpoint},
}

// GatewayKinds are the kinds of the Gateway API's objects.
var GatewayKinds = []string{source.KindGateway, source.KindHTTPRoute, source.KindGRPCRoute, source.KindTLSRoute}

// ParseSources returns the kinds of the --source values given, sorted; none
// for none (every kind).
func ParseSources(names []string) ([]string, error) {
	var kinds []string
	for _, n := range names {
		i := slices.IndexFunc(Sources, func(s struct{ Name, Kind string }) bool { return s.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("%q is not one of %s", n, strings.Join(SourceNames(), ", "))
		}
		kinds = append(kinds, Sources[i].Kind)
	}
	slices.Sort(kinds)
	return slices.Compact(kinds), nil
}

// SourceNames returns the values --source takes.
func SourceNames() []string {
	out := make([]string, 0, len(Sources))
	for _, s := range Sources {
		out = append(out, s.Name)
	}
	return out
}

// All reports whether the scope is everything: no flag narrows it.
func (s Scope) All() bool {
	return len(s.Namespaces) == 0 && len(s.Kinds) == 0 && (s.Selector == nil || s.Selector.Empty()) &&
		len(s.IngressClasses) == 0 && len(s.GatewayClasses) == 0
}

// Namespace reports whether objects of namespace ns are published.
func (s Scope) Namespace(ns string) bool {
	if len(s.Namespaces) == 0 {
		return true
	}
	return slices.Contains(s.Namespaces, ns)
}

// Kind reports whether objects of a kind (source.KindService, ...) are published.
func (s Scope) Kind(kind string) bool {
	if len(s.Kinds) == 0 {
		return true
	}
	return slices.Contains(s.Kinds, kind)
}

// GatewayAPI reports whether any kind of the Gateway API is published.
func (s Scope) GatewayAPI() bool {
	return slices.ContainsFunc(GatewayKinds, s.Kind)
}

// Object reports whether an object of a kind is published as far as its
// kind, namespace and labels go; Ingress and GatewayClass add their class.
func (s Scope) Object(kind string, m metav1.Object) bool {
	return s.Kind(kind) && s.Namespace(m.GetNamespace()) &&
		(s.Selector == nil || s.Selector.Matches(labels.Set(m.GetLabels())))
}

// Ingress reports whether an Ingress is published: Object, and its class
// (spec.ingressClassName, else the annotation kubernetes.io/ingress.class)
// among IngressClasses when they are set. An Ingress without a class is
// published only when they are not.
func (s Scope) Ingress(ing *networkingv1.Ingress) bool {
	if !s.Object(source.KindIngress, ing) {
		return false
	}
	if len(s.IngressClasses) == 0 {
		return true
	}
	class := ing.Annotations[AnnotationIngressClass]
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	return class != "" && slices.Contains(s.IngressClasses, class)
}

// GatewayClass reports whether Gateways of a GatewayClass are published, and
// routes attached to them.
func (s Scope) GatewayClass(class string) bool {
	return len(s.GatewayClasses) == 0 || slices.Contains(s.GatewayClasses, class)
}

// Owns reports whether a record of this skylb's owner id coming from src
// ("service/<namespace>/<name>", see source.Publication) is this skylb's to
// keep and delete: its kind and namespace are in the scope. A record of
// another source (the zones' own records) is always. Labels and classes do
// not matter here: the object is seen, and if it does not match them its
// records go.
func (s Scope) Owns(src string) bool {
	k, ok := skydns.ParseObjectKey(src)
	switch {
	case !isObjectKind(k.Kind):
		// Not an object's: the zones' records are.
		return true
	case !ok:
		// An object's kind but not a whole key has no namespace to
		// tell: it is this skylb's only when no namespace narrows it.
		return s.Kind(k.Kind) && len(s.Namespaces) == 0
	}
	return s.Kind(k.Kind) && s.Namespace(k.Namespace)
}

// isObjectKind reports whether kind is one of the kinds of object published.
func isObjectKind(kind string) bool {
	return slices.ContainsFunc(Sources, func(s struct{ Name, Kind string }) bool { return s.Kind == kind })
}

// String describes the scope in one canonical line: equal scopes give equal
// lines, and everything gives "".
func (s Scope) String() string {
	var parts []string
	add := func(name string, values []string) {
		if len(values) > 0 {
			parts = append(parts, name+"="+strings.Join(values, ","))
		}
	}
	add("namespace", sorted(s.Namespaces))
	var names []string
	for _, src := range Sources {
		if len(s.Kinds) > 0 && s.Kind(src.Kind) {
			names = append(names, src.Name)
		}
	}
	add("source", names)
	if s.Selector != nil && !s.Selector.Empty() {
		parts = append(parts, "label-selector="+s.Selector.String())
	}
	add("ingress-class", sorted(s.IngressClasses))
	add("gateway-class", sorted(s.GatewayClasses))
	return strings.Join(parts, " ")
}

func sorted(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}
