package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

// TestLoadBalancerSpecs deploys etcd, CoreDNS and skylb into the real
// three-node cluster, measures a rolling update under load through the
// load balancer's addresses, and runs upstream's LoadBalancer specs against it with
// upstream's e2e.test: the Quick ones, or all of them with
// SKYLB_CONFORMANCE=all (scripts/conformance.sh). Every spec run must pass
// but those of CannotPass, which run only with SKYLB_CONFORMANCE=all and
// are reported. The table of results (spec, result, time) is logged and
// written to <repo>/.cluster/conformance/e2e/results.md.
func TestLoadBalancerSpecs(t *testing.T) {
	all := os.Getenv("SKYLB_CONFORMANCE") == "all"
	limit := 25 * time.Minute
	if all {
		limit = 100 * time.Minute
	}
	ctx := cluster.RootTest(t, limit)
	root := stack.Root(t)
	e2e := stack.Bin(t, root, "e2e.test")
	kubectl := stack.Bin(t, root, "kubectl")

	t0 := time.Now()
	c := cluster.UpWithImagesForTest(ctx, t, root, "conformance", images.Options{Agnhost: true},
		[]string{"get", "pods", "-A", "-o", "wide"},
		[]string{"get", "services", "-A", "-o", "wide"},
		[]string{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		[]string{"-n", "skylb", "logs", "-l", "app.kubernetes.io/name=skylb", "--tail=80", "--prefix"})
	t.Logf("measure: cluster of %d nodes up in %v", len(c.Nodes), time.Since(t0).Round(time.Second))

	t0 = time.Now()
	deploy(ctx, t, c, root)
	t.Logf("measure: etcd, CoreDNS and skylb deployed in %v", time.Since(t0).Round(time.Second))

	t.Run("rolling update", func(t *testing.T) { testRollingUpdate(ctx, t, c) })

	specs := Specs
	if !all {
		specs = nil
		for _, s := range Specs {
			if s.Quick {
				specs = append(specs, s)
			}
		}
	}
	// Beside the cluster's own files (<repo>/.cluster/conformance).
	out := filepath.Join(root, ".cluster", "conformance", "e2e")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	client, err := c.Client(ctx)
	if err != nil {
		t.Fatalf("the outside client: %v", err)
	}
	args := []string{
		"--provider=skeleton",
		"--kubeconfig=" + c.Kubeconfig,
		"--kubectl-path=" + kubectl,
		"--report-dir=" + out,
		"--disable-log-dump",
		"--ginkgo.focus=" + focus(specs),
		"--ginkgo.json-report=" + filepath.Join(out, "report.json"),
		"--ginkgo.timeout=" + (limit - 10*time.Minute).String(),
		"--ginkgo.no-color",
		"--ginkgo.v",
	}
	logFile, err := os.Create(filepath.Join(out, "e2e.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	t.Logf("running %d specs from %s (%s): %s %s", len(specs), client.IP, client.Netns, e2e, strings.Join(args, " "))
	t0 = time.Now()
	cmd := client.Command(ctx, e2e, args...)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	runErr := cmd.Run()
	t.Logf("measure: %d specs in %v (log: %s)", len(specs), time.Since(t0).Round(time.Second), logFile.Name())

	results, err := readReport(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("e2e.test: %v; report: %v (log: %s)", runErr, err, logFile.Name())
	}
	table := resultTable(specs, results)
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("results:\n%s", table)
	for _, s := range specs {
		r, ok := results[s.Text]
		_, excused := CannotPass[s.Text]
		switch {
		case !ok:
			t.Errorf("%q: not in e2e.test's report (log: %s)", s.Text, logFile.Name())
		case r.State == "passed":
		case excused:
			t.Logf("%q: %s, as listed: %s", s.Text, r.State, CannotPass[s.Text])
		default:
			t.Errorf("%q: %s after %v: %s", s.Text, r.State, r.RunTime.Round(time.Second), r.Failure.Message)
		}
	}
	if t.Failed() {
		t.Logf("e2e.test: %v (log: %s)", runErr, logFile.Name())
	}
}

// deploy runs manifests/README.md's steps 2 to 6: certificates, etcd, its
// RBAC bootstrap, CoreDNS and skylb, each applied and waited for.
func deploy(ctx context.Context, t *testing.T, c *cluster.Cluster, root string) {
	t.Helper()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if out, err := cmdOutput(ctx, root, filepath.Join(root, "scripts", "gen-certs.sh"), "--secrets", secrets, filepath.Join(dir, "certs")); err != nil {
		t.Fatalf("gen-certs.sh: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"apply", "-k", filepath.Join(root, "etcd")},
		{"apply", "-f", filepath.Join(secrets, "skylb-dns.yaml")},
		{"-n", "skylb-dns", "rollout", "status", "statefulset/etcd", "--timeout=5m"},
		{"-n", "skylb-dns", "wait", "--for=condition=complete", "job/etcd-rbac-bootstrap", "--timeout=5m"},
		{"apply", "-k", filepath.Join(root, "coredns")},
		{"apply", "-f", filepath.Join(secrets, "skylb-coredns.yaml")},
		{"-n", "skylb-coredns", "rollout", "status", "deployment/coredns", "--timeout=3m"},
		{"apply", "-k", filepath.Join(root, "manifests")},
		{"apply", "-f", filepath.Join(secrets, "skylb.yaml")},
		{"-n", "skylb", "rollout", "status", "deployment/skylb", "--timeout=3m"},
	} {
		c.MustKubectl(ctx, t, args...)
	}
}

// result is the part of a ginkgo spec report the table uses.
type result struct {
	LeafNodeText string
	LeafNodeType string
	State        string
	RunTime      time.Duration
	Failure      struct{ Message string }
}

// readReport reads ginkgo's JSON report and returns the specs' results by
// leaf text.
func readReport(path string) (map[string]result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []struct{ SpecReports []result }
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]result{}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType == "It" {
				out[specText(s.LeafNodeText)] = s
			}
		}
	}
	return out, nil
}

// specText returns a spec's leaf text without the labels the framework
// appends to it (" [Slow] [LinuxOnly]").
func specText(leaf string) string {
	for strings.HasSuffix(leaf, "]") {
		i := strings.LastIndex(leaf, " [")
		if i < 0 {
			break
		}
		leaf = leaf[:i]
	}
	return leaf
}

// resultTable is the Markdown table of the specs' results, with the reason
// of each listed spec.
func resultTable(specs []Spec, results map[string]result) string {
	var b strings.Builder
	b.WriteString("| spec | result | time |\n|---|---|---|\n")
	for _, s := range specs {
		r, ok := results[s.Text]
		state, took := "not run", ""
		if ok {
			state, took = r.State, r.RunTime.Round(time.Second).String()
		}
		if why, listed := CannotPass[s.Text]; listed && state != "passed" {
			state += " (listed: " + why + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s.Text, state, took)
	}
	return b.String()
}

// cmdOutput runs name with args in dir and returns its combined output.
func cmdOutput(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
