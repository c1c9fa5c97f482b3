// Package corefile writes what skylb's settings put in CoreDNS's
// configuration: the zones of the shipped Corefile's own block (Render), and
// the server blocks of skylb's views (Blocks): for each view, a block that
// answers the view's clients, chosen by their address with CoreDNS's view
// plugin, from the view's tree in etcd. The blocks take the rest of their
// settings from the environment ({$VAR}), as the shipped Corefile does
// (coredns/Corefile), and import its snippet skylb_answers.
package corefile

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/skydns"
)

// View is one view's block: its name and the networks of its clients.
type View struct {
	Name string
	// Networks are the client networks the view answers; a view without
	// any gets no block.
	Networks []netip.Prefix
	// Zone, when set, is the topology zone the Networks were taken from
	// (ZoneNetworks); it is named in the block's comment.
	Zone string
}

// Blocks returns the server blocks of views, in their order (the first
// block whose networks hold a client answers it), for the records of zones
// under prefix (--etcd-prefix): each view reads its tree, skydns.ViewPrefix.
// A view without networks is named in a comment and has no block.
func Blocks(prefix string, zones []string, views []View) string {
	var b strings.Builder
	b.WriteString("# The server blocks of skylb's views, written by skylb: do not edit.\n")
	for _, v := range views {
		from := "--view-network " + v.Name
		if v.Zone != "" {
			from = "the nodes of topology zone " + v.Zone
		}
		if len(v.Networks) == 0 {
			fmt.Fprintf(&b, "\n# View %s: no client networks (%s), so no block: its clients get the default view's answers.\n", v.Name, from)
			continue
		}
		exprs := make([]string, len(v.Networks))
		for i, n := range v.Networks {
			exprs[i] = "incidr(client_ip(), '" + n.String() + "')"
		}
		fmt.Fprintf(&b, `
# View %[1]s: clients of %[2]s.
%[5]s {
	bind {$SKYLB_DNS_BIND}
	view %[1]s {
		expr %[3]s
	}
	import skylb_answers
	etcd {
		path %[4]s
		endpoint {$SKYLB_ETCD_ENDPOINT} {$SKYLB_ETCD_ENDPOINT_2} {$SKYLB_ETCD_ENDPOINT_3}
		tls {$SKYLB_ETCD_CERT} {$SKYLB_ETCD_KEY} {$SKYLB_ETCD_CA}
	}
}
`, v.Name, from, strings.Join(exprs, " || "), skydns.ViewPrefix(prefix, v.Name), strings.Join(zones, " "))
	}
	return b.String()
}

// ZoneNetworks returns the networks of the nodes in a topology zone
// (topology.kubernetes.io/zone): their pod networks (spec.podCIDRs) and
// their own addresses, each a network of one address; sorted and unique.
// Those are the zone's clients that reach CoreDNS without address
// translation: its pods and the nodes themselves.
func ZoneNetworks(nodes []*corev1.Node, zone string) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range nodes {
		if n.Labels[corev1.LabelTopologyZone] != zone {
			continue
		}
		for _, c := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				ip = ip.Unmap()
				out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
			}
		}
	}
	return Aggregate(out)
}

// Aggregate returns the smallest list of networks that covers exactly the
// addresses of nets, sorted: a network inside another is dropped, and two
// halves of one network become that network. The view plugin evaluates its
// expression for every query, one term per network: a zone of a few hundred
// nodes with consecutive addresses takes a few terms rather than hundreds.
func Aggregate(nets []netip.Prefix) []netip.Prefix {
	out := slices.Clone(nets)
	for i, p := range out {
		out[i] = p.Masked()
	}
	for {
		slices.SortFunc(out, func(a, b netip.Prefix) int {
			if c := a.Addr().Compare(b.Addr()); c != 0 {
				return c
			}
			return a.Bits() - b.Bits()
		})
		merged := out[:0]
		changed := false
		for _, p := range out {
			if n := len(merged); n > 0 {
				last := merged[n-1]
				switch {
				case last.Bits() <= p.Bits() && last.Contains(p.Addr()):
					// p lies inside last (sorted by address, then the
					// larger network first).
					changed = changed || last != p
					continue
				case last.Bits() == p.Bits() && last.Bits() > 0 && siblings(last, p):
					merged[n-1] = netip.PrefixFrom(last.Addr(), last.Bits()-1)
					changed = true
					continue
				}
			}
			merged = append(merged, p)
		}
		out = merged
		if !changed {
			return out
		}
	}
}

// siblings reports whether a and b, of the same length, are the two halves
// of one network, a the lower.
func siblings(a, b netip.Prefix) bool {
	parent := netip.PrefixFrom(a.Addr(), a.Bits()-1).Masked()
	return parent.Addr() == a.Addr() && parent.Contains(b.Addr()) && a.Addr().Is4() == b.Addr().Is4()
}
