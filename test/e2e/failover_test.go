package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// The health checks of the global load balancing tests: a backend that stops
// fails its next probe at once (connection refused), so an address is
// unhealthy at most interval × threshold after its backend stopped (the first
// failing probe within an interval, threshold-1 more an interval apart).
const (
	glbInterval  = time.Second
	glbThreshold = 2
	// glbHoldDown is the sites' --failback-hold-down.
	glbHoldDown = 6 * time.Second
	// glbCommit bounds the commits of a hand-over (the verdict, the taker's
	// records, the giver's withdrawal, each a watch away from the last) and
	// CoreDNS's cache of 1 s in the tests.
	glbCommit = 1500 * time.Millisecond
)

// glbSite is a site whose Services' addresses are HTTP backends on loopback
// addresses, checked by its skylb.
type glbSite struct {
	*site
	backends map[string]*backend // by address
	port     int
}

// startGLBSite starts a site whose skylb may publish loopback addresses, with
// a backend on each of ips at port.
func startGLBSite(t *testing.T, owner string, port int, ips ...string) *glbSite {
	t.Helper()
	s := &glbSite{backends: map[string]*backend{}, port: port}
	for _, ip := range ips {
		b := &backend{addr: net.JoinHostPort(ip, strconv.Itoa(port))}
		b.status.Store(200)
		b.start(t)
		t.Cleanup(b.stop)
		s.backends[ip] = b
	}
	s.site = startSite(t, owner, ips[0], "--denied-cidrs=224.0.0.0/4", "--failback-hold-down="+glbHoldDown.String())
	return s
}

// publishChecked publishes host from a Service with the addresses ips, shared
// and health-checked over HTTP, with the cluster annotations given as
// key-value pairs.
func (s *glbSite) publishChecked(t *testing.T, name, host string, ips []string, cluster ...string) {
	t.Helper()
	ann := map[string]string{
		"skylb.io/hostname": host, "skylb.io/shared": "true",
		"skylb.io/health-check": "http", "skylb.io/health-interval": glbInterval.String(),
		"skylb.io/health-timeout": "500ms", "skylb.io/health-threshold": strconv.Itoa(glbThreshold),
	}
	for i := 0; i+1 < len(cluster); i += 2 {
		ann[cluster[i]] = cluster[i+1]
	}
	s.publishService(t, name, ann, int32(s.port), ips...)
}

// setBackends stops or starts the site's backends on ips.
func (s *glbSite) setBackends(t *testing.T, up bool, ips ...string) {
	t.Helper()
	for _, ip := range ips {
		if up {
			s.backends[ip].start(t)
		} else {
			s.backends[ip].stop()
		}
	}
}

// sharedClaim is what a test reads of a cluster's claim on a shared name.
type sharedClaim struct {
	Policy   string `json:"policy"`
	Priority int    `json:"priority"`
	Healthy  bool   `json:"healthy"`
	Since    string `json:"since"`
	Serving  bool   `json:"serving"`
}

// claimOn reads owner's claim on name; ok is false when there is none.
func claimOn(t *testing.T, name, owner string) (c sharedClaim, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := etcdAs(t, "root").Get(ctx, "/skylb/claims/"+name+"/"+owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return c, false
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &c); err != nil {
		t.Fatalf("claim of %s on %s: %v", owner, name, err)
	}
	return c, true
}

// healthySince waits up to limit for owner's claim on name to say it is
// healthy and does not serve, and returns the time it is healthy since, from
// which the hold-down counts.
func healthySince(t *testing.T, limit time.Duration, name, owner string) time.Time {
	t.Helper()
	var since time.Time
	stack.Eventually(t, limit, owner+"'s claim on "+name+" healthy, standing by", func() (bool, string) {
		c, ok := claimOn(t, name, owner)
		if !ok || !c.Healthy || c.Serving {
			return false, fmt.Sprintf("%+v %v", c, ok)
		}
		s, err := time.Parse(time.RFC3339, c.Since)
		if err != nil {
			t.Fatalf("%s's claim on %s: since %q: %v", owner, name, c.Since, err)
		}
		since = s
		return true, ""
	})
	return since
}

// minHoldDownChecks is the fewest checks of a hold-down answersUntil accepts:
// it checks every 100 ms what is left of the 6 s once the claim is read, a
// few seconds into it at most.
const minHoldDownChecks = 10

// answersUntil checks that CoreDNS answers name with want at every point from
// now until deadline, every 100 ms, and returns how many times it checked. It
// fails unless it checked at least minHoldDownChecks times.
func answersUntil(t *testing.T, deadline time.Time, name string, want ...string) int {
	t.Helper()
	slices.Sort(want)
	checks := 0
	for time.Now().Before(deadline) {
		got, _, err := addresses(name)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: CoreDNS answers %q (%v) %v before %s, want %q", name, got, err,
				time.Until(deadline).Round(time.Millisecond), deadline.Format(time.RFC3339Nano), want)
		}
		checks++
		time.Sleep(100 * time.Millisecond)
	}
	if checks < minHoldDownChecks {
		t.Fatalf("%s: checked the answer %d times before %s, want at least %d", name, checks, deadline.Format(time.RFC3339Nano), minHoldDownChecks)
	}
	return checks
}

func TestGlobalLoadBalancing(t *testing.T) {
	const (
		failover = "gslb.mc.example.org"
		balanced = "glb.mc.example.org"
	)
	primaryIPs, secondaryIPs := []string{"127.0.0.41", "127.0.0.42"}, []string{"127.0.0.51", "127.0.0.52"}
	primaryBal, secondaryBal := "127.0.0.43", "127.0.0.53"
	port := freePortOn(t, append(append(slices.Clone(primaryIPs), secondaryIPs...), primaryBal, secondaryBal)...)
	primary := startGLBSite(t, "primary", port, append(slices.Clone(primaryIPs), primaryBal)...)
	secondary := startGLBSite(t, "secondary", port, append(slices.Clone(secondaryIPs), secondaryBal)...)
	t.Cleanup(func() { stopSites(t, primary.site, secondary.site) })
	detect := glbInterval*glbThreshold + glbCommit

	t.Run("failover: the preferred cluster answers, the other stands by", func(t *testing.T) {
		primary.publishChecked(t, "gslb", failover, primaryIPs, "skylb.io/cluster-policy", "failover", "skylb.io/cluster-priority", "10")
		within(t, quick, failover, primaryIPs...)
		secondary.publishChecked(t, "gslb", failover, secondaryIPs, "skylb.io/cluster-policy", "failover", "skylb.io/cluster-priority", "20")
		secondary.expectEvent(t, "gslb", "ClusterStandby", "it is answered by primary")
		stack.Eventually(t, quick, "secondary's claim standing by", func() (bool, string) {
			c, ok := claimOn(t, failover, "secondary")
			return ok && c.Policy == "failover" && c.Priority == 20 && c.Healthy && !c.Serving, fmt.Sprintf("%+v %v", c, ok)
		})
		within(t, quick, failover, primaryIPs...)
	})

	t.Run("failover: the primary's backends stop, the secondary takes over", func(t *testing.T) {
		primary.setBackends(t, false, primaryIPs...)
		stopped := time.Now()
		within(t, detect+time.Second, failover, secondaryIPs...)
		took := time.Since(stopped)
		t.Logf("%s moved to the secondary %v after the primary's backends stopped (interval %v × threshold %d, bound %v)",
			failover, took.Round(time.Millisecond), glbInterval, glbThreshold, detect)
		if took > detect {
			t.Errorf("the answer moved after %v, want within interval × threshold plus the commits and CoreDNS's cache, %v", took, detect)
		}
		primary.expectEvent(t, "gslb", "ClusterStandby", "it is answered by secondary")
		secondary.expectEvent(t, "gslb", "ClusterAnswering", "this cluster answers "+failover+" now")
		if v, err := stack.Metric(ctxT(t), secondary.skylb.HTTPAddr(), `skylb_cluster_failovers_total{direction="in"}`); err != nil || v < 1 {
			t.Errorf(`secondary's skylb_cluster_failovers_total{direction="in"} = %v (%v), want at least 1`, v, err)
		}
	})

	t.Run("skylb records shows the policy, the priorities, the verdicts and who answers", func(t *testing.T) {
		out, err := exec.Command(st.SkylbBinary(), "records", "--owner-id=primary",
			"--etcd-endpoints="+st.EtcdURL, "--etcd-ca-file="+filepath.Join(st.Certs, "ca.crt"),
			"--etcd-cert-file="+filepath.Join(st.Certs, "skylb.crt"), "--etcd-key-file="+filepath.Join(st.Certs, "skylb.key"),
		).CombinedOutput()
		if err != nil {
			t.Fatalf("skylb records: %v\n%s", err, out)
		}
		lines := strings.Split(string(out), "\n")
		for _, w := range [][2]string{
			{failover + " failover primary 10 unhealthy since ", " no"},
			{failover + " failover secondary (foreign) 20 healthy since ", " yes"},
		} {
			if !slices.ContainsFunc(lines, func(l string) bool {
				l = strings.Join(strings.Fields(l), " ")
				return strings.HasPrefix(l, w[0]) && strings.HasSuffix(l, w[1])
			}) {
				t.Errorf("skylb records has no line %q...%q:\n%s", w[0], w[1], out)
			}
		}
	})

	t.Run("failover: the primary's backends return, it takes back after the hold-down, not before", func(t *testing.T) {
		primary.setBackends(t, true, primaryIPs...)
		restarted := time.Now()
		// The primary publishes its verdict, healthy again, with its time:
		// the hold-down counts from there.
		since := healthySince(t, detect, failover, "primary")
		heldUntil := since.Add(glbHoldDown)
		primary.expectEvent(t, "gslb", "ClusterHeldDown", heldUntil.UTC().Format(time.RFC3339))
		// Not before: the secondary answers at every point until the
		// hold-down ends.
		checks := answersUntil(t, heldUntil, failover, secondaryIPs...)
		within(t, glbCommit, failover, primaryIPs...)
		took := time.Since(restarted)
		t.Logf("%s moved back to the primary %v after its backends returned (healthy since %s, hold-down %v, %d checks before it ended found the secondary)",
			failover, took.Round(time.Millisecond), since.Format(time.RFC3339), glbHoldDown, checks)
		primary.expectEvent(t, "gslb", "ClusterAnswering", "this cluster answers "+failover+" now")
		secondary.expectEvent(t, "gslb", "ClusterStandby", "it is answered by primary")
	})

	t.Run("balanced: a cluster whose addresses all fail leaves the answer, both answer when neither is healthy", func(t *testing.T) {
		primary.publishChecked(t, "glb", balanced, []string{primaryBal})
		secondary.publishChecked(t, "glb", balanced, []string{secondaryBal})
		within(t, quick, balanced, primaryBal, secondaryBal)

		primary.setBackends(t, false, primaryBal)
		stopped := time.Now()
		within(t, detect+time.Second, balanced, secondaryBal)
		t.Logf("%s dropped the primary, all of whose addresses failed, %v after its backend stopped", balanced, time.Since(stopped).Round(time.Millisecond))
		primary.expectEvent(t, "glb", "ClusterStandby", "it is answered by secondary")

		secondary.setBackends(t, false, secondaryBal)
		stopped = time.Now()
		within(t, detect+time.Second, balanced, primaryBal, secondaryBal)
		t.Logf("%s answers both clusters (fail open) %v after the secondary's backend stopped too", balanced, time.Since(stopped).Round(time.Millisecond))
		primary.expectEvent(t, "glb", "ClusterAnswering", "fail open")

		primary.setBackends(t, true, primaryBal)
		within(t, detect+time.Second, balanced, primaryBal)
		secondary.setBackends(t, true, secondaryBal)
		within(t, detect+time.Second, balanced, primaryBal, secondaryBal)
	})

	t.Run("failover: the primary's skylb is killed, the secondary answers once its records expire", func(t *testing.T) {
		within(t, quick, failover, primaryIPs...)
		if err := primary.skylb.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		within(t, expiry+5*time.Second, failover, secondaryIPs...)
		took := time.Since(killed)
		t.Logf("%s moved to the secondary %v after the primary's skylb was killed (--record-expiry %v)", failover, took.Round(time.Millisecond), expiry)
		if took > expiry+glbCommit {
			t.Errorf("the answer moved after %v, want within the expiry %v plus the commits and CoreDNS's cache", took, expiry)
		}

		// Back, and healthy from the start: it waits for its hold-down too.
		primary.start(t)
		since := healthySince(t, quick, failover, "primary")
		checks := answersUntil(t, since.Add(glbHoldDown), failover, secondaryIPs...)
		within(t, glbCommit, failover, primaryIPs...)
		t.Logf("the returning primary took %s back after its hold-down (%d checks before it ended found the secondary)", failover, checks)
	})
}
