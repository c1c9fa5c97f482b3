package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// up starts everything, in order, recording it as it goes.
func (c *Cluster) up(ctx context.Context, o Options) error {
	if err := checkAddressPlan(ctx); err != nil {
		return err
	}
	nodes := make([]Node, o.Nodes)
	for i := range nodes {
		nodes[i] = newNode(c.Dir, i+1)
	}
	if err := c.record(func(*state) { c.Nodes = nodes }); err != nil {
		return err
	}
	authority, err := c.writeCredentials(nodes)
	if err != nil {
		return err
	}
	if err := c.setupBridge(ctx); err != nil {
		return err
	}
	if err := c.startControlPlane(ctx, o.Bin); err != nil {
		return err
	}
	// kube-system appears shortly after the API server is ready.
	if err := waitFor(ctx, 30*time.Second, 500*time.Millisecond, "cluster DNS and storage objects", func(ctx context.Context) error {
		if err := c.applyDNS(ctx, o.DNSImage); err != nil {
			return err
		}
		return c.applyStorage(ctx)
	}); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.startNode(ctx, o, authority, &c.Nodes[i], nodes); err != nil {
				errs[i] = fmt.Errorf("%s: %w", nodes[i].Name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := waitFor(ctx, 3*time.Minute, time.Second, "every node Ready", c.whileRunning(c.nodesReady)); err != nil {
		return err
	}
	c.logf("%d nodes Ready", len(c.Nodes))
	if err := waitFor(ctx, 3*time.Minute, time.Second, "cluster DNS", c.whileRunning(c.dnsAnswers)); err != nil {
		out, _ := c.Kubectl(ctx, "-n", "kube-system", "get", "pods", "-o", "wide")
		return fmt.Errorf("%w\nkube-system pods:\n%s", err, out)
	}
	c.logf("cluster DNS answers at %s", c.DNSIP)
	return nil
}

// whileRunning returns check, which fails at once, for good, when a process
// the cluster started has exited: no wait can succeed then, and the end of
// its log says why.
func (c *Cluster) whileRunning(check func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		c.mu.Lock()
		procs := slices.Clone(c.st.Procs)
		c.mu.Unlock()
		for _, p := range procs {
			if !p.alive() {
				return fatal{fmt.Errorf("%s (pid %d) exited%s", p.Name, p.PID, stack.Tail(p.Log, 10))}
			}
		}
		return check(ctx)
	}
}

// nodesReady checks that every node is registered and Ready.
func (c *Cluster) nodesReady(ctx context.Context) error {
	out, err := c.Kubectl(ctx, "get", "nodes", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if err != nil {
		return err
	}
	ready := map[string]bool{}
	for _, line := range strings.Fields(out) {
		name, status, _ := strings.Cut(line, "=")
		ready[name] = status == "True"
	}
	for _, n := range c.Nodes {
		if !ready[n.Name] {
			return fmt.Errorf("node %s not Ready (%s)", n.Name, strings.Join(strings.Fields(out), " "))
		}
	}
	return nil
}

// dnsAnswers checks, from the first node, that the cluster DNS resolves the
// kubernetes Service to its cluster IP.
func (c *Cluster) dnsAnswers(ctx context.Context) error {
	name := "kubernetes.default.svc." + clusterDomain
	out, err := c.ExecInNode(ctx, c.Nodes[0].Name, "dig", "+short", "+time=1", "+tries=1", "@"+c.DNSIP.String(), name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != apiVIP.String() {
		return fmt.Errorf("dig %s = %q, want %s", name, strings.TrimSpace(out), apiVIP)
	}
	return nil
}
