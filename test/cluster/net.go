package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// The address plan: private ranges no host route here uses (checked by Up),
// living only on the cluster's bridge and in the namespaces it creates. The
// bridge has no uplink and the host forwards nothing (ip_forward is left
// alone): no packet leaves the machine.
var (
	// bridgeNet is the bridge's network: the host (API server) is .1, node i
	// is .(10+i).
	bridgeNet = netip.MustParsePrefix("10.213.0.0/24")
	hostIP    = netip.MustParseAddr("10.213.0.1")
	// podNet holds the nodes' pod ranges, 10.214.<i>.0/24 for node i.
	podNet = netip.MustParsePrefix("10.214.0.0/16")
	// serviceNet is the Service cluster IP range; .1 is the kubernetes
	// Service, .10 the cluster DNS.
	serviceNet = netip.MustParsePrefix("10.215.0.0/16")
	apiVIP     = netip.MustParseAddr("10.215.0.1")
	dnsIP      = netip.MustParseAddr("10.215.0.10")
)

const (
	bridgeName    = "skylbk0"
	apiServerPort = 6443
	maxNodes      = 9
	clusterDomain = "cluster.local"
)

// newNode returns node i (from 1) of a cluster in dir.
func newNode(dir string, i int) Node {
	name := fmt.Sprintf("node-%d", i)
	return Node{
		Name:    name,
		IP:      netip.AddrFrom4([4]byte{10, 213, 0, byte(10 + i)}),
		PodCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 214, byte(i), 0}), 24),
		Netns:   "skylbk-" + name,
		Dir:     dir + "/nodes/" + name,
	}
}

// veth is the host end of the node's veth pair.
func (n Node) veth() string { return "skylbk-v" + strings.TrimPrefix(n.Name, "node-") }

// cgroup is the node's kubelet cgroupRoot, a directory of its own in every
// cgroup v1 hierarchy, so that the kubelets share the hierarchies.
func (n Node) cgroup() string { return "skylbk-" + n.Name }

// checkAddressPlan fails if a host route or link already uses the plan's
// ranges or names (another cluster, or something else of the host).
func checkAddressPlan(ctx context.Context) error {
	routes, err := run(ctx, "ip", "-4", "route", "show", "table", "all")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(routes, "\n") {
		dst, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if dst == "" || dst == "default" {
			continue
		}
		if dst == "local" || dst == "broadcast" {
			continue
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		p, err := netip.ParsePrefix(dst)
		if err != nil {
			continue
		}
		for _, ours := range []netip.Prefix{bridgeNet, podNet, serviceNet, clientNet} {
			if p.Overlaps(ours) {
				return fmt.Errorf("cluster: host route %q overlaps the cluster's %s: another cluster runs? (scripts/cluster.sh down)", strings.TrimSpace(line), ours)
			}
		}
	}
	if _, err := run(ctx, "ip", "link", "show", bridgeName); err == nil {
		return fmt.Errorf("cluster: link %s exists: another cluster runs? (scripts/cluster.sh down)", bridgeName)
	}
	return nil
}

// setupBridge creates the host bridge with the host's address.
func (c *Cluster) setupBridge(ctx context.Context) error {
	if err := c.record(func(s *state) { s.Bridge = bridgeName }); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"ip", "link", "add", bridgeName, "type", "bridge"},
		{"ip", "addr", "add", netip.PrefixFrom(hostIP, bridgeNet.Bits()).String(), "dev", bridgeName},
		{"ip", "link", "set", bridgeName, "up"},
	} {
		if _, err := run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// setupNodeNet creates the node's network namespace, its veth on the bridge,
// its routes (Services through the host, which the node's own kube-proxy
// rules catch first; the other nodes' pods through those nodes) and the
// host's route to its pods. The node has no default route.
func (c *Cluster) setupNodeNet(ctx context.Context, n Node, all []Node) error {
	if err := c.record(func(s *state) {
		s.Netns = append(s.Netns, n.Netns)
		s.Routes = append(s.Routes, n.PodCIDR.String())
	}); err != nil {
		return err
	}
	ns := func(args ...string) []string { return append([]string{"ip", "-n", n.Netns}, args...) }
	cmds := [][]string{
		{"ip", "netns", "add", n.Netns},
		{"ip", "link", "add", n.veth(), "type", "veth", "peer", "name", "eth0", "netns", n.Netns},
		{"ip", "link", "set", n.veth(), "master", bridgeName, "up"},
		ns("addr", "add", netip.PrefixFrom(n.IP, bridgeNet.Bits()).String(), "dev", "eth0"),
		ns("link", "set", "eth0", "up"),
		ns("link", "set", "lo", "up"),
		ns("route", "add", serviceNet.String(), "via", hostIP.String()),
	}
	for _, o := range all {
		if o.Name != n.Name {
			cmds = append(cmds, ns("route", "add", o.PodCIDR.String(), "via", o.IP.String()))
		}
	}
	cmds = append(cmds,
		[]string{"ip", "route", "replace", n.PodCIDR.String(), "via", n.IP.String()},
		[]string{"ip", "netns", "exec", n.Netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		[]string{"ip", "netns", "exec", n.Netns, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1"},
	)
	for _, args := range cmds {
		if _, err := run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
