package cluster

import (
	"context"
	"net/netip"
	"os/exec"
)

// The outside client's address plan: a network of its own on the bridge,
// outside the nodes' (and outside 10.213.0.0/16, which upstream's e2e specs
// take for the nodes' network when they check that a client address is
// preserved).
var (
	clientNet = netip.MustParsePrefix("10.216.0.0/24")
	clientIP  = netip.MustParseAddr("10.216.0.2")
)

const clientNetns = "skylbk-client"

// Client is a machine outside the cluster's networks: a network namespace
// on the cluster's bridge with an address of another network (10.216.0.2),
// which reaches the API server, the node addresses (and so the load
// balancers' addresses skylb publishes) and the pods on the link, and which
// the nodes answer on the link. A packet from it reaches a pod with its
// source address intact, as a client's from beyond a router would: what the
// host (10.213.0.1, on the nodes' network) cannot show.
type Client struct {
	Netns string
	IP    netip.Addr
}

// Command returns the command name with args, to run in the client's
// network namespace.
func (cl Client) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", cl.Netns, name}, args...)...)
}

// Client creates the outside client (once) and returns it. Down removes it
// with the cluster.
func (c *Cluster) Client(ctx context.Context) (Client, error) {
	cl := Client{Netns: clientNetns, IP: clientIP}
	c.mu.Lock()
	made := false
	for _, ns := range c.st.Netns {
		made = made || ns == clientNetns
	}
	c.mu.Unlock()
	if made {
		return cl, nil
	}
	if err := c.record(func(s *state) {
		s.Netns = append(s.Netns, clientNetns)
		s.Routes = append(s.Routes, clientNet.String())
	}); err != nil {
		return Client{}, err
	}
	ns := func(args ...string) []string { return append([]string{"ip", "-n", clientNetns}, args...) }
	cmds := [][]string{
		{"ip", "netns", "add", clientNetns},
		{"ip", "link", "add", "skylbk-vc", "type", "veth", "peer", "name", "eth0", "netns", clientNetns},
		{"ip", "link", "set", "skylbk-vc", "master", bridgeName, "up"},
		ns("addr", "add", netip.PrefixFrom(clientIP, clientNet.Bits()).String(), "dev", "eth0"),
		ns("link", "set", "eth0", "up"),
		ns("link", "set", "lo", "up"),
		// The host and the nodes are on the link, and so is the client
		// for them.
		ns("route", "add", bridgeNet.String(), "dev", "eth0"),
		{"ip", "route", "replace", clientNet.String(), "dev", bridgeName},
	}
	for _, n := range c.Nodes {
		cmds = append(cmds,
			ns("route", "add", n.PodCIDR.String(), "via", n.IP.String()),
			[]string{"ip", "-n", n.Netns, "route", "replace", clientNet.String(), "dev", "eth0"})
	}
	for _, args := range cmds {
		if _, err := run(ctx, args...); err != nil {
			return Client{}, err
		}
	}
	return cl, nil
}
