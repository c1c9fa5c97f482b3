package source

import (
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// NameserverAddresses returns the addresses at which the zone's DNS server can
// be reached from outside the cluster: the addresses (per NodeAddressTypes, or
// the node's address annotation) of the usable nodes that run a ready endpoint
// of a Service that sel selects, in any namespace. This suits a DNS server on
// a host port or on the host network, which the node's address reaches.
// Addresses the Filter refuses are left out and returned apart. Both lists are
// sorted.
func (b *Builder) NameserverAddresses(sel labels.Selector) (addrs, refused []netip.Addr) {
	if sel == nil || b.listers.Services == nil {
		return nil, nil
	}
	svcs, err := b.listers.Services.List(sel)
	if err != nil {
		return nil, nil
	}
	seen := make(map[netip.Addr]bool)
	for _, svc := range svcs {
		for _, a := range b.nodeAddresses(b.readyEndpoints(svc)) {
			if seen[a] {
				continue
			}
			seen[a] = true
			if b.cfg.Filter.Permits(a) {
				addrs = append(addrs, a)
			} else {
				refused = append(refused, a)
			}
		}
	}
	slices.SortFunc(addrs, func(x, y netip.Addr) int { return x.Compare(y) })
	slices.SortFunc(refused, func(x, y netip.Addr) int { return x.Compare(y) })
	return addrs, refused
}
