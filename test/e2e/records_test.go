package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// skylb records, run with CoreDNS's read-only etcd user, lists the records
// with the types CoreDNS serves them as, and says that it could not read the
// claims instead of failing.
func TestRecordsCommandReadOnly(t *testing.T) {
	namespace(t, "inspect")
	metallb(t, "inspect", "web", []corev1.LoadBalancerIngress{{IP: "203.0.113.80"}})
	within(t, quick, "web.inspect.example.org", "203.0.113.80")

	out, lines, has := skylbRecords(t)
	t.Logf("skylb records as user coredns:\n%s", out)
	for _, want := range [][]string{
		{"web.inspect.example.org", "A", "203.0.113.80", "30", "default", "?"},
		{"_http._tcp.web.inspect.example.org", "SRV", "web.inspect.example.org:80", "30", "default", "?"},
	} {
		if !has(want...) {
			t.Errorf("skylb records has no line starting %q:\n%s", strings.Join(want, " "), out)
		}
	}
	// The apex holds the guard, which CoreDNS serves as nothing, unless an
	// object publishes the apex (TestHostileNamespace does).
	apex := 0
	for _, f := range lines {
		if len(f) < 3 || f[0] != "example.org" {
			continue
		}
		apex++
		if f[1] != "A" && f[1] != "AAAA" && !(f[1] == "none" && f[2] == "example.org") {
			t.Errorf("apex line %q, want the guard as type none, or addresses", strings.Join(f, " "))
		}
	}
	if apex == 0 {
		t.Errorf("skylb records shows nothing at the apex example.org:\n%s", out)
	}
	if !strings.Contains(out, "claims under /skylb/claims/ could not be read (permission denied)") {
		t.Errorf("skylb records does not say that the claims could not be read:\n%s", out)
	}
}

// skylbRecords runs skylb records as CoreDNS's read-only etcd user and
// returns its output, the fields of each line, and whether a line begins
// with the given fields.
func skylbRecords(t *testing.T) (string, [][]string, func(prefix ...string) bool) {
	t.Helper()
	out, err := exec.Command(st.SkylbBinary(), "records",
		"--etcd-endpoints="+st.EtcdURL, "--etcd-ca-file="+filepath.Join(st.Certs, "ca.crt"),
		"--etcd-cert-file="+filepath.Join(st.Certs, "coredns.crt"), "--etcd-key-file="+filepath.Join(st.Certs, "coredns.key"),
	).CombinedOutput()
	if err != nil {
		t.Fatalf("skylb records as user coredns: %v\n%s", err, out)
	}
	var lines [][]string
	for _, l := range strings.Split(string(out), "\n") {
		lines = append(lines, strings.Fields(l))
	}
	return string(out), lines, func(prefix ...string) bool {
		return slices.ContainsFunc(lines, func(f []string) bool { return len(f) >= len(prefix) && slices.Equal(f[:len(prefix)], prefix) })
	}
}
