package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestReadReport reads a ginkgo JSON report as e2e.test writes it: the
// specs' leaf texts carry the framework's labels, which the table drops.
func TestReadReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	report := `[{"SpecReports": [
		{"LeafNodeType": "It", "LeafNodeText": "should be able to switch session affinity for LoadBalancer service with Cluster traffic policy [Slow] [LinuxOnly]", "State": "passed", "RunTime": 6700000000},
		{"LeafNodeType": "It", "LeafNodeText": "should work from pods", "State": "failed", "RunTime": 1000000000, "Failure": {"Message": "timed out"}},
		{"LeafNodeType": "SynchronizedBeforeSuite", "LeafNodeText": "", "State": "passed"}]}]`
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if r := got["should be able to switch session affinity for LoadBalancer service with Cluster traffic policy"]; r.State != "passed" || r.RunTime.Seconds() != 6.7 {
		t.Errorf("Got %+v for the labelled spec, want passed in 6.7 s", r)
	}
	if r := got["should work from pods"]; r.State != "failed" || r.Failure.Message != "timed out" {
		t.Errorf("Got %+v, want failed: timed out", r)
	}
	if len(got) != 2 {
		t.Errorf("Got %d specs, want the 2 Its", len(got))
	}
}

// TestFocus checks that the focus expression selects each spec by its full
// text, labels and all, and nothing else of the network specs.
func TestFocus(t *testing.T) {
	re := regexp.MustCompile(focus(Specs))
	for _, text := range []string{
		"[sig-network] LoadBalancers [Feature:LoadBalancer] should handle load balancer cleanup finalizer for service [Slow]",
		"[sig-network] LoadBalancers ExternalTrafficPolicy: Local [Feature:LoadBalancer] [Slow] should work from pods",
		"[sig-network] LoadBalancers [Feature:LoadBalancer] should have session affinity work for LoadBalancer service with Local traffic policy [Slow] [LinuxOnly]",
	} {
		if !re.MatchString(text) {
			t.Errorf("focus does not match %q", text)
		}
	}
	for _, text := range []string{
		"[sig-network] Services should work after restarting kube-proxy [Disruptive]",
		"[sig-network] Conntrack should be able to preserve UDP traffic when server pod cycles for a NodePort service",
	} {
		if re.MatchString(text) {
			t.Errorf("focus matches %q", text)
		}
	}
}
