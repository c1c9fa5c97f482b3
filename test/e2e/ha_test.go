package e2e

// High availability, readiness, metrics and the one-shot modes. These tests
// stop the single skylb while they run (withoutSkylb): the first replaces it
// with two replicas, the second runs it once by hand.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// Lease timings shortened for the tests; the defaults are 15 s, 10 s and 2 s.
const leaseDuration = 4 * time.Second

var haArgs = []string{
	"--leader-elect", "--leader-elect-namespace=default", "--leader-elect-id=skylb-e2e",
	"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
}

// scrape returns the samples of a skylb's /metrics whose name starts with
// prefix (stack.Scrape); a page that cannot be read fails the test, so that a
// check of a sample's absence or of its zero never passes on it.
func scrape(t *testing.T, addr, prefix string) map[string]float64 {
	t.Helper()
	samples, err := stack.Scrape(ctxT(t), addr, prefix)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return samples
}

func readyz(addr string) int {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// replicaArgs are the flags of the single skylb, without its HTTP address.
func replicaArgs() []string {
	var out []string
	for _, a := range skylbArgs {
		if !strings.HasPrefix(a, "--http-address") {
			out = append(out, a)
		}
	}
	return append(out, haArgs...)
}

// leaderOf returns which of the replicas reports skylb_leader 1, or nil.
func leaderOf(t *testing.T, procs ...*stack.Proc) *stack.Proc {
	t.Helper()
	var found *stack.Proc
	for _, p := range procs {
		if p.Running() && scrape(t, p.HTTPAddr(), "skylb_leader")["skylb_leader"] == 1 {
			if found != nil {
				t.Fatalf("both %s and %s report leading", found.Name, p.Name)
			}
			found = p
		}
	}
	return found
}

func TestHighAvailability(t *testing.T) {
	withoutSkylb(t)
	a, err := st.StartSkylbNamed(ctxT(t), "skylb-a", replicaArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.StartSkylbNamed(ctxT(t), "skylb-b", replicaArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(); b.Stop() })
	for _, p := range []*stack.Proc{a, b} {
		if err := st.WaitSkylbReady(ctxT(t), p); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
	}
	var lead *stack.Proc
	stack.Eventually(t, 20*time.Second, "one replica leads", func() (bool, string) {
		lead = leaderOf(t, a, b)
		return lead != nil, "no leader yet"
	})
	follower := b
	if lead == b {
		follower = a
	}
	namespace(t, "ha")
	namespace(t, "ha-rival")
	metallb(t, "ha", "web", []corev1.LoadBalancerIngress{{IP: "203.0.113.70"}}, annotate("skylb.io/hostname", "ha-claim.example.org"))
	metallb(t, "ha-rival", "web", []corev1.LoadBalancerIngress{{IP: "203.0.113.79"}}, annotate("skylb.io/hostname", "ha-claim.example.org"))
	within(t, quick, "web.ha.example.org", "203.0.113.70")
	within(t, quick, "ha-claim.example.org", "203.0.113.70")

	t.Run("metrics", func(t *testing.T) {
		m := scrape(t, lead.HTTPAddr(), "skylb_")
		for _, name := range []string{
			`skylb_records{type="A",zone="example.org"}`, "skylb_propagation_seconds_count",
			"skylb_reconcile_duration_seconds_count", "skylb_etcd_transactions_total",
			`skylb_etcd_keys_written_total{operation="put"}`, "skylb_workqueue_depth",
			"skylb_hostname_conflicts", "skylb_leader", "skylb_etcd_reachable",
			`skylb_events_dropped_total{type="Normal"}`, `skylb_events_dropped_total{type="Warning"}`,
		} {
			if _, ok := m[name]; !ok {
				t.Errorf("metric %s missing from the leader's /metrics", name)
			}
		}
		if m[`skylb_records{type="A",zone="example.org"}`] < 1 || m["skylb_propagation_seconds_count"] < 1 || m["skylb_etcd_transactions_total"] < 1 {
			t.Errorf("leader metrics without activity: %v", m)
		}
		if m["skylb_hostname_conflicts"] < 1 {
			t.Errorf("skylb_hostname_conflicts = %v, want at least the conflict of ha-rival", m["skylb_hostname_conflicts"])
		}
		fm := scrape(t, follower.HTTPAddr(), "skylb_")
		for _, name := range []string{"skylb_leader", "skylb_etcd_transactions_total"} {
			if v, ok := fm[name]; !ok || v != 0 {
				t.Errorf("follower reports %s = %v (present: %v), want 0", name, v, ok)
			}
		}
		if readyz(follower.HTTPAddr()) != http.StatusOK {
			t.Errorf("the follower is not ready; a warm follower must be")
		}
		info := scrape(t, lead.HTTPAddr(), "skylb_build_info")
		if len(info) != 1 {
			t.Errorf("skylb_build_info = %v, want one sample", info)
		}
	})

	t.Run("leader killed", func(t *testing.T) {
		if err := lead.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		metallb(t, "ha", "after-kill", []corev1.LoadBalancerIngress{{IP: "203.0.113.71"}})
		took := within(t, leaseDuration+2*time.Second, "after-kill.ha.example.org", "203.0.113.71")
		t.Logf("a change made after kill -9 of the leader landed %v after the kill (Lease %v)",
			time.Since(killed).Round(time.Millisecond), leaseDuration)
		_ = took
		if l := leaderOf(t, a, b); l != follower {
			t.Fatalf("leader after the kill = %v, want %s", l, follower.Name)
		}
		if err := lead.Restart(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if err := st.WaitSkylbReady(ctxT(t), lead); err != nil {
			t.Fatal(err)
		}
		lead, follower = follower, lead
	})

	t.Run("leader paused past its lease", func(t *testing.T) {
		before := scrape(t, lead.HTTPAddr(), "skylb_etcd_transactions_total")["skylb_etcd_transactions_total"]
		if err := lead.Pause(); err != nil {
			t.Fatal(err)
		}
		paused := true
		defer func() {
			if paused {
				lead.Resume()
			}
		}()
		stack.Eventually(t, 3*leaseDuration, "the other replica takes over", func() (bool, string) {
			return leaderOf(t, follower) == follower, "not yet"
		})
		svc, err := st.Kube.CoreV1().Services("ha").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.72"}}
		if _, err := st.Kube.CoreV1().Services("ha").UpdateStatus(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within(t, quick, "web.ha.example.org", "203.0.113.72")

		// The old leader wakes up with a stale view; nothing it does may land.
		if err := lead.Resume(); err != nil {
			t.Fatal(err)
		}
		paused = false
		// Once it reports that it does not lead, it writes nothing more;
		// whatever it tried before is counted by then.
		stack.Eventually(t, 3*leaseDuration, "the deposed leader knows it is deposed", func() (bool, string) {
			m := scrape(t, lead.HTTPAddr(), "skylb_leader")
			v, ok := m["skylb_leader"]
			return ok && v == 0, fmt.Sprint(m)
		})
		after := scrape(t, lead.HTTPAddr(), "skylb_")
		if after["skylb_etcd_transactions_total"] != before {
			t.Errorf("the deposed leader committed %v transactions after waking up, want none",
				after["skylb_etcd_transactions_total"]-before)
		}
		if after["skylb_leader"] != 0 {
			t.Errorf("the deposed leader still reports skylb_leader 1")
		}
		within(t, quick, "web.ha.example.org", "203.0.113.72")
		t.Logf("deposed leader: %v fenced transaction errors", after[`skylb_etcd_request_errors_total{operation="txn"}`])
		lead, follower = follower, lead
	})

	t.Run("readyz while etcd is down", func(t *testing.T) {
		etcd := st.Proc("etcd")
		if err := etcd.Kill(); err != nil {
			t.Fatal(err)
		}
		stack.Eventually(t, 10*time.Second, "/readyz unready without etcd", func() (bool, string) {
			c := readyz(lead.HTTPAddr())
			return c == http.StatusServiceUnavailable, fmt.Sprint(c)
		})
		if err := etcd.Restart(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		stack.Eventually(t, 15*time.Second, "/readyz ready again", func() (bool, string) {
			c := readyz(lead.HTTPAddr())
			return c == http.StatusOK, fmt.Sprint(c)
		})
	})
}

// runOnce runs skylb with the single replica's flags and extra ones, to completion.
func runOnce(t *testing.T, extra ...string) (string, error) {
	t.Helper()
	args := append(st.Proc("skylb").Args(), "--http-address=")
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, st.SkylbBinary(), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || testing.Verbose() {
		t.Logf("skylb %s log:\n%s", strings.Join(extra, " "), stderr.String())
	}
	return string(out), err
}

func TestOnceAndDryRun(t *testing.T) {
	// Nothing else writes while the skylb under test is stopped, and it has
	// published all it was given before.
	settle(t)
	withoutSkylb(t)
	namespace(t, "modes")
	metallb(t, "modes", "web", []corev1.LoadBalancerIngress{{IP: "203.0.113.80"}})
	before := revision(t)

	out, err := runOnce(t, "--once", "--dry-run")
	if err != nil {
		t.Fatalf("skylb --once --dry-run: %v\n%s", err, out)
	}
	// The address, and the SRV record of the Service's named port.
	if !strings.Contains(out, "records to write (dry run): 2") {
		t.Errorf("--once --dry-run summary does not say two records would be written:\n%s", out)
	}
	if rev := revision(t); rev != before {
		t.Errorf("--dry-run moved etcd's revision from %d to %d", before, rev)
	}
	// CoreDNS's own etcd client may still be reconnecting after a test
	// that restarted etcd: a name it never answered waits for it.
	var got []string
	var rcode int
	stack.Eventually(t, 2*time.Minute, "CoreDNS answers web.modes.example.org", func() (bool, string) {
		var err error
		got, rcode, err = addresses("web.modes.example.org")
		return err == nil, fmt.Sprint(err)
	})
	if rcode != dns.RcodeNameError {
		t.Errorf("web.modes.example.org answers %s %v after a dry run, want NXDOMAIN", dns.RcodeToString[rcode], got)
	}

	out, err = runOnce(t, "--once")
	if err != nil {
		t.Fatalf("skylb --once: %v\n%s", err, out)
	}
	if !strings.Contains(out, "records written: 2\n") || !strings.Contains(out, "records deleted: 0\n") {
		t.Errorf("--once summary:\n%s\nwant two records written and none deleted", out)
	}
	within(t, quick, "web.modes.example.org", "203.0.113.80")

	out, err = runOnce(t, "--once")
	if err != nil || !strings.Contains(out, "records written: 0\n") {
		t.Errorf("a second --once = %v:\n%s\nwant nothing written", err, out)
	}
}
