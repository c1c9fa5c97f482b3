package source

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/skylb/skylb/internal/dnsname"
)

// A view is what one group of clients is answered, beside what everyone else
// is answered (the default view): CoreDNS's view plugin sends the queries of
// the view's client networks to a server block that reads the view's own
// record tree. A name has the same owner and the same records in every
// view, but for the addresses of the Services: each view takes them from its
// own address source, so that clients inside reach the pods or the
// ClusterIP while those outside get the nodes.
type View struct {
	// Name is a DNS label; the view's records are under the etcd prefix
	// <prefix>-<name>.
	Name string
	// Source is the address source of the Services in this view: one of
	// the Modes, or ModeClusterIP.
	Source Mode
	// Zone, when set, is the topology zone (topology.kubernetes.io/zone) of
	// the view's clients: a Service that prefers close endpoints (see
	// TopologyAware) is answered, in this view, with its addresses in that
	// zone, and with all of them when the zone has none (fail open, as
	// kube-proxy does).
	Zone string
}

// ViewAddrs are a publication's addresses in one view.
type ViewAddrs struct {
	// View is the view's name (View.Name).
	View string
	// Addrs are the view's addresses, sorted and unique.
	Addrs []netip.Addr
	// Prefer says that Addrs are those of the publication's own Addresses
	// the view prefers (its zone's): the view answers those of them that
	// Addresses still holds once health checking kept some, and every
	// address of Addresses when none is left. Otherwise Addrs are the
	// view's own, from another address source.
	Prefer bool
	// OwnPorts says that Ports are the view's SRV ports: its addresses are
	// the pods where the publication's are not, or the other way round, so
	// that clients connect to the pods' target ports rather than the
	// Service's ports, or the other way round. Otherwise the view has the
	// publication's Ports.
	OwnPorts bool
	Ports    []Port
}

func (v ViewAddrs) equal(w ViewAddrs) bool {
	return v.View == w.View && v.Prefer == w.Prefer && slices.Equal(v.Addrs, w.Addrs) &&
		v.OwnPorts == w.OwnPorts && slices.Equal(v.Ports, w.Ports)
}

// ModeClusterIP publishes a Service's ClusterIPs, for a view whose clients
// have a route to the service network. It is a view's address source only.
const ModeClusterIP Mode = "cluster-ip"

// AnnotationViewAddressSourcePrefix, followed by a view's name, is the
// annotation that overrides the view's address source for one Service
// (skylb.io/address-source.internal: pods).
const AnnotationViewAddressSourcePrefix = AnnotationAddressSource + "."

// maxViewName is the longest view name: 63 characters less those of
// "address-source.".
const maxViewName = 63 - len("address-source.")

// ViewNames returns the names of views, sorted.
func ViewNames(views []View) []string {
	out := make([]string, len(views))
	for i, v := range views {
		out[i] = v.Name
	}
	slices.Sort(out)
	return out
}

// ParseView reads a view as the command line gives it, NAME=SOURCE
// (internal=pods).
func ParseView(s string) (View, error) {
	name, src, ok := strings.Cut(s, "=")
	if !ok {
		return View{}, fmt.Errorf("view %q: want NAME=ADDRESS-SOURCE, e.g. internal=pods", s)
	}
	name = strings.TrimSpace(name)
	// The name ends the annotation skylb.io/address-source.<name>, whose
	// part after the slash may be 63 characters long.
	if !dnsname.IsLabel(name) || name != strings.ToLower(name) || len(name) > maxViewName {
		return View{}, fmt.Errorf("view %q: the name must be a lower-case DNS label of at most %d characters", s, maxViewName)
	}
	mode, err := parseViewMode(src)
	if err != nil {
		return View{}, fmt.Errorf("view %q: %w", s, err)
	}
	return View{Name: name, Source: mode}, nil
}

// parseViewMode validates a view's address source: a Mode or ModeClusterIP.
func parseViewMode(s string) (Mode, error) {
	if m := Mode(strings.TrimSpace(s)); m == ModeClusterIP {
		return m, nil
	}
	m, err := ParseMode(s)
	if err != nil {
		return "", fmt.Errorf("%q is not one of auto, nodes, pods, status, cluster-ip", s)
	}
	return m, nil
}

// viewAddresses sets, for each view whose address source differs from the
// Service's own, or whose zone the Service prefers, the addresses that view
// publishes for it. A view whose source is the Service's, without a zone to
// prefer, keeps the Service's addresses and gets no entry. The address
// filter applies in every view. With srv, a view whose clients reach the
// pods where the Service's do not, or the other way round, gets SRV ports of
// its own.
func (b *Builder) viewAddresses(p *Publication, svc *corev1.Service, implemented, srv bool) {
	preferClose := TopologyAware(svc)
	for _, v := range b.cfg.Views {
		mode := annotatedMode(p, svc, AnnotationViewAddressSourcePrefix+v.Name, v.Source, parseViewMode, implemented)
		zone := ""
		if preferClose && (mode == ModeNodes || mode == ModePods) {
			zone = v.Zone
		}
		if mode == p.Mode && zone == "" {
			continue
		}
		if p.Views == nil {
			p.Views = make([]ViewAddrs, 0, len(b.cfg.Views))
		}
		// An empty list is kept: the view publishes no addresses, rather
		// than the default view's.
		va := ViewAddrs{View: v.Name, Addrs: b.sorted(svc, b.addressesBy(mode, svc, zone)), Prefer: mode == p.Mode}
		if srv && (mode == ModePods) != (p.Mode == ModePods) {
			va.OwnPorts, va.Ports = true, b.servicePorts(nil, mode, svc)
		}
		p.Views = append(p.Views, va)
	}
}

// sorted returns addrs as a publication holds them: of the Service's
// families, permitted by the filter, sorted and unique, at most
// MaxAddresses.
func (b *Builder) sorted(svc *corev1.Service, addrs []netip.Addr) []netip.Addr {
	addrs = slices.DeleteFunc(keepFamilies(addrs, svc.Spec.IPFamilies), func(a netip.Addr) bool { return !b.cfg.Filter.Permits(a) })
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)
	if len(addrs) > b.cfg.MaxAddresses {
		addrs = addrs[:b.cfg.MaxAddresses]
	}
	return addrs
}

// TopologyAware reports whether a Service asks that traffic stay close to
// its clients: spec.trafficDistribution PreferClose (PreferSameZone,
// PreferSameNode), or topology-aware routing by the annotation
// service.kubernetes.io/topology-mode (topology-aware-hints before it).
func TopologyAware(svc *corev1.Service) bool {
	if d := svc.Spec.TrafficDistribution; d != nil {
		switch *d {
		case corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode:
			return true
		}
	}
	for _, k := range []string{corev1.AnnotationTopologyMode, corev1.DeprecatedAnnotationTopologyAwareHints} {
		if strings.EqualFold(svc.Annotations[k], "auto") {
			return true
		}
	}
	return false
}

// inZone returns the endpoints that serve zone: those whose hints name it,
// or without hints, those in it; all of them when none does (fail open).
func inZone(eps []discoveryv1.Endpoint, zone string) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	for _, ep := range eps {
		serves := ep.Zone != nil && *ep.Zone == zone
		if ep.Hints != nil && len(ep.Hints.ForZones) > 0 {
			serves = slices.ContainsFunc(ep.Hints.ForZones, func(z discoveryv1.ForZone) bool { return z.Name == zone })
		}
		if serves {
			out = append(out, ep)
		}
	}
	if len(out) == 0 {
		return eps
	}
	return out
}

// addressesBy returns a Service's addresses from one address source,
// unsorted; with a zone, from the endpoints that serve it (see inZone).
func (b *Builder) addressesBy(mode Mode, svc *corev1.Service, zone string) []netip.Addr {
	var out []netip.Addr
	eps := func() []discoveryv1.Endpoint {
		eps := b.readyEndpoints(svc)
		if zone != "" {
			eps = inZone(eps, zone)
		}
		return eps
	}
	switch mode {
	case ModeStatus:
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil {
				out = append(out, a.Unmap())
			}
		}
	case ModeNodes:
		out = b.nodeAddresses(eps())
	case ModePods:
		out = b.podAddresses(eps())
	case ModeClusterIP:
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// ViewAddresses returns the addresses a view publishes for p: the view's
// own when its address source differs from p's; those of p's Addresses in
// the view's zone, or all of them when none is (see ViewAddrs.Prefer); p's
// Addresses otherwise.
func (p *Publication) ViewAddresses(view string) []netip.Addr {
	v, ok := p.ViewOf(view)
	switch {
	case !ok:
		return p.Addresses
	case !v.Prefer:
		return v.Addrs
	}
	var out []netip.Addr
	for _, a := range p.Addresses {
		if _, found := slices.BinarySearchFunc(v.Addrs, a, netip.Addr.Compare); found {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return p.Addresses
	}
	return out
}

// ViewPorts returns the SRV ports a view publishes for p: its own (see
// ViewAddrs.OwnPorts), or p's Ports.
func (p *Publication) ViewPorts(view string) []Port {
	if v, ok := p.ViewOf(view); ok && v.OwnPorts {
		return v.Ports
	}
	return p.Ports
}

// ViewOf returns p's entry of Views for a view, and whether it has one.
func (p *Publication) ViewOf(view string) (ViewAddrs, bool) {
	if i := slices.IndexFunc(p.Views, func(v ViewAddrs) bool { return v.View == view }); i >= 0 {
		return p.Views[i], true
	}
	return ViewAddrs{}, false
}
