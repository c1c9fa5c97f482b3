package source

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
// Service's own, the addresses that view publishes for it. A view whose
// source is the Service's keeps the Service's addresses and gets no entry.
// The address filter applies in every view.
func (b *Builder) viewAddresses(p *Publication, svc *corev1.Service, implemented bool) {
	for _, v := range b.cfg.Views {
		mode := v.Source
		key := AnnotationViewAddressSourcePrefix + v.Name
		if s, ok := svc.Annotations[key]; ok {
			m, err := parseViewMode(s)
			if err != nil {
				p.problem(ReasonInvalidAnnotation, "annotation %s: %v; using %s", key, err, mode)
			} else {
				mode = m
			}
		}
		if mode == ModeAuto {
			mode = map[bool]Mode{true: ModeNodes, false: ModeStatus}[implemented]
		}
		if mode == p.Mode {
			continue
		}
		addrs := b.addressesBy(mode, svc)
		addrs = slices.DeleteFunc(keepFamilies(addrs, svc.Spec.IPFamilies), func(a netip.Addr) bool { return !b.cfg.Filter.Permits(a) })
		slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
		addrs = slices.Compact(addrs)
		if len(addrs) > b.cfg.MaxAddresses {
			addrs = addrs[:b.cfg.MaxAddresses]
		}
		if p.Views == nil {
			p.Views = make(map[string][]netip.Addr, len(b.cfg.Views))
		}
		// An empty list is kept: the view publishes no addresses, rather
		// than the default view's.
		p.Views[v.Name] = addrs
	}
}

// addressesBy returns a Service's addresses from one address source, unsorted.
func (b *Builder) addressesBy(mode Mode, svc *corev1.Service) []netip.Addr {
	var out []netip.Addr
	switch mode {
	case ModeStatus:
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil {
				out = append(out, a.Unmap())
			}
		}
	case ModeNodes:
		out = b.nodeAddresses(b.readyEndpoints(svc))
	case ModePods:
		out = b.podAddresses(b.readyEndpoints(svc))
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
// own when its address source differs from p's, p's otherwise.
func (p *Publication) ViewAddresses(view string) []netip.Addr {
	if a, ok := p.Views[view]; ok {
		return a
	}
	return p.Addresses
}
