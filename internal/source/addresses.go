package source

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// Mode says where the addresses of a Service come from.
type Mode string

// The address sources.
const (
	// ModeAuto is ModeStatus for Services another implementation handles, and
	// ModeNodes for those skylb implements.
	ModeAuto Mode = "auto"
	// ModeNodes publishes the addresses of the nodes running ready endpoints;
	// kube-proxy forwards what reaches them.
	ModeNodes Mode = "nodes"
	// ModePods publishes the ready endpoint addresses themselves, for routed pod networks.
	ModePods Mode = "pods"
	// ModeStatus publishes what is in status.loadBalancer.ingress.
	ModeStatus Mode = "status"
)

// ParseMode validates an address source name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case ModeAuto, ModeNodes, ModePods, ModeStatus:
		return m, nil
	}
	return "", fmt.Errorf("%q is not one of auto, nodes, pods, status", s)
}

// Annotations read on Services and Nodes for address choice.
const (
	AnnotationAddressSource = "skylb.io/address-source"
	AnnotationNodeAddress   = "skylb.io/address"
	// annotationDNSLBAddress is dnslb's node address override, read for its users.
	annotationDNSLBAddress = "dnslb.loadworks.com/address"
	// LabelExcludeFromLB is the well-known label that keeps a node out of load balancers.
	LabelExcludeFromLB = "node.kubernetes.io/exclude-from-external-load-balancers"
)

// Listers are the caches the Builder reads besides the object itself. A nil
// lister makes the address sources that need it find nothing.
type Listers struct {
	EndpointSlices discoverylisters.EndpointSliceLister
	Nodes          corelisters.NodeLister
	Services       corelisters.ServiceLister
	// Gateways is the Gateway API's Gateways, nil while their CRD is not served.
	Gateways gatewaylisters.GatewayLister
	// PortUsers returns the Services indexed under a key of PortKeys; nil
	// finds none, and no Service is refused for a port conflict.
	PortUsers func(key string) []*corev1.Service
}

// Implements reports whether skylb is the load balancer of svc: a LoadBalancer
// Service of skylb's class (no class when class is empty).
func (b *Builder) Implements(svc *corev1.Service) bool {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	if svc.Spec.LoadBalancerClass == nil {
		return b.cfg.LoadBalancerClass == ""
	}
	return *svc.Spec.LoadBalancerClass == b.cfg.LoadBalancerClass
}

// mode returns the address source of a LoadBalancer Service.
func (b *Builder) mode(p *Publication, svc *corev1.Service, implemented bool) Mode {
	mode := b.cfg.AddressSource
	if !implemented {
		mode = ModeStatus
	}
	return annotatedMode(p, svc, AnnotationAddressSource, mode, ParseMode, implemented)
}

// annotatedMode returns the address source the annotation key of svc names,
// read by parse, or def without one; a value parse refuses is told on p as
// InvalidAnnotation and def kept. ModeAuto is resolved: ModeNodes for a
// Service skylb implements, ModeStatus for the others.
func annotatedMode(p *Publication, svc *corev1.Service, key string, def Mode, parse func(string) (Mode, error), implemented bool) Mode {
	mode := def
	if v, ok := svc.Annotations[key]; ok {
		m, err := parse(v)
		if err != nil {
			p.problem(ReasonInvalidAnnotation, "annotation %s: %v; using %s", key, err, mode)
		} else {
			mode = m
		}
	}
	if mode == ModeAuto {
		if implemented {
			return ModeNodes
		}
		return ModeStatus
	}
	return mode
}

// readyEndpoints returns the endpoints of a Service that are ready, serving and
// not terminating.
func (b *Builder) readyEndpoints(svc *corev1.Service) []discoveryv1.Endpoint {
	if b.listers.EndpointSlices == nil {
		return nil
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	slices_, err := b.listers.EndpointSlices.EndpointSlices(svc.Namespace).List(sel)
	if err != nil {
		return nil
	}
	var out []discoveryv1.Endpoint
	for _, s := range slices_ {
		for _, ep := range s.Endpoints {
			c := ep.Conditions
			// Unset conditions are to be read as ready, serving, not terminating.
			if (c.Ready == nil || *c.Ready) && (c.Serving == nil || *c.Serving) && (c.Terminating == nil || !*c.Terminating) {
				out = append(out, ep)
			}
		}
	}
	return out
}

// targetPort returns the port the endpoints of a Service's first port listen
// on, from its EndpointSlices, or 0.
func (b *Builder) targetPort(svc *corev1.Service) int {
	if b.listers.EndpointSlices == nil || len(svc.Spec.Ports) == 0 {
		return 0
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	eps, err := b.listers.EndpointSlices.EndpointSlices(svc.Namespace).List(sel)
	if err != nil {
		return 0
	}
	want := svc.Spec.Ports[0].Name
	for _, s := range eps {
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil && want == "" || p.Name != nil && *p.Name == want) {
				return int(*p.Port)
			}
		}
	}
	return 0
}

// podAddresses returns the addresses of the ready endpoints.
func (b *Builder) podAddresses(eps []discoveryv1.Endpoint) []netip.Addr {
	var out []netip.Addr
	for _, ep := range eps {
		for _, a := range ep.Addresses {
			if addr, err := netip.ParseAddr(a); err == nil {
				out = append(out, addr.Unmap())
			}
		}
	}
	return out
}

// nodeAddresses returns the addresses of the usable nodes that host ready endpoints.
func (b *Builder) nodeAddresses(eps []discoveryv1.Endpoint) []netip.Addr {
	if b.listers.Nodes == nil {
		return nil
	}
	var names []string
	for _, ep := range eps {
		if ep.NodeName != nil && !slices.Contains(names, *ep.NodeName) {
			names = append(names, *ep.NodeName)
		}
	}
	var out []netip.Addr
	for _, name := range names {
		node, err := b.listers.Nodes.Get(name)
		if err != nil || !NodeUsable(node) {
			continue
		}
		out = append(out, NodeAddresses(node, b.cfg.NodeAddressTypes)...)
	}
	return out
}

// NodeUsable reports whether traffic may be sent to a node: it is Ready, not
// being deleted and not excluded from load balancers.
func NodeUsable(node *corev1.Node) bool {
	if node.DeletionTimestamp != nil {
		return false
	}
	if _, excluded := node.Labels[LabelExcludeFromLB]; excluded {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeAddresses returns the addresses of a node that load-balanced traffic should
// reach: those in its address annotation, or else, for each IP family, the
// addresses of the first type in types that has any of that family.
func NodeAddresses(node *corev1.Node, types []corev1.NodeAddressType) []netip.Addr {
	for _, key := range []string{AnnotationNodeAddress, annotationDNSLBAddress} {
		v, ok := node.Annotations[key]
		if !ok {
			continue
		}
		var out []netip.Addr
		for _, s := range strings.Split(v, ",") {
			if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil {
				out = append(out, a.Unmap())
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	var out []netip.Addr
	for _, is4 := range []bool{true, false} {
		for _, t := range types {
			var found []netip.Addr
			for _, a := range node.Status.Addresses {
				if a.Type != t {
					continue
				}
				if addr, err := netip.ParseAddr(a.Address); err == nil && addr.Unmap().Is4() == is4 {
					found = append(found, addr.Unmap())
				}
			}
			if len(found) > 0 {
				out = append(out, found...)
				break
			}
		}
	}
	return out
}

// keepFamilies drops the addresses of IP families the Service does not have.
func keepFamilies(addrs []netip.Addr, families []corev1.IPFamily) []netip.Addr {
	if len(families) == 0 {
		return addrs
	}
	return slices.DeleteFunc(addrs, func(a netip.Addr) bool {
		fam := corev1.IPv6Protocol
		if a.Is4() {
			fam = corev1.IPv4Protocol
		}
		return !slices.Contains(families, fam)
	})
}

// StaleStatus reports whether a Service that is no longer a LoadBalancer still
// carries a load-balancer status that looks like skylb's: node addresses in VIP
// mode or host names within skylb's zones. skylb clears it.
func (b *Builder) StaleStatus(svc *corev1.Service) bool {
	ingress := svc.Status.LoadBalancer.Ingress
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(ingress) == 0 {
		return false
	}
	var nodeAddrs map[netip.Addr]bool
	for _, ing := range ingress {
		switch {
		case ing.Hostname != "":
			if _, err := b.cfg.Zones.Place(ing.Hostname); err != nil {
				return false
			}
		case ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeVIP:
			if nodeAddrs == nil {
				nodeAddrs = b.allNodeAddresses()
			}
			addr, err := netip.ParseAddr(ing.IP)
			if err != nil || !nodeAddrs[addr.Unmap()] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (b *Builder) allNodeAddresses() map[netip.Addr]bool {
	out := make(map[netip.Addr]bool)
	if b.listers.Nodes == nil {
		return out
	}
	nodes, err := b.listers.Nodes.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, n := range nodes {
		for _, a := range NodeAddresses(n, b.cfg.NodeAddressTypes) {
			out[a] = true
		}
	}
	return out
}
