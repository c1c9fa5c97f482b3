package source

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// loadBalancerStatus returns the status.loadBalancer.ingress of a Service
// skylb implements, whose publication p is built but for it.
//
// The status is not the answer. kube-proxy treats every IP in it as a
// load-balancer IP of the Service: on each node it accepts the Service's port
// at those addresses and forwards what arrives there to an endpoint (any, with
// externalTrafficPolicy Cluster; the node's own, with Local). An address that
// leaves the status stops being forwarded at once, connections to it
// included. So the status of a Service of the nodes source lists every usable
// node, from the Service's creation, endpoints or not, and changes only when
// nodes come, go or change their addresses: a rolling update, a scale to
// zero or a pod moving leave it as it is. The DNS answer (p.Addresses) keeps
// following the nodes that run ready endpoints; every address of the answer
// is in the status, even beyond the cap of MaxAddresses on the other nodes.
//
// With externalTrafficPolicy Local, the status lists the same nodes, those
// of the answer first: a node's address reaches only that node's pods, and
// clients that take the first address of the status (ingress[0], as
// scripts and upstream's e2e specs do) then reach a node that serves. Only
// the order follows the pods; kube-proxy's rules do not change with it.
//
// A Service of the pods source gets its generated name as a hostname entry,
// at once: pod IPs churn, and the name is what clients should use.
func (b *Builder) loadBalancerStatus(p *Publication, svc *corev1.Service) []corev1.LoadBalancerIngress {
	out := []corev1.LoadBalancerIngress{}
	switch {
	case p.PortConflict:
		// Refused: an address in the status would be a rule of kube-proxy's
		// beside the older Service's, and either could win.
	case p.Mode == ModeNodes:
		addrs := b.statusAddresses(p.Addresses, svc.Spec.IPFamilies)
		if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			if first := answerFirst(addrs, p.Addresses); !slices.Equal(first, addrs) {
				// A list of its own: the shared one is kept for the
				// sorted lists most Services have.
				return vipStatus(first)
			}
		}
		return b.nodeStatus.of(svc.Spec.IPFamilies, addrs)
	case p.Mode == ModePods:
		if len(p.Names) > 0 && p.Names[0].Generated {
			out = append(out, corev1.LoadBalancerIngress{Hostname: p.Names[0].Name})
		}
	}
	return out
}

// statusAddresses returns, sorted, the addresses of the answer and those of
// the other usable nodes of the Service's IP families that the filter
// permits, the lowest first, up to MaxAddresses in all (or as many as the
// answer has, when it has more).
func (b *Builder) statusAddresses(answer []netip.Addr, families []corev1.IPFamily) []netip.Addr {
	out := slices.Clone(answer)
	for _, a := range b.usableNodeAddresses(families) {
		if len(out) >= b.cfg.MaxAddresses {
			break
		}
		if !slices.Contains(answer, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y netip.Addr) int { return x.Compare(y) })
	return out
}

// answerFirst returns addrs (sorted) with those of the answer first, each
// part in the order of addrs.
func answerFirst(addrs, answer []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if slices.Contains(answer, a) {
			out = append(out, a)
		}
	}
	for _, a := range addrs {
		if !slices.Contains(answer, a) {
			out = append(out, a)
		}
	}
	return out
}

// usableNodeAddresses returns, sorted and unique, the addresses of every
// usable node (see NodeUsable) of the given IP families that the filter
// permits.
func (b *Builder) usableNodeAddresses(families []corev1.IPFamily) []netip.Addr {
	if b.listers.Nodes == nil {
		return nil
	}
	nodes, err := b.listers.Nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, n := range nodes {
		if !NodeUsable(n) {
			continue
		}
		for _, a := range NodeAddresses(n, b.cfg.NodeAddressTypes) {
			if b.cfg.Filter.Permits(a) {
				out = append(out, a)
			}
		}
	}
	out = keepFamilies(out, families)
	slices.SortFunc(out, func(x, y netip.Addr) int { return x.Compare(y) })
	return slices.Compact(out)
}

// nodeStatus hands out one status for each list of node addresses it was
// last asked, by IP families: the Services of the nodes source mostly list
// every usable node, and a status kept for each of them would hold its own
// copy (at 100 nodes, 10,000 Services would keep a million entries).
// Publications are never modified, so they may share it.
type nodeStatus struct {
	mu   sync.Mutex
	last map[string]sharedStatus // by the Service's IP families
}

type sharedStatus struct {
	addrs  []netip.Addr
	status []corev1.LoadBalancerIngress
}

// of returns the status listing addrs, of a Service of the given families,
// as VIP addresses.
func (s *nodeStatus) of(families []corev1.IPFamily, addrs []netip.Addr) []corev1.LoadBalancerIngress {
	key := fmt.Sprint(families)
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.last[key]; ok && slices.Equal(prev.addrs, addrs) {
		return prev.status
	}
	out := vipStatus(addrs)
	if s.last == nil {
		s.last = make(map[string]sharedStatus)
	}
	s.last[key] = sharedStatus{addrs: addrs, status: out}
	return out
}

// vipStatus returns the status listing addrs, in their order, as VIP
// addresses.
func vipStatus(addrs []netip.Addr) []corev1.LoadBalancerIngress {
	out := make([]corev1.LoadBalancerIngress, len(addrs))
	for i, a := range addrs {
		out[i] = corev1.LoadBalancerIngress{IP: a.String(), IPMode: ptrTo(corev1.LoadBalancerIPModeVIP)}
	}
	return out
}
