package publish_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

// cluster is one cluster's publisher in a test of several sharing an etcd.
type cluster struct {
	owner string
	pub   *publish.Publisher
	stop  func()

	told     *publish.Verdicts
	mu       sync.Mutex
	verdicts map[string]string              // stored name -> "granted", "refused by <holders>" or "refused beside <holders of nested names>"
	shares   map[string][]arbitrate.Sharing // stored name -> sharings told, in order
}

// startCluster runs a publisher with owner id owner and claims under
// /skylb/claims until stop or the end of the test.
func startCluster(t *testing.T, c *clientv3.Client, owner string, expiry time.Duration) *cluster {
	t.Helper()
	return startClusterWith(t, c, owner, func(cfg *publish.Config) { cfg.RecordExpiry = expiry })
}

// startClusterWith is startCluster with the configuration changed by with.
// Each of before runs before the publisher is told that its wants are
// complete, as skylb's first pass sets every name before it does: after,
// a publisher that has loaded etcd deletes what is not wanted yet.
func startClusterWith(t *testing.T, c *clientv3.Client, owner string, with func(*publish.Config), before ...func(*cluster)) *cluster {
	t.Helper()
	cl := &cluster{owner: owner, told: publish.NewVerdicts(), verdicts: make(map[string]string), shares: make(map[string][]arbitrate.Sharing)}
	cfg := publish.Config{
		Prefix: "/skydns", Owner: owner, Timeout: 2 * time.Second, Log: quietLog(),
		ClaimPrefix: "/skylb/claims", Verdicts: cl.told,
	}
	with(&cfg)
	cl.pub = publish.New(c, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl.pub.Run(ctx)
	}()
	var once sync.Once
	cl.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(cl.stop)
	for _, b := range before {
		b(cl)
	}
	cl.pub.Complete()
	return cl
}

func (cl *cluster) verdict(stored string) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.readLocked()
	return cl.verdicts[stored]
}

// readLocked takes what the publisher told since the last call: every
// decision it made during a flush is there once WaitIdle has returned.
func (cl *cluster) readLocked() {
	told := cl.told.Take()
	for _, v := range told {
		if v.Share != nil {
			cl.shares[v.Stored] = append(cl.shares[v.Stored], *v.Share)
			continue
		}
		d := v.Claim
		cl.verdicts[v.Stored] = "granted"
		if !d.Granted {
			cl.verdicts[v.Stored] = "refused by " + strings.Join(d.Holders, ",")
		}
		if len(d.Nested) > 0 {
			cl.verdicts[v.Stored] = "refused beside " + strings.Join(d.Nested, ",")
		}
	}
	cl.told.Done(len(told))
}

// set wants one address at name, shared or not.
func (cl *cluster) set(name, host string, shared bool) {
	cl.pub.Set(name, publish.Want{Records: []skydns.Record{rec(name, host)}, Shared: shared})
}

// hosts returns the hosts of the records at name, by owner, as "owner=host", sorted.
func hosts(t *testing.T, c *clientv3.Client, name string) []string {
	t.Helper()
	var out []string
	for key, value := range dump(t, c) {
		if !strings.HasPrefix(key, skydns.Path("/skydns", name)+"/") {
			continue
		}
		v, err := skydns.Decode([]byte(value))
		if err != nil {
			t.Fatalf("decode %s: %v", key, err)
		}
		out = append(out, v.Owner+"="+v.Host)
	}
	slices.Sort(out)
	return out
}

// claimsOf returns the owners claiming name, sorted.
func claimsOf(t *testing.T, c *clientv3.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/skylb/claims/"+name+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), "/skylb/claims/"+name+"/"))
	}
	return out
}

func equalEventually(t *testing.T, what string, got func() []string, want ...string) {
	t.Helper()
	var last []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if last = got(); slices.Equal(last, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %q, want %q", what, last, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClustersFirstClaimHoldsAName(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	a := startCluster(t, c, "east", 0)
	b := startCluster(t, c, "west", 0)
	const name = "web.example.org"

	a.set(name, "192.0.2.1", false)
	waitIdle(t, a.pub)
	b.set(name, "192.0.2.2", false)
	waitIdle(t, b.pub)
	if got := hosts(t, c, name); !slices.Equal(got, []string{"east=192.0.2.1"}) {
		t.Fatalf("records = %q, want only east's", got)
	}
	if got := b.verdict(name); got != "refused by east" {
		t.Errorf("west's verdict = %q", got)
	}
	// What the views follow (see gate.go).
	answers := func(want bool, ps ...*publish.Publisher) {
		t.Helper()
		eventually(t, fmt.Sprintf("Answers(%s) = %v", name, want), func() bool {
			for _, p := range ps {
				if p.Answers(name) != want {
					return false
				}
			}
			return true
		})
	}
	answers(true, a.pub)
	answers(false, b.pub)
	if got := claimsOf(t, c, name); !slices.Equal(got, []string{"east", "west"}) {
		t.Errorf("claims = %q; the refused cluster keeps its claim to take over later", got)
	}

	// Marking it shared in one cluster is not enough.
	b.set(name, "192.0.2.2", true)
	waitIdle(t, b.pub)
	if got := hosts(t, c, name); !slices.Equal(got, []string{"east=192.0.2.1"}) {
		t.Fatalf("records = %q after west alone shares it", got)
	}

	// Shared in both: the answers merge.
	a.set(name, "192.0.2.1", true)
	equalEventually(t, "records of a shared name", func() []string { return hosts(t, c, name) }, "east=192.0.2.1", "west=192.0.2.2")
	// West is told once its view has east's claim: the records may come first.
	equalEventually(t, "west's verdict after both share it", func() []string { return []string{b.verdict(name)} }, "granted")
	answers(true, a.pub, b.pub)

	// The first holder withdrawing the sharing takes the name back.
	a.set(name, "192.0.2.1", false)
	equalEventually(t, "records after east stops sharing", func() []string { return hosts(t, c, name) }, "east=192.0.2.1")
	answers(false, b.pub)

	// The first holder removing the name hands it over to the waiting claim.
	a.pub.Set(name, publish.Want{})
	equalEventually(t, "records after east removes the name", func() []string { return hosts(t, c, name) }, "west=192.0.2.2")
	equalEventually(t, "claims after east removes the name", func() []string { return claimsOf(t, c, name) }, "west")
	answers(true, b.pub)

	// Removing it everywhere leaves nothing behind.
	b.pub.Set(name, publish.Want{})
	waitIdle(t, b.pub)
	if got, claims := hosts(t, c, name), claimsOf(t, c, name); len(got) != 0 || len(claims) != 0 {
		t.Errorf("after both removed the name: records %q, claims %q", got, claims)
	}
}

func TestClustersRacingForNamesHaveOneWinnerEach(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	const names = 60
	clusters := []*cluster{startCluster(t, c, "east", 0), startCluster(t, c, "west", 0), startCluster(t, c, "north", 0)}
	var wg sync.WaitGroup
	for i, cl := range clusters {
		wg.Go(func() {
			for n := range names {
				cl.set(fmt.Sprintf("n%02d.example.org", n), fmt.Sprintf("192.0.2.%d", i+1), false)
			}
		})
	}
	wg.Wait()
	for _, cl := range clusters {
		waitIdle(t, cl.pub)
	}
	// Every decision refused is retried until the watch has delivered the
	// winner's claim; wait for the records to settle.
	time.Sleep(500 * time.Millisecond)
	for _, cl := range clusters {
		waitIdle(t, cl.pub)
	}
	for n := range names {
		name := fmt.Sprintf("n%02d.example.org", n)
		got := hosts(t, c, name)
		if len(got) != 1 {
			t.Errorf("%s: records %q, want exactly one cluster's", name, got)
			continue
		}
		winner := strings.Split(got[0], "=")[0]
		for _, cl := range clusters {
			want := "granted"
			if cl.owner != winner {
				want = "refused by " + winner
			}
			if v := cl.verdict(name); v != want && !(want == "granted" && v == "") {
				t.Errorf("%s: %s's verdict = %q, want %q", name, cl.owner, v, want)
			}
		}
	}
}

func TestRecordsExpireWithTheirCluster(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	const expiry = 2 * time.Second
	a := startCluster(t, c, "east", expiry)
	b := startCluster(t, c, "west", expiry)
	const name = "web.example.org"
	a.set(name, "192.0.2.1", true)
	b.set(name, "192.0.2.2", true)
	equalEventually(t, "records of both", func() []string { return hosts(t, c, name) }, "east=192.0.2.1", "west=192.0.2.2")

	// Outliving the TTL several times over: the lease is renewed.
	time.Sleep(3 * expiry)
	if got := hosts(t, c, name); len(got) != 2 {
		t.Fatalf("records = %q while both clusters run", got)
	}

	stopped := time.Now()
	a.stop()
	equalEventually(t, "records after east stopped", func() []string { return hosts(t, c, name) }, "west=192.0.2.2")
	equalEventually(t, "claims after east stopped", func() []string { return claimsOf(t, c, name) }, "west")
	if d := time.Since(stopped); d > expiry+2*time.Second {
		t.Errorf("east's records expired after %v, want about %v", d, expiry)
	}

	// East returns: its records are written again, with a new lease.
	a = startCluster(t, c, "east", expiry)
	a.set(name, "192.0.2.1", true)
	equalEventually(t, "records after east returned", func() []string { return hosts(t, c, name) }, "east=192.0.2.1", "west=192.0.2.2")
}

func TestRestartAdoptsTheLeaseAndWritesNothing(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	const expiry = 10 * time.Second
	names := []string{"a.example.org", "b.example.org", "c.example.org"}
	first := startCluster(t, c, "east", expiry)
	for _, n := range names {
		first.set(n, "192.0.2.1", false)
	}
	waitIdle(t, first.pub)
	// The claims carry the lease; the records they hold, none (see sweep.go).
	eventually(t, "claims leased", func() bool {
		return leased(t, c, "/skylb/claims/") == len(names) && leased(t, c, "/skydns/") == 0
	})
	first.stop()

	before := etcdtest.Revision(t, c)
	// As skylb restarts: its names set before its wants are complete.
	second := startClusterWith(t, c, "east", func(cfg *publish.Config) { cfg.RecordExpiry = expiry }, func(cl *cluster) {
		for _, n := range names {
			cl.set(n, "192.0.2.1", false)
		}
	})
	waitIdle(t, second.pub)
	// The lease is adopted asynchronously; give it the time of a few renewals.
	time.Sleep(time.Second)
	waitIdle(t, second.pub)
	if after := etcdtest.Revision(t, c); after != before {
		t.Errorf("restart changed the revision from %d to %d", before, after)
	}
	if s := second.pub.Stats(); s.Puts != 0 || s.Deletes != 0 {
		t.Errorf("restart wrote %d keys and deleted %d", s.Puts, s.Deletes)
	}
}

// leased counts the keys under prefix attached to a lease.
func leased(t *testing.T, c *clientv3.Client, prefix string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 {
			n++
		}
	}
	return n
}

// The names of the tests of nested names.
const (
	upper = "x.example.org"
	lower = "a.x.example.org"
)

// eastAndWest starts an etcd and two clusters publishing into it.
func eastAndWest(t *testing.T) (*clientv3.Client, *cluster, *cluster) {
	t.Helper()
	c := etcdtest.Start(t).NewClient(t)
	return c, startCluster(t, c, "east", 0), startCluster(t, c, "west", 0)
}

func TestClustersNameBeneathAnotherClustersIsRefused(t *testing.T) {
	c, a, b := eastAndWest(t)

	a.set(upper, "192.0.2.1", false)
	waitIdle(t, a.pub)
	b.set(lower, "192.0.2.2", false)
	waitIdle(t, b.pub)
	if got := b.verdict(lower); got != "refused beside east" {
		t.Errorf("west's verdict on %s = %q, want refused beside east", lower, got)
	}
	// CoreDNS answers x.example.org with everything beneath it.
	if got := hosts(t, c, upper); !slices.Equal(got, []string{"east=192.0.2.1"}) {
		t.Errorf("records at and beneath %s = %q, want only east's", upper, got)
	}
	if got := claimsOf(t, c, lower); !slices.Equal(got, []string{"west"}) {
		t.Errorf("claims on %s = %q; the refused cluster keeps its claim to take over later", lower, got)
	}

	// The holder removing its name hands the nested one over.
	a.pub.Set(upper, publish.Want{})
	equalEventually(t, "records after east removes "+upper, func() []string { return hosts(t, c, upper) }, "west=192.0.2.2")
	waitIdle(t, b.pub)
	if got := b.verdict(lower); got != "granted" {
		t.Errorf("west's verdict on %s = %q after east removed %s, want granted", lower, got, upper)
	}
}

func TestClustersStartingBeneathAnotherClustersNameWaits(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	a := startCluster(t, c, "east", 0)
	a.set(upper, "192.0.2.1", false)
	waitIdle(t, a.pub)

	// West reads east's claim when it loads, not from its watch.
	b := startCluster(t, c, "west", 0)
	b.set(lower, "192.0.2.2", false)
	waitIdle(t, b.pub)
	if got := b.verdict(lower); got != "refused beside east" {
		t.Errorf("west's verdict on %s = %q, want refused beside east", lower, got)
	}
	a.pub.Set(upper, publish.Want{})
	equalEventually(t, "records after east removes "+upper, func() []string { return hosts(t, c, upper) }, "west=192.0.2.2")
}

func TestClustersNameAboveAnotherClustersIsRefused(t *testing.T) {
	c, a, b := eastAndWest(t)

	b.set(lower, "192.0.2.2", false)
	waitIdle(t, b.pub)
	a.set(upper, "192.0.2.1", false)
	// East may publish before its watch has brought west's claim beneath;
	// then it withdraws.
	equalEventually(t, "records at and beneath "+upper, func() []string { return hosts(t, c, upper) }, "west=192.0.2.2")
	equalEventually(t, "east's verdict on "+upper, func() []string { return []string{a.verdict(upper)} }, "refused beside west")
	if got := claimsOf(t, c, upper); !slices.Equal(got, []string{"east"}) {
		t.Errorf("claims on %s = %q, want east's waiting one", upper, got)
	}

	b.pub.Set(lower, publish.Want{})
	equalEventually(t, "records after west removes "+lower, func() []string { return hosts(t, c, upper) }, "east=192.0.2.1")
	waitIdle(t, a.pub)
	if got := a.verdict(upper); got != "granted" {
		t.Errorf("east's verdict on %s = %q after west removed %s, want granted", upper, got, lower)
	}
}

// withSRV returns the records of a name with one address and an SRV record
// beneath it, held with the name as a Service's named port is.
func withSRV(name, host string) []skydns.Record {
	return []skydns.Record{rec(name, host), {Name: "_http._tcp." + name, Host: name, Port: 80, TTL: 30, Source: "service/default/web"}}
}

func TestClustersSharingANameShareItsSRVRecords(t *testing.T) {
	c, a, b := eastAndWest(t)
	const name = "web.example.org"
	a.pub.Set(name, publish.Want{Records: withSRV(name, "192.0.2.1"), Shared: true})
	waitIdle(t, a.pub)
	b.pub.Set(name, publish.Want{Records: withSRV(name, "192.0.2.2"), Shared: true})
	waitIdle(t, b.pub)
	want := []string{"east=192.0.2.1", "east=web.example.org", "west=192.0.2.2", "west=web.example.org"}
	if got := hosts(t, c, name); !slices.Equal(got, want) {
		t.Errorf("records at and beneath %s = %q, want %q", name, got, want)
	}
	// The SRV records are held by the name's claim, not by claims of their own.
	if got := claimsOf(t, c, "_http._tcp."+name); len(got) != 0 {
		t.Errorf("claims on the SRV name = %q, want none", got)
	}

	// East no longer sharing the name takes back its SRV records too.
	a.pub.Set(name, publish.Want{Records: withSRV(name, "192.0.2.1")})
	equalEventually(t, "records after east stops sharing", func() []string { return hosts(t, c, name) }, "east=192.0.2.1", "east=web.example.org")
	// The decision is told once its transaction has committed: etcd shows
	// it first.
	equalEventually(t, "west's verdict on "+name, func() []string { return []string{b.verdict(name)} }, "refused by east")
}

// Versions before the SRV records were held with their name claimed each SRV
// name on its own. A start over such claims keeps the records as they are and
// deletes the cluster's own claims on the SRV names; another cluster's are
// left to it.
func TestClaimsOfSRVNamesFromBeforeAreDropped(t *testing.T) {
	c := etcdtest.Start(t).NewClient(t)
	const name = "web.example.org"
	recs := withSRV(name, "192.0.2.1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range recs {
		k, v := skydns.Key("/skydns", "east", r), string(skydns.Encode("east", r))
		if _, err := c.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, owner := range []string{"east", "west"} {
		for _, n := range []string{name, "_http._tcp." + name} {
			if n == name && owner == "west" {
				continue
			}
			if _, err := c.Put(ctx, "/skylb/claims/"+n+"/"+owner, `{"owner":"`+owner+`"}`); err != nil {
				t.Fatal(err)
			}
		}
	}
	srvKey := skydns.Key("/skydns", "east", recs[1])
	before, err := c.Get(ctx, srvKey)
	if err != nil || len(before.Kvs) != 1 {
		t.Fatalf("get %s: %v", srvKey, err)
	}

	// As the controller does: every name set, then Complete, then Run.
	pub := publish.New(c, publish.Config{Prefix: "/skydns", Owner: "east", Timeout: 2 * time.Second, Log: quietLog(), ClaimPrefix: "/skylb/claims"})
	pub.Set(name, publish.Want{Records: recs})
	pub.Complete()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pub.Run(runCtx)
	}()
	defer func() { stop(); <-done }()
	equalEventually(t, "claims on the SRV name", func() []string { return claimsOf(t, c, "_http._tcp."+name) }, "west")
	waitIdle(t, pub)
	if got := claimsOf(t, c, name); !slices.Equal(got, []string{"east"}) {
		t.Errorf("claims on %s = %q, want east's", name, got)
	}
	after, err := c.Get(ctx, srvKey)
	if err != nil || len(after.Kvs) != 1 {
		t.Fatalf("get %s: %v", srvKey, err)
	}
	if after.Kvs[0].ModRevision != before.Kvs[0].ModRevision {
		t.Errorf("the SRV record was written again (revision %d, was %d): it should be kept as it is", after.Kvs[0].ModRevision, before.Kvs[0].ModRevision)
	}
}

func TestClustersRacingForNestedNamesHaveOneWinner(t *testing.T) {
	const pairs = 40
	c, a, b := eastAndWest(t)
	upper := func(i int) string { return fmt.Sprintf("n%02d.example.org", i) }
	lower := func(i int) string { return "a." + upper(i) }
	var wg sync.WaitGroup
	// Both ask for the names of a pair at about the same moment, one pair
	// after the other, so that each flush races the other cluster's.
	for _, ask := range []func(int){
		func(i int) { a.set(upper(i), "192.0.2.1", false) },
		func(i int) { b.set(lower(i), "192.0.2.2", false) },
	} {
		wg.Go(func() {
			for i := range pairs {
				ask(i)
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	settled := func() []string {
		time.Sleep(500 * time.Millisecond)
		waitIdle(t, a.pub)
		waitIdle(t, b.pub)
		var out []string
		for i := range pairs {
			out = append(out, strings.Join(hosts(t, c, upper(i)), " "))
		}
		return out
	}
	first := settled()
	wins := map[string]int{}
	for i, got := range first {
		wins[got]++
		var want string
		switch got {
		case "east=192.0.2.1":
			want = "refused beside east"
			if v := b.verdict(lower(i)); v != want {
				t.Errorf("%s: west's verdict = %q, want %q", lower(i), v, want)
			}
		case "west=192.0.2.2":
			want = "refused beside west"
			if v := a.verdict(upper(i)); v != want {
				t.Errorf("%s: east's verdict = %q, want %q", upper(i), v, want)
			}
		default:
			t.Errorf("records at and beneath %s = %q, want exactly one cluster's", upper(i), got)
		}
	}
	t.Logf("winners: %v", wins)
	// The outcome holds: nothing flaps once both have read each other's claims.
	if again := settled(); !slices.Equal(again, first) {
		t.Errorf("records changed after settling:\n%q\nthen\n%q", first, again)
	}
}
