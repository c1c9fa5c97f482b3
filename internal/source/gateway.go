package source

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/health"
)

// GatewayGroup is the API group of the Gateway API.
const GatewayGroup = gatewayv1.GroupName

// Ways of finding the LoadBalancer Service that implements a Gateway.
const (
	// LabelGatewayName is the label Gateway API implementations put on the
	// resources they create for a Gateway, its Service among them (GEP-1762).
	LabelGatewayName = "gateway.networking.k8s.io/gateway-name"
	// AnnotationGatewayService names the Service ("name" in the Gateway's
	// namespace, or "namespace/name") when the implementation does not label it.
	AnnotationGatewayService = "skylb.io/gateway-service"
)

// ModeGateway marks publications whose addresses are those of Gateways.
const ModeGateway Mode = "gateway"

// Route is what skylb reads of an HTTPRoute, GRPCRoute or TLSRoute: the
// three differ only in their rules, which say nothing about names.
type Route struct {
	Kind       string // KindHTTPRoute, KindGRPCRoute or KindTLSRoute
	Meta       *metav1.ObjectMeta
	Hostnames  []gatewayv1.Hostname
	ParentRefs []gatewayv1.ParentReference
	Parents    []gatewayv1.RouteParentStatus
}

// HTTPRoute returns what skylb reads of an HTTPRoute.
func HTTPRoute(r *gatewayv1.HTTPRoute) Route {
	return Route{KindHTTPRoute, &r.ObjectMeta, r.Spec.Hostnames, r.Spec.ParentRefs, r.Status.Parents}
}

// GRPCRoute returns what skylb reads of a GRPCRoute.
func GRPCRoute(r *gatewayv1.GRPCRoute) Route {
	return Route{KindGRPCRoute, &r.ObjectMeta, r.Spec.Hostnames, r.Spec.ParentRefs, r.Status.Parents}
}

// TLSRoute returns what skylb reads of a TLSRoute.
func TLSRoute(r *gatewayv1.TLSRoute) Route {
	return Route{KindTLSRoute, &r.ObjectMeta, r.Spec.Hostnames, r.Spec.ParentRefs, r.Status.Parents}
}

// Gateway returns the publication of a Gateway: the hostnames of its
// listeners but wildcards (which only routes can narrow down to a name), and
// the names in its hostname annotations, with the Gateway's addresses.
func (b *Builder) Gateway(gw *gatewayv1.Gateway) *Publication {
	p := b.newPublication(KindGateway, &gw.ObjectMeta)
	p.Mode = ModeGateway
	p.HealthPort = 80
	if len(gw.Spec.Listeners) > 0 {
		p.HealthPort = gw.Spec.Listeners[0].Port
	}
	for _, h := range listenerNames(gw) {
		b.addName(p, h, false)
	}
	b.addAnnotatedNames(p, gw.Annotations)
	p.Addresses, p.Targets = b.gatewayAddresses(p, gw)
	b.cfg.Filter.apply(p)
	b.finish(p)
	return p
}

// listenerNames returns the hostnames of a Gateway's listeners that are not wildcards.
func listenerNames(gw *gatewayv1.Gateway) []string {
	var out []string
	for _, l := range gw.Spec.Listeners {
		if l.Hostname == nil || strings.HasPrefix(string(*l.Hostname), "*") {
			continue
		}
		if h := dnsname.Normalize(string(*l.Hostname)); h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Route returns the publication of a route: its hostnames, intersected with
// those of the listeners of every parent Gateway that accepted it, with those
// Gateways' addresses. Names a parent Gateway publishes itself (the hostnames
// of its listeners) are left to it: publishing them again from the route's
// namespace would only make the two claims conflict.
func (b *Builder) Route(r Route) *Publication {
	kind := Kinds[r.Kind].Kind
	p := b.newPublication(r.Kind, r.Meta)
	p.Mode = ModeGateway
	p.HealthPort = 443
	if r.Kind == KindHTTPRoute && (p.Health == nil || p.Health.Kind != health.HTTPS) {
		p.HealthPort = 80
	}
	var hostnames []string
	for _, ref := range r.ParentRefs {
		gw := b.acceptingGateway(r, ref)
		if gw == nil {
			continue
		}
		own := listenerNames(gw)
		var names []string
		for _, l := range attachable(gw, ref, kind, r.Meta.Namespace) {
			names = append(names, Intersect(l.Hostname, r.Hostnames)...)
		}
		if len(names) == 0 {
			continue
		}
		for _, n := range names {
			if !slices.Contains(own, dnsname.Normalize(n)) && !slices.Contains(hostnames, n) {
				hostnames = append(hostnames, n)
			}
		}
		addrs, targets := b.gatewayAddresses(p, gw)
		p.Addresses = append(p.Addresses, addrs...)
		p.Targets = append(p.Targets, targets...)
	}
	for _, h := range hostnames {
		b.addName(p, h, false)
	}
	b.addAnnotatedNames(p, r.Meta.Annotations)
	b.cfg.Filter.apply(p)
	b.finish(p)
	return p
}

// acceptingGateway returns the Gateway a parent reference of a route points
// to, when the route's status says that parent accepted it; nil otherwise.
func (b *Builder) acceptingGateway(r Route, ref gatewayv1.ParentReference) *gatewayv1.Gateway {
	if !isGateway(ref) || b.listers.Gateways == nil {
		return nil
	}
	accepted := slices.ContainsFunc(r.Parents, func(st gatewayv1.RouteParentStatus) bool {
		return sameParent(st.ParentRef, ref, r.Meta.Namespace) &&
			slices.ContainsFunc(st.Conditions, func(c metav1.Condition) bool {
				return c.Type == string(gatewayv1.RouteConditionAccepted) && c.Status == metav1.ConditionTrue
			})
	})
	if !accepted {
		return nil
	}
	gw, err := b.listers.Gateways.Gateways(parentNamespace(ref, r.Meta.Namespace)).Get(string(ref.Name))
	if err != nil {
		return nil
	}
	return gw
}

// isGateway reports whether a parent reference names a Gateway (the default).
func isGateway(ref gatewayv1.ParentReference) bool {
	return (ref.Group == nil || *ref.Group == GatewayGroup) && (ref.Kind == nil || *ref.Kind == "Gateway")
}

func parentNamespace(ref gatewayv1.ParentReference, routeNS string) string {
	if ref.Namespace == nil || *ref.Namespace == "" {
		return routeNS
	}
	return string(*ref.Namespace)
}

// sameParent reports whether two parent references, defaults filled in, are equal.
func sameParent(a, b gatewayv1.ParentReference, routeNS string) bool {
	str := func(p *gatewayv1.SectionName) string {
		if p == nil {
			return ""
		}
		return string(*p)
	}
	port := func(p *gatewayv1.PortNumber) int32 {
		if p == nil {
			return 0
		}
		return *p
	}
	return isGateway(a) && isGateway(b) && a.Name == b.Name &&
		parentNamespace(a, routeNS) == parentNamespace(b, routeNS) &&
		str(a.SectionName) == str(b.SectionName) && port(a.Port) == port(b.Port)
}

// attachable returns the listeners of a Gateway a route of the given kind and
// namespace attaches to through ref: those named by its sectionName and port,
// whose allowedRoutes admit the route's kind and namespace. Listeners that
// select namespaces by label are taken to admit it: the Gateway accepted the
// route, and skylb does not read namespaces.
func attachable(gw *gatewayv1.Gateway, ref gatewayv1.ParentReference, kind, routeNS string) []gatewayv1.Listener {
	var out []gatewayv1.Listener
	for _, l := range gw.Spec.Listeners {
		if ref.SectionName != nil && l.Name != *ref.SectionName || ref.Port != nil && l.Port != *ref.Port {
			continue
		}
		if allowsKind(l, kind) && allowsNamespace(l, gw.Namespace, routeNS) {
			out = append(out, l)
		}
	}
	return out
}

// allowsKind reports whether a listener admits routes of a kind: those it
// lists, or by default those its protocol carries.
func allowsKind(l gatewayv1.Listener, kind string) bool {
	if l.AllowedRoutes != nil && len(l.AllowedRoutes.Kinds) > 0 {
		return slices.ContainsFunc(l.AllowedRoutes.Kinds, func(k gatewayv1.RouteGroupKind) bool {
			return (k.Group == nil || *k.Group == GatewayGroup) && string(k.Kind) == kind
		})
	}
	switch l.Protocol {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType:
		return kind == "HTTPRoute" || kind == "GRPCRoute"
	case gatewayv1.TLSProtocolType:
		return kind == "TLSRoute"
	}
	return false
}

func allowsNamespace(l gatewayv1.Listener, gatewayNS, routeNS string) bool {
	from := gatewayv1.NamespacesFromSame
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil && l.AllowedRoutes.Namespaces.From != nil {
		from = *l.AllowedRoutes.Namespaces.From
	}
	switch from {
	case gatewayv1.NamespacesFromAll, gatewayv1.NamespacesFromSelector:
		return true
	case gatewayv1.NamespacesFromSame:
		return gatewayNS == routeNS
	}
	return false
}

// Intersect returns the hostnames a route serves on a listener, as the Gateway
// API defines them: a route without hostnames takes the listener's; a listener
// without a hostname takes the route's; otherwise each route hostname that
// matches the listener's gives the more specific of the two. A wildcard
// "*.example.org" matches names with one or more labels before
// ".example.org". Wildcards can be in the result; they are refused later, as
// for any name.
func Intersect(listener *gatewayv1.Hostname, route []gatewayv1.Hostname) []string {
	l := ""
	if listener != nil {
		l = dnsname.Normalize(string(*listener))
	}
	if len(route) == 0 {
		if l == "" {
			return nil
		}
		return []string{l}
	}
	var out []string
	for _, h := range route {
		r := dnsname.Normalize(string(h))
		if n, ok := intersectOne(l, r); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func intersectOne(listener, route string) (string, bool) {
	switch {
	case listener == "" || listener == route:
		return route, true
	case wildcardMatches(listener, route):
		return route, true
	case wildcardMatches(route, listener):
		return listener, true
	}
	return "", false
}

// wildcardMatches reports whether pattern is a wildcard ("*.suffix") that
// matches name, a name or a narrower wildcard beneath suffix.
func wildcardMatches(pattern, name string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*.")
	if !ok {
		return false
	}
	name = strings.TrimPrefix(name, "*.")
	return strings.HasSuffix(name, "."+suffix)
}

// gatewayAddresses returns the addresses and CNAME targets of a Gateway: those
// of the LoadBalancer Service that implements it when skylb publishes that
// Service with addresses (they come straight from skylb's own choice, not
// through the implementation's copy of them), else those of its status.
func (b *Builder) gatewayAddresses(p *Publication, gw *gatewayv1.Gateway) ([]netip.Addr, []string) {
	if svc := b.gatewayService(gw); svc != nil {
		if sp := b.Service(svc); sp != nil && (len(sp.Addresses) > 0 || len(sp.Targets) > 0) {
			return sp.Addresses, sp.Targets
		}
	}
	var st Publication
	for _, a := range gw.Status.Addresses {
		switch {
		case a.Type == nil || *a.Type == gatewayv1.IPAddressType:
			st.addStatus(a.Value, "")
		case *a.Type == gatewayv1.HostnameAddressType:
			st.addStatus("", a.Value)
		}
	}
	p.Problems = append(p.Problems, st.Problems...)
	return st.Addresses, st.Targets
}

// gatewayService returns the LoadBalancer Service that implements a Gateway:
// the one its annotation names, or else one of its namespace labelled with
// its name; nil when there is none.
func (b *Builder) gatewayService(gw *gatewayv1.Gateway) *corev1.Service {
	if b.listers.Services == nil {
		return nil
	}
	if v := strings.TrimSpace(gw.Annotations[AnnotationGatewayService]); v != "" {
		ns, name, ok := strings.Cut(v, "/")
		if !ok {
			ns, name = gw.Namespace, v
		}
		svc, err := b.listers.Services.Services(ns).Get(name)
		if err != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return nil
		}
		return svc
	}
	svcs, err := b.listers.Services.Services(gw.Namespace).List(labels.SelectorFromSet(labels.Set{LabelGatewayName: gw.Name}))
	if err != nil {
		return nil
	}
	slices.SortFunc(svcs, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, svc := range svcs {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			return svc
		}
	}
	return nil
}
