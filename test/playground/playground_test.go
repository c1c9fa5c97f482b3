package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// printed is one command of the playground's instructions, with the comment
// printed above it.
type printed struct{ comment, command string }

// instructions returns the commands printed after "Try these", in order.
func instructions(out string) []printed {
	var (
		cmds    []printed
		comment string
		in      bool
	)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Try these") {
			in = true
			continue
		}
		if !in || !strings.HasPrefix(line, "  ") {
			continue
		}
		line = strings.TrimSpace(line)
		if c, ok := strings.CutPrefix(line, "# "); ok {
			comment = c
			continue
		}
		cmds = append(cmds, printed{comment: comment, command: line})
		comment = ""
	}
	return cmds
}

// TestPlaygroundAsPrinted runs the README's first command, scripts/playground.sh
// up, as a newcomer would, then every command it prints, as printed, from the
// repository root: each must work and show what its comment says, and each
// change must reach the answers of CoreDNS. A command the test does not know
// fails it, so that the instructions cannot change without their proof.
func TestPlaygroundAsPrinted(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts the whole playground")
	}
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if missing := stack.MissingBinaries(bin); len(missing) > 0 {
		t.Skipf("skipped: %s missing in bin/; run scripts/build-bins.sh", strings.Join(missing, ", "))
	}
	if _, err := os.Stat(filepath.Join(bin, "kubectl")); err != nil {
		t.Skip("skipped: bin/kubectl is missing; run scripts/build-bins.sh kubectl")
	}
	for _, tool := range []string{"dig", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not on PATH (scripts/install-deps.sh playground installs it)", tool)
		}
	}
	// The playground has fixed ports and one directory: leave a developer's
	// own alone.
	dir := filepath.Join(root, ".playground")
	if _, err := os.Stat(dir); err == nil {
		t.Skipf("skipped: %s exists; scripts/playground.sh down --purge removes it", dir)
	}
	for _, port := range []int{Ports.DNS, Ports.Etcd, Ports.KubeEtcd, Ports.APIServer, Ports.Skylb} {
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
			t.Skipf("skipped: the playground's port %d is taken: %v", port, err)
		} else {
			l.Close()
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sh := func(timeout time.Duration, command string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c := exec.CommandContext(cctx, "bash", "-o", "pipefail", "-c", command)
		c.Dir = root
		c.WaitDelay = 5 * time.Second
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			return string(out), fmt.Errorf("%s: %w\n%s%s", command, err, out, stderr.String())
		}
		return string(out), nil
	}
	t.Cleanup(func() {
		out, err := exec.Command(filepath.Join(root, "scripts", "playground.sh"), "down", "--purge").CombinedOutput()
		if err != nil {
			t.Errorf("scripts/playground.sh down --purge: %v\n%s", err, out)
		}
	})

	t0 := time.Now()
	out, err := sh(6*time.Minute, "scripts/playground.sh up")
	if err != nil {
		t.Fatalf("%v%s", err, stack.Tail(filepath.Join(dir, "logs", "skylb.log"), 30))
	}
	t.Logf("measure: scripts/playground.sh up (binaries built, the Go build cache warm) in %v", time.Since(t0).Round(100*time.Millisecond))

	cmds := instructions(out)
	if len(cmds) == 0 {
		t.Fatalf("no instructions printed:\n%s", out)
	}
	nodeAddrs := []string{"192.0.2.11", "192.0.2.12", "192.0.2.13"}
	// webDig is the printed query of the demo Service's name, which the
	// changes are watched through.
	var webDig string
	answers := func() ([]string, error) {
		out, err := sh(10*time.Second, webDig)
		addrs := strings.Fields(out)
		slices.Sort(addrs)
		return addrs, err
	}
	// followsIf waits until the answers of webDig satisfy ok, described by
	// want.
	followsIf := func(what, want string, ok func([]string) bool) {
		t.Helper()
		t0 := time.Now()
		var got []string
		for time.Since(t0) < 30*time.Second {
			var err error
			if got, err = answers(); err == nil && ok(got) {
				t.Logf("measure: %s -> %s answers %v in %v", what, webDig, got, time.Since(t0).Round(10*time.Millisecond))
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("%s: %s answers %v after 30s, want %s", what, webDig, got, want)
	}
	// follows waits until the answers of webDig are want.
	follows := func(what string, want ...string) {
		t.Helper()
		followsIf(what, fmt.Sprint(want), func(got []string) bool { return slices.Equal(got, want) })
	}
	// containsAll checks that out holds every one of want.
	containsAll := func(c printed, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%q (%s) printed no %q:\n%s", c.command, c.comment, w, out)
			}
		}
	}
	// addresses checks that out is exactly want, one per line.
	addresses := func(c printed, out string, want []string) {
		t.Helper()
		got := strings.Fields(out)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%q (%s) answered %v, want %v", c.command, c.comment, got, want)
		}
	}
	type check struct {
		pattern *regexp.Regexp
		run     func(c printed, m []string)
	}
	// run runs a printed command and returns its output; it fails the test
	// on an error.
	run := func(c printed) string {
		t.Helper()
		out, err := sh(30*time.Second, c.command)
		if err != nil {
			t.Errorf("%s: %v", c.comment, err)
		}
		return out
	}
	checks := []check{
		{regexp.MustCompile(`^dig @\S+ -p \d+ web\.demo\.example\.org \+short$`), func(c printed, _ []string) {
			webDig = c.command
			addresses(c, run(c), nodeAddrs)
		}},
		{regexp.MustCompile(`^dig @\S+ -p \d+ (www|shop)\.example\.org \+short$`), func(c printed, _ []string) {
			addresses(c, run(c), nodeAddrs)
		}},
		{regexp.MustCompile(`^dig .* example\.org NS \+short; dig .* ns1\.ns\.dns\.example\.org \+short$`), func(c printed, _ []string) {
			addresses(c, run(c), []string{"127.0.0.1", "ns1.ns.dns.example.org."})
		}},
		{regexp.MustCompile(`^dig .* -b 127\.0\.0\.2 (web\.demo|shop)\.example\.org \+short$`), func(c printed, _ []string) {
			// The pods' addresses as the API has them at the moment of the
			// answer.
			var got, pods []string
			for t0 := time.Now(); time.Since(t0) < 10*time.Second; time.Sleep(200 * time.Millisecond) {
				out, err := sh(10*time.Second, "bin/kubectl --kubeconfig .playground/admin.kubeconfig get pods -n demo -o jsonpath='{.items[*].status.podIP}'")
				if err != nil {
					t.Fatal(err)
				}
				pods = strings.Fields(out)
				slices.Sort(pods)
				got = strings.Fields(run(c))
				slices.Sort(got)
				if len(pods) == 3 && slices.Equal(got, pods) {
					break
				}
			}
			if len(pods) != 3 || !slices.Equal(got, pods) {
				t.Errorf("%q (%s) answered %v, want the 3 pods' addresses %v", c.command, c.comment, got, pods)
			}
		}},
		{regexp.MustCompile(`^dig .* -x 192\.0\.2\.11 \+short$`), func(c printed, _ []string) {
			out := run(c)
			names := strings.Fields(out)
			if len(names) != 1 || !strings.HasSuffix(names[0], ".example.org.") {
				t.Errorf("%q (%s) answered %q, want one name of the zone", c.command, c.comment, out)
			}
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ get svc -A$`), func(c printed, _ []string) {
			containsAll(c, run(c), "web", strings.Join(nodeAddrs, ","))
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ get pods,endpointslices -n demo -o wide$`), func(c printed, _ []string) {
			containsAll(c, run(c), "node-1", "node-2", "node-3", "endpointslice")
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ get nodes -o wide$`), func(c printed, _ []string) {
			containsAll(c, run(c), nodeAddrs...)
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ get events -n demo --field-selector source=skylb$`), func(c printed, _ []string) {
			containsAll(c, run(c), "Published", "service/web", "ingress/shop")
		}},
		{regexp.MustCompile(`^bin/etcdctl .* get --prefix /skydns/$`), func(c printed, _ []string) {
			containsAll(c, run(c), "/skydns/org/example/demo/web/", `"host":"192.0.2.11"`)
		}},
		{regexp.MustCompile(`^bin/etcdctl .* get --prefix /skydns-internal/$`), func(c printed, _ []string) {
			containsAll(c, run(c), "/skydns-internal/org/example/demo/web/", `"host":"10.244.`)
		}},
		{regexp.MustCompile(`^\S+/skylb records .*$`), func(c printed, _ []string) {
			containsAll(c, run(c), "web.demo.example.org", "www.example.org", "shop.example.org")
		}},
		{regexp.MustCompile(`^curl -s http://\S+/readyz; echo; curl -s http://\S+/metrics \| grep \^skylb_$`), func(c printed, _ []string) {
			containsAll(c, run(c), "ok", "skylb_")
		}},
		{regexp.MustCompile(`^watch -n 1 (.*)$`), func(c printed, m []string) {
			// Interactive: what it repeats is the query above.
			if m[1] != webDig {
				t.Errorf("%q watches %q, not the query of web.demo.example.org printed above (%q)", c.command, m[1], webDig)
			}
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ scale deploy/web -n demo --replicas=(\d)$`), func(c printed, m []string) {
			run(c)
			// The pods spread over the nodes, one per node, and scaling down
			// may keep any of them.
			n, _ := strconv.Atoi(m[1])
			followsIf(c.comment, fmt.Sprintf("%d of %v", n, nodeAddrs), func(got []string) bool {
				return len(got) == n && !slices.ContainsFunc(got, func(a string) bool { return !slices.Contains(nodeAddrs, a) })
			})
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ get svc web -n demo$`), func(c printed, _ []string) {
			// One pod, and every node's address still.
			containsAll(c, run(c), "web", strings.Join(nodeAddrs, ","))
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ expose deploy/web -n demo --name=web-copy --type=LoadBalancer --port=80$`), func(c printed, _ []string) {
			run(c)
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ get svc web-copy -n demo; bin/kubectl --kubeconfig \S+ get events -n demo --field-selector reason=PortConflict$`), func(c printed, _ []string) {
			// The Warning follows the Service's creation within moments.
			var out string
			for t0 := time.Now(); time.Since(t0) < 10*time.Second; time.Sleep(200 * time.Millisecond) {
				if out = run(c); strings.Contains(out, "PortConflict") {
					break
				}
			}
			containsAll(c, out, "<pending>", "PortConflict", "service/web-copy", "demo/web")
			if out, err := sh(10*time.Second, strings.Replace(webDig, "web.demo", "web-copy.demo", 1)); err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("web-copy.demo.example.org answered %q (%v), want nothing", out, err)
			}
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ annotate pods -n demo -l app=web --field-selector spec\.nodeName=node-1 \S+=false --overwrite$`), func(c printed, _ []string) {
			run(c)
			follows(c.comment, nodeAddrs[1:]...)
		}},
		{regexp.MustCompile(`^bin/kubectl --kubeconfig \S+ annotate pods -n demo -l app=web --field-selector spec\.nodeName=node-1 \S+-$`), func(c printed, _ []string) {
			run(c)
			follows(c.comment, nodeAddrs...)
		}},
		{regexp.MustCompile(`^scripts/playground\.sh node-ready node-2 (true|false)$`), func(c printed, m []string) {
			run(c)
			if m[1] == "false" {
				follows(c.comment, nodeAddrs[0], nodeAddrs[2])
			} else {
				follows(c.comment, nodeAddrs...)
			}
		}},
		{regexp.MustCompile(`^logs: (\S+)/<process>\.log `), func(c printed, m []string) {
			for _, p := range []string{"skylb", "coredns", "kubelet", "kube-apiserver"} {
				if _, err := os.Stat(filepath.Join(root, m[1], p+".log")); err != nil {
					t.Errorf("%q: %v", c.command, err)
				}
			}
		}},
		{regexp.MustCompile(`^processes and endpoints: (scripts/playground\.sh status)$`), func(c printed, m []string) {
			if _, err := sh(30*time.Second, m[1]); err != nil {
				t.Errorf("%s: %v", c.command, err)
			}
		}},
		{regexp.MustCompile(`^stop everything: (scripts/playground\.sh down) \(down --purge also removes \S+\)$`), func(c printed, m []string) {
			// The last one: down, and status then says so (exit status 3).
			if _, err := sh(time.Minute, m[1]); err != nil {
				t.Errorf("%s: %v", c.command, err)
			}
			out, err := sh(30*time.Second, "scripts/playground.sh status")
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Errorf("scripts/playground.sh status after down: %v, want exit status 3\n%s", err, out)
			}
		}},
	}
	for _, c := range cmds {
		i := slices.IndexFunc(checks, func(ch check) bool { return ch.pattern.MatchString(c.command) })
		if i < 0 {
			t.Errorf("the playground prints a command this test does not check: %q (%s)", c.command, c.comment)
			continue
		}
		checks[i].run(c, checks[i].pattern.FindStringSubmatch(c.command))
	}
}
