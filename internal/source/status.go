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
// A Service of the pods source gets its generated name as a hostname entry,
// at once: pod IPs churn, and the name is what clients should use.
func (b *Builder) loadBalancerStatus(p *Publication, svc *corev1.Service) []corev1.LoadBalancerIngress {
	out := []corev1.LoadBalancerIngress{}
	switch {
	case p.PortConflict:
		// Refused: an address in the status would be a rule of kube-proxy's
		// beside the older Service's, and either could win.
	case p.Mode == ModeNodes:
		return b.nodeStatus.of(svc.Spec.IPFamilies, b.statusAddresses(p.Addresses, svc.Spec.IPFamilies))
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
	out := make([]corev1.LoadBalancerIngress, len(addrs))
	for i, a := range addrs {
		out[i] = corev1.LoadBalancerIngress{IP: a.String(), IPMode: ptrTo(corev1.LoadBalancerIPModeVIP)}
	}
	if s.last == nil {
		s.last = make(map[string]sharedStatus)
	}
	s.last[key] = sharedStatus{addrs: addrs, status: out}
	return out
}
