package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

// DNSNodePort is CoreDNS's NodePort (coredns/deploy/service.yaml).
const DNSNodePort = 30053

// ExposeWeb creates manifests/README.md's LoadBalancer Service web over three
// pause pods in the namespace default and returns the sorted addresses of the
// nodes that run them, which skylb publishes.
func (c *Cluster) ExposeWeb(ctx context.Context, t testing.TB) []string {
	t.Helper()
	for _, args := range [][]string{
		{"create", "deployment", "web", "--image=" + images.PauseRef, "--replicas=3"},
		{"expose", "deployment", "web", "--type=LoadBalancer", "--port=80"},
		{"rollout", "status", "deployment/web", "--timeout=2m"},
	} {
		if out, err := c.Kubectl(ctx, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	out, err := c.Kubectl(ctx, "get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.hostIP}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	nodes := strings.Fields(out)
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// WaitAnswer waits up to two minutes until server answers name with exactly
// want (sorted A records), and fails t otherwise.
func WaitAnswer(ctx context.Context, t testing.TB, server, name string, want []string) {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < 2*time.Minute && ctx.Err() == nil {
		rcode, got, err := stack.Query(server, name, dns.TypeA)
		if err == nil && rcode == dns.RcodeSuccess && slices.Equal(got, want) {
			return
		}
		last = fmt.Sprintf("%s %v %v", dns.RcodeToString[rcode], got, err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %s answers %s, want %v", name, server, last, want)
}
