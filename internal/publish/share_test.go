package publish_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

// sharer is a cluster of a test of shared names: its publisher and what it
// was told of its sharings.
type sharer struct {
	*cluster
	host string

	mu    sync.Mutex
	state map[string]publish.Want // stored name -> what it wants
}

// startSharer starts a cluster that shares names, with a failback hold-down.
func startSharer(t *testing.T, c *clientv3.Client, owner, host string, holdDown time.Duration) *sharer {
	t.Helper()
	return startSharerWith(t, c, owner, host, func(cfg *publish.Config) { cfg.FailbackHoldDown = holdDown })
}

// startSharerWith is startSharer with the configuration changed by with.
// Each of before sets what the sharer wants before its publisher is told
// that its wants are complete (see startClusterWith).
func startSharerWith(t *testing.T, c *clientv3.Client, owner, host string, with func(*publish.Config), before ...func(*sharer)) *sharer {
	t.Helper()
	s := &sharer{host: host, state: make(map[string]publish.Want)}
	s.cluster = startClusterWith(t, c, owner, with, func(cl *cluster) {
		s.cluster = cl
		for _, b := range before {
			b(s)
		}
	})
	return s
}

// share wants the cluster's address at name, shared with policy and priority.
func (s *sharer) share(name string, policy arbitrate.Policy, priority int) {
	s.mu.Lock()
	w := publish.Want{Records: []skydns.Record{rec(name, s.host)}, Shared: true, Policy: policy, Priority: priority,
		Unhealthy: s.state[name].Unhealthy}
	s.state[name] = w
	s.mu.Unlock()
	s.pub.Set(name, w)
}

// health sets the cluster's verdict on its addresses for name; before
// share, it sets the verdict share starts with.
func (s *sharer) health(name string, healthy bool) {
	s.mu.Lock()
	w := s.state[name]
	w.Unhealthy = !healthy
	s.state[name] = w
	s.mu.Unlock()
	if w.Records != nil {
		s.pub.Set(name, w)
	}
}

// lastTold returns the last sharing told for name, and how many were.
func (s *sharer) lastTold(name string) (arbitrate.Sharing, int) {
	s.cluster.mu.Lock()
	defer s.cluster.mu.Unlock()
	s.readLocked()
	told := s.shares[name]
	if len(told) == 0 {
		return arbitrate.Sharing{}, 0
	}
	return told[len(told)-1], len(told)
}

// failover has east (priority 10) and then west (20) share name in
// failover, and waits until east answers alone. East comes first: a
// preferred cluster that comes while another one answers waits for its
// hold-down.
func failover(t *testing.T, c *clientv3.Client, east, west *sharer, name string) {
	t.Helper()
	east.share(name, arbitrate.Failover, 10)
	waitIdle(t, east.pub)
	west.share(name, arbitrate.Failover, 20)
	equalEventually(t, "records of the preferred cluster", func() []string { return hosts(t, c, name) }, "east="+east.host)
	waitIdle(t, west.pub)
}

// claimState is a claim's value as the tests read it.
type claimState struct {
	Shared   bool   `json:"shared"`
	Policy   string `json:"policy"`
	Priority *int   `json:"priority"`
	Healthy  *bool  `json:"healthy"`
	Since    string `json:"since"`
	Serving  *bool  `json:"serving"`
}

// claimOf reads owner's claim on name.
func claimOf(t *testing.T, c *clientv3.Client, name, owner string) (claimState, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/skylb/claims/"+name+"/"+owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return claimState{}, false
	}
	var v claimState
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		t.Fatalf("claim of %s on %s: %v", owner, name, err)
	}
	return v, true
}

// serving returns the owners whose claims on name say they serve, sorted.
func serving(t *testing.T, c *clientv3.Client, name string, owners ...string) []string {
	t.Helper()
	var out []string
	for _, o := range owners {
		if v, ok := claimOf(t, c, name, o); ok && v.Serving != nil && *v.Serving {
			out = append(out, o)
		}
	}
	return out
}

func TestFailoverByPriorityAndHealth(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const (
		name = "web.example.org"
		hold = 2 * time.Second
	)
	east := startSharer(t, c, "east", "192.0.2.1", hold)
	west := startSharer(t, c, "west", "192.0.2.2", hold)
	records := func() []string { return hosts(t, c, name) }

	failover(t, c, east, west, name)
	if got := records(); !slices.Equal(got, []string{"east=192.0.2.1"}) {
		t.Fatalf("records = %q once west is idle, want only east's", got)
	}
	v, _ := claimOf(t, c, name, "west")
	if v.Policy != "failover" || v.Priority == nil || *v.Priority != 20 || v.Healthy == nil || !*v.Healthy || v.Serving == nil || *v.Serving || v.Since == "" {
		t.Errorf("west's claim = %+v, want failover, priority 20, healthy since a time, not serving", v)
	}
	if s, _ := west.lastTold(name); s.Serve || !slices.Equal(s.Answer, []string{"east"}) {
		t.Errorf("west was told %+v, want east answering and west not serving", s)
	}
	if st := west.pub.Stats(); st.Standby != 1 {
		t.Errorf("west's Stats().Standby = %d, want 1", st.Standby)
	}

	// The preferred cluster's addresses all fail: the next one takes over.
	east.health(name, false)
	equalEventually(t, "records after east's addresses failed", records, "west=192.0.2.2")
	equalEventually(t, "clusters serving after east's addresses failed", func() []string { return serving(t, c, name, "east", "west") }, "west")
	// The counts follow the commit that etcd shows.
	waitIdle(t, west.pub)
	waitIdle(t, east.pub)
	if st := west.pub.Stats(); st.TookOver != 1 || st.Standby != 0 {
		t.Errorf("west's Stats() TookOver, Standby = %d, %d; want 1, 0", st.TookOver, st.Standby)
	}
	if st := east.pub.Stats(); st.HandedOver != 1 || st.Standby != 1 {
		t.Errorf("east's Stats() HandedOver, Standby = %d, %d; want 1, 1", st.HandedOver, st.Standby)
	}

	// Healthy again: east waits for the hold-down before it takes the name
	// back, and then does.
	healthy := time.Now()
	east.health(name, true)
	var held arbitrate.Sharing
	eventually(t, "east told it is held down", func() bool {
		held, _ = east.lastTold(name)
		return !held.HeldUntil.IsZero()
	})
	if d := held.HeldUntil.Sub(healthy); d < hold-time.Second || d > hold {
		t.Errorf("east is held until %v after it became healthy, want the hold-down %v (since is kept to the second)", d, hold)
	}
	// Check at points before the hold-down ends that west still answers.
	checks := 0
	for time.Until(held.HeldUntil) > 100*time.Millisecond {
		if got := records(); !slices.Equal(got, []string{"west=192.0.2.2"}) {
			t.Fatalf("records = %q %v before the hold-down ends, want only west's", got, time.Until(held.HeldUntil))
		}
		checks++
		time.Sleep(100 * time.Millisecond)
	}
	if checks < 3 {
		t.Errorf("checked %d times before the hold-down ended, want several", checks)
	}
	equalEventually(t, "records after the hold-down", records, "east=192.0.2.1")
	if d := time.Since(held.HeldUntil); d > time.Second {
		t.Errorf("east took the name back %v after its hold-down ended", d)
	}
	waitIdle(t, east.pub)
	if st := east.pub.Stats(); st.TookOver != 1 {
		t.Errorf("east's Stats().TookOver = %d, want 1", st.TookOver)
	}

	// Every cluster unhealthy: both answer (fail open).
	east.health(name, false)
	west.health(name, false)
	equalEventually(t, "records when no cluster is healthy", records, "east=192.0.2.1", "west=192.0.2.2")
	eventually(t, "west told of failing open", func() bool {
		s, _ := west.lastTold(name)
		return s.FailOpen && s.Serve
	})
}

func TestFailoverWhenTheClusterIsLost(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const (
		name = "web.example.org"
		// Long enough that a loaded machine does not delay the renewals
		// past it.
		expiry = 4 * time.Second
	)
	expiring := func(cfg *publish.Config) { cfg.RecordExpiry, cfg.FailbackHoldDown = expiry, time.Minute }
	east := startSharerWith(t, c, "east", "192.0.2.1", expiring)
	west := startSharerWith(t, c, "west", "192.0.2.2", expiring)
	records := func() []string { return hosts(t, c, name) }
	failover(t, c, east, west, name)

	stopped := time.Now()
	east.stop()
	equalEventually(t, "records once east's have expired", records, "west=192.0.2.2")
	d := time.Since(stopped)
	t.Logf("west answers %v after east stopped (record expiry %v)", d.Round(time.Millisecond), expiry)
	if d < expiry-time.Second || d > expiry+2*time.Second {
		t.Errorf("west took over %v after east stopped, want about the expiry, %v", d, expiry)
	}

	// East returns healthy: it waits for its hold-down (a minute here).
	east = startSharerWith(t, c, "east", "192.0.2.1", expiring)
	east.share(name, arbitrate.Failover, 10)
	waitIdle(t, east.pub)
	if got := records(); !slices.Equal(got, []string{"west=192.0.2.2"}) {
		t.Errorf("records = %q once the returning east is idle, want west's until the hold-down ends", got)
	}
	if got := serving(t, c, name, "east", "west"); !slices.Equal(got, []string{"west"}) {
		t.Errorf("clusters serving = %q, want west", got)
	}
}

func TestBalancedWithdrawsAnUnhealthyCluster(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const name = "web.example.org"
	east := startSharer(t, c, "east", "192.0.2.1", time.Minute)
	west := startSharer(t, c, "west", "192.0.2.2", time.Minute)
	records := func() []string { return hosts(t, c, name) }

	east.share(name, "", arbitrate.DefaultPriority)
	west.share(name, arbitrate.Balanced, arbitrate.DefaultPriority)
	equalEventually(t, "records of both", records, "east=192.0.2.1", "west=192.0.2.2")

	east.health(name, false)
	equalEventually(t, "records while east is unhealthy", records, "west=192.0.2.2")
	west.health(name, false)
	equalEventually(t, "records while neither is healthy", records, "east=192.0.2.1", "west=192.0.2.2")
	west.health(name, true)
	equalEventually(t, "records once west is healthy again", records, "west=192.0.2.2")
	// No hold-down in balanced.
	east.health(name, true)
	equalEventually(t, "records once both are healthy", records, "east=192.0.2.1", "west=192.0.2.2")
}

func TestClustersDisagreeingOnThePolicyBalance(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const name = "web.example.org"
	east := startSharer(t, c, "east", "192.0.2.1", time.Minute)
	west := startSharer(t, c, "west", "192.0.2.2", time.Minute)

	east.share(name, arbitrate.Failover, 10)
	west.share(name, arbitrate.Balanced, 20)
	equalEventually(t, "records of both", func() []string { return hosts(t, c, name) }, "east=192.0.2.1", "west=192.0.2.2")
	for _, s := range []*sharer{east, west} {
		eventually(t, s.owner+" told of the disagreement", func() bool {
			sh, _ := s.lastTold(name)
			return sh.Disagree && sh.Policy == arbitrate.Balanced
		})
	}
	// Agreeing again, failover applies.
	west.share(name, arbitrate.Failover, 20)
	equalEventually(t, "records once they agree", func() []string { return hosts(t, c, name) }, "east=192.0.2.1")
}

func TestSharedRestartWritesNothing(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const name = "web.example.org"
	east := startSharer(t, c, "east", "192.0.2.1", time.Minute)
	west := startSharer(t, c, "west", "192.0.2.2", time.Minute)
	failover(t, c, east, west, name)
	east.health(name, false)
	equalEventually(t, "records after east failed", func() []string { return hosts(t, c, name) }, "west=192.0.2.2")
	waitIdle(t, east.pub)
	waitIdle(t, west.pub)
	// The verdicts' times are kept to the second: restart in another one.
	time.Sleep(time.Second)

	for _, s := range []*sharer{east, west} {
		s.stop()
	}
	before := etcdtest.Revision(t, c)
	// Each restarts as skylb does: its names set before its wants are
	// complete, so that nothing it loads is deleted meanwhile.
	holdDown := func(cfg *publish.Config) { cfg.FailbackHoldDown = time.Minute }
	east = startSharerWith(t, c, "east", "192.0.2.1", holdDown, func(s *sharer) {
		s.health(name, false)
		s.share(name, arbitrate.Failover, 10)
	})
	west = startSharerWith(t, c, "west", "192.0.2.2", holdDown, func(s *sharer) { s.share(name, arbitrate.Failover, 20) })
	waitIdle(t, east.pub)
	waitIdle(t, west.pub)
	if after := etcdtest.Revision(t, c); after != before {
		t.Errorf("restarting both changed the revision from %d to %d", before, after)
	}
}

// TestClustersRacingOnSharedNamesNeverLeaveThemUnanswered flips two
// clusters' verdicts on many names at the same moment, over and over, and
// replays etcd's history: at no revision is a name without records while a
// cluster serves it, and at every revision the claims say who serves.
func TestClustersRacingOnSharedNamesNeverLeaveThemUnanswered(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const names = 20
	east := startSharer(t, c, "east", "192.0.2.1", 0)
	west := startSharer(t, c, "west", "192.0.2.2", 0)
	name := func(i int) string { return fmt.Sprintf("n%02d.example.org", i) }
	for i := range names {
		east.share(name(i), arbitrate.Balanced, 100)
		west.share(name(i), arbitrate.Balanced, 100)
	}
	for i := range names {
		equalEventually(t, "records of "+name(i), func() []string { return hosts(t, c, name(i)) }, "east=192.0.2.1", "west=192.0.2.2")
	}
	start := etcdtest.Revision(t, c)

	// Each round sets both verdicts on each name at about the same moment,
	// one name after the other so that each flush races the other
	// cluster's; between rounds the clusters settle.
	rounds := [][2]bool{{false, false}, {true, true}, {false, true}, {true, false}, {false, false}, {true, true}}
	for _, r := range rounds {
		var wg sync.WaitGroup
		for k, s := range []*sharer{east, west} {
			wg.Go(func() {
				for i := range names {
					s.health(name(i), r[k])
					time.Sleep(2 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		want := []string{"east=192.0.2.1", "west=192.0.2.2"}
		switch {
		case r[0] && !r[1]:
			want = want[:1]
		case !r[0] && r[1]:
			want = want[1:]
		}
		for i := range names {
			equalEventually(t, fmt.Sprintf("records of %s after verdicts %v", name(i), r), func() []string { return hosts(t, c, name(i)) }, want...)
		}
	}
	end := etcdtest.Revision(t, c)
	refused := east.pub.Stats().TxnErrors + west.pub.Stats().TxnErrors
	t.Logf("%d revisions replayed; %d transactions refused and decided again", end-start, refused)
	replayShared(t, c, start, end)
}

// replayShared replays etcd's history from revision start to end and checks
// every shared name's records and claims at each revision.
func replayShared(t *testing.T, c *clientv3.Client, start, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := make(map[string]string)
	for _, prefix := range []string{"/skydns/", "/skylb/claims/"} {
		resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(start))
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			state[string(kv.Key)] = string(kv.Value)
		}
	}
	wch := c.Watch(ctx, "/", clientv3.WithPrefix(), clientv3.WithRev(start+1))
	rev := start
	for rev < end {
		wr, ok := <-wch
		if !ok || wr.Err() != nil {
			t.Fatalf("watch ended at revision %d: %v", rev, wr.Err())
		}
		byRev := slices.Clone(wr.Events)
		for len(byRev) > 0 {
			r := byRev[0].Kv.ModRevision
			n := 0
			for n < len(byRev) && byRev[n].Kv.ModRevision == r {
				ev := byRev[n]
				if ev.Type == mvccpb.PUT {
					state[string(ev.Kv.Key)] = string(ev.Kv.Value)
				} else {
					delete(state, string(ev.Kv.Key))
				}
				n++
			}
			byRev = byRev[n:]
			checkShared(t, r, state)
			rev = r
		}
	}
}

// checkShared checks the records and claims of one revision: each owner's
// records of a shared name are there exactly when its claim says it serves,
// and a name some cluster claims to serve has records.
func checkShared(t *testing.T, rev int64, state map[string]string) {
	t.Helper()
	has := make(map[[2]string]bool) // stored name, owner -> records there
	for key, value := range state {
		if !strings.HasPrefix(key, "/skydns/") {
			continue
		}
		stored, _, ok := skydns.SplitKey("/skydns", key)
		v, err := skydns.Decode([]byte(value))
		if ok && err == nil {
			has[[2]string{stored, v.Owner}] = true
		}
	}
	for key, value := range state {
		rest, ok := strings.CutPrefix(key, "/skylb/claims/")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '/')
		stored, owner := rest[:i], rest[i+1:]
		var v claimState
		if err := json.Unmarshal([]byte(value), &v); err != nil || v.Serving == nil {
			t.Errorf("revision %d: claim %s = %s, want one that says whether it serves", rev, key, value)
			continue
		}
		if *v.Serving != has[[2]string{stored, owner}] {
			t.Errorf("revision %d: %s's claim on %s says serving %v, and its records there: %v", rev, owner, stored, *v.Serving, has[[2]string{stored, owner}])
		}
		if *v.Serving {
			continue
		}
		// Not serving: another cluster must.
		if !has[[2]string{stored, "east"}] && !has[[2]string{stored, "west"}] {
			t.Errorf("revision %d: %s has no records", rev, stored)
		}
	}
}
