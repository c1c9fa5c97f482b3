package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/miekg/dns"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/test/stack"
)

// Bounds of the waits after a fault. They are limits for a failure, not
// targets: the report gives the times measured.
const (
	convergeLimit = 90 * time.Second
	// CoreDNS's own etcd client reconnects with gRPC's default backoff,
	// which grows towards two minutes while etcd is away.
	dnsLimit = 90 * time.Second
)

// etcdBackLimit bounds the time from etcd's return after an outage to etcd
// holding the desired records (fault 3): the 2 s of skylb's longest retry
// delay, and as much again and more for a loaded machine.
const etcdBackLimit = 5 * time.Second

// baseServices is the number of Services svc-000... every fault starts from.
const baseServices = 200

func svcName(i int) string { return fmt.Sprintf("svc-%03d", i) }

// TestFaults runs the faults one after another on one stack; each leaves the
// stack whole for the next.
func TestFaults(t *testing.T) {
	limit := 18 * time.Minute
	if *long {
		limit += downFor() + hungFor()
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	t0 := time.Now()
	if err := parallel(baseServices, 8, func(i int) error { return createService(ctx, svcName(i), addresses(2, i)) }); err != nil {
		t.Fatal(err)
	}
	if took, err := converge(ctx, time.Now(), convergeLimit); err != nil {
		t.Fatalf("before any fault: %v", err)
	} else {
		t.Logf("%d Services created and published in %s (%s after the last creation)", baseServices, seconds(time.Since(t0)), seconds(took))
	}

	fault(t, "1. kill -9 of the etcd leader during a burst of 500 Service changes",
		"etcd holds exactly the desired records; CoreDNS answers; skylb did not crash", leaderKill)
	fault(t, "2. SIGSTOP for 30 s of the etcd member skylb watches",
		"changes made during the pause land (no reconcile hangs); then the invariant", memberPause)
	fault(t, fmt.Sprintf("3. all of etcd down for %s while Services change", seconds(downFor())),
		"skylb keeps running, bounded memory, rate-limited logs; converges within 5 s of etcd's return", etcdDown)
	fault(t, "4. compaction past skylb's watch revision while skylb is paused",
		"skylb lists again (skylb_etcd_relists_total) and repairs what changed unseen; then the invariant", compaction)
	fault(t, "5. kube-apiserver down for 60 s",
		"nothing in etcd changes while it is down; changes made after it returns land within 5 s", apiServerDown)
	fault(t, "6. kill -9 of skylb while it writes 2,000 records",
		"killed mid-write: some names written, each whole; the restarted skylb writes the rest, with no orphan of deleted Services", skylbKill)
	fault(t, "7. etcd out of space (NOSPACE alarm)",
		"skylb keeps running, backs off (over 10 s, at least 3 refused transactions and at most 3 a second), logs it and sets skylb_etcd_no_space; no name half-written; recovers after the alarm is disarmed", noSpace)
	fault(t, "8. client certificate rotated by a Secret-style symlink swap",
		"new connections use the new pair (a different etcd user) without a restart", certRotation)
	fault(t, fmt.Sprintf("9. every etcd member hung (SIGSTOP) for %s", seconds(hungFor())),
		"CoreDNS answers the names asked before from its cache, stays Ready; then the invariant", etcdHung)
	fault(t, "10. quorum lost: two of three etcd members down for 30 s",
		"CoreDNS answers the names asked before from its cache, stays Ready; then the invariant", quorumLost)
	fault(t, "11. every client's certificate refused for 30 s (etcd restarted trusting another CA)",
		"CoreDNS answers the names asked before from its cache, stays Ready; changes made meanwhile land once etcd trusts the clients again", certsRefused)
}

// etcdHung: every member of the DNS etcd stopped (SIGSTOP) for 30 s: its
// connections stay open and nothing answers, the worst case for a client.
func etcdHung(t *faultT) {
	ctx := context.Background()
	probe := startDNSProbe(ctx, t, probeNames())
	for _, m := range st.EtcdCluster {
		if err := st.Proc(m.Name).Pause(); err != nil {
			t.Fatalf("pause %s: %v", m.Name, err)
		}
	}
	paused := time.Now()
	time.Sleep(hungFor())
	probe.stop(t)
	for _, m := range st.EtcdCluster {
		if err := st.Proc(m.Name).Resume(); err != nil {
			t.Fatalf("resume %s: %v", m.Name, err)
		}
	}
	end := time.Now()
	t.Notef("hung %s", seconds(end.Sub(paused)))
	settle(ctx, t, end, nil)
}

// quorumLost: two of the three members killed for 30 s; the third runs
// and refuses what needs a quorum (every read CoreDNS and skylb make).
func quorumLost(t *faultT) {
	ctx := context.Background()
	probe := startDNSProbe(ctx, t, probeNames())
	down := st.EtcdCluster[:2]
	for _, m := range down {
		if err := st.Proc(m.Name).Kill(); err != nil {
			t.Fatalf("kill %s: %v", m.Name, err)
		}
	}
	killed := time.Now()
	time.Sleep(30 * time.Second)
	probe.stop(t)
	for _, m := range down {
		if err := st.Proc(m.Name).Restart(ctx); err != nil {
			t.Fatalf("restart %s: %v", m.Name, err)
		}
	}
	end := time.Now()
	t.Notef("%s and %s down %s", down[0].Name, down[1].Name, seconds(end.Sub(killed)))
	settle(ctx, t, end, nil)
}

// certsRefused: etcd's members restarted trusting another CA for their
// clients, as after a botched CA rotation. Every client's certificate
// (skylb's, CoreDNS's) is refused at the handshake for 30 s; the peers still
// trust each other, so etcd keeps its quorum. A Service changes meanwhile.
func certsRefused(t *faultT) {
	ctx := context.Background()
	probe := startDNSProbe(ctx, t, probeNames())
	other := filepath.Join(t.TempDir(), "other-ca.crt")
	if err := newCA(other); err != nil {
		t.Fatalf("%v", err)
	}
	stackCA, err := os.Readlink(clientsCA)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := relink(clientsCA, other); err != nil {
		t.Fatalf("%v", err)
	}
	// Respawn: a member that refuses the test's own certificate never
	// passes the stack's readiness check.
	if err := eachMember((*stack.Proc).Respawn); err != nil {
		t.Fatalf("restart etcd: %v", err)
	}
	refused := time.Now()
	// The members refuse the stack's certificates: root's here.
	c, err := st.EtcdClient("root")
	if err != nil {
		t.Fatalf("%v", err)
	}
	gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, refusal := c.Get(gctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	c.Close()
	if refusal == nil {
		t.Fatalf("etcd still serves a client whose certificate its new CA did not sign")
	}
	if err := setAddresses(ctx, svcName(60), addresses(2, 9100)); err != nil {
		t.Fatalf("%v", err)
	}
	time.Sleep(30*time.Second - time.Since(refused))
	probe.stop(t)
	if err := relink(clientsCA, stackCA); err != nil {
		t.Fatalf("%v", err)
	}
	if err := eachMember(func(p *stack.Proc) error { return p.Restart(ctx) }); err != nil {
		t.Fatalf("restart etcd: %v", err)
	}
	end := time.Now()
	t.Notef("refused %s (a client of the stack's CA: %v)", seconds(end.Sub(refused)), shortErr(refusal))
	settle(ctx, t, end, nil)
}

// eachMember calls f with the process of every member of the DNS etcd, all
// at once.
func eachMember(f func(*stack.Proc) error) error {
	return parallel(len(st.EtcdCluster), len(st.EtcdCluster), func(i int) error { return f(st.Proc(st.EtcdCluster[i].Name)) })
}

// settle checks the invariant after a fault that ended at end: etcd holds
// exactly the desired records, CoreDNS answers a sample of names (and
// NXDOMAIN for gone ones), skylb is the process it was.
func settle(ctx context.Context, t *faultT, end time.Time, gone []string) {
	t.Helper()
	conv, err := converge(ctx, end, convergeLimit)
	if err != nil {
		t.Errorf("%v", err)
	} else {
		t.row.converge = conv
		t.Logf("etcd holds the desired records %s after the fault", seconds(conv))
	}
	if took, err := dnsSample(ctx, end, gone, dnsLimit); err != nil {
		t.Errorf("%v", err)
	} else {
		t.row.dns = took
	}
	checkAlive(t)
}

// checkAlive fails unless skylb is still the process of skylbPID.
func checkAlive(t *faultT) {
	t.Helper()
	p := st.Proc("skylb")
	if !p.Running() || p.PID() != skylbPID {
		t.Errorf("skylb crashed: pid %d running=%v, want pid %d (%v)", p.PID(), p.Running(), skylbPID, p.ExitError())
	}
}

func rootClient(t *faultT) *clientv3.Client {
	t.Helper()
	c, err := st.EtcdClient("root")
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// watchMember returns the member that holds skylb's watch: the only watch on
// the DNS etcd (CoreDNS and the checks here only read), seen in each member's
// etcd_debugging_mvcc_watch_stream_total.
func watchMember(ctx context.Context) (stack.EtcdMember, error) {
	for _, m := range st.EtcdCluster {
		v, err := etcdMetric(ctx, m, "etcd_debugging_mvcc_watch_stream_total")
		if err == nil && v > 0 {
			return m, nil
		}
	}
	return stack.EtcdMember{}, fmt.Errorf("no member holds a watch stream")
}

// etcdMetric returns the value of a metric without labels on a member's
// /metrics, or an error after 2 s (a paused member does not answer).
func etcdMetric(ctx context.Context, m stack.EtcdMember, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return stack.Metric(ctx, strings.TrimPrefix(m.MetricsURL, "http://"), name)
}

// leaderKill: kill -9 of the etcd leader during a burst of 500 Service changes.
func leaderKill(t *faultT) {
	ctx := context.Background()
	leader, err := st.EtcdLeader(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// 300 creations, 100 address changes, 100 deletions, eight at a time.
	var done atomic.Int64
	var gone []string
	op := func(i int) error {
		defer done.Add(1)
		switch i % 5 {
		case 0, 1, 2:
			return createService(ctx, fmt.Sprintf("burst-%03d", i), addresses(2, 1000+i))
		case 3:
			return setAddresses(ctx, svcName(i/5), addresses(3, 2000+i))
		default:
			return deleteService(ctx, svcName(100+i/5))
		}
	}
	for i := 4; i < 500; i += 5 {
		gone = append(gone, dnsName(svcName(100+i/5)))
	}
	burst := make(chan error, 1)
	start := time.Now()
	go func() { burst <- parallel(500, 8, op) }()
	for done.Load() < 150 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := st.Proc(leader.Name).Kill(); err != nil {
		t.Fatalf("kill %s: %v", leader.Name, err)
	}
	killedAt := done.Load()
	if err := <-burst; err != nil {
		t.Errorf("burst: %v", err)
	}
	end := time.Now()
	// The burst may end before the remaining members have elected a leader.
	var next stack.EtcdMember
	for {
		next, err = st.EtcdLeader(ctx)
		if err == nil || time.Since(end) > 15*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("after the kill: %v", err)
	}
	t.Notef("leader %s killed after %d of 500 changes, %s leads now (%s after the burst); burst took %s", leader.Name, killedAt, next.Name, seconds(time.Since(end)), seconds(end.Sub(start)))
	settle(ctx, t, end, gone[:10])
	if err := st.Proc(leader.Name).Restart(ctx); err != nil {
		t.Fatalf("restart %s: %v", leader.Name, err)
	}
}

// nameHosts returns the hosts of the records stored at a name, read from etcd;
// not those beneath it, where its SRV records are.
func nameHosts(ctx context.Context, c *clientv3.Client, name string) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	dir := stack.StoredPath(name) + "/"
	kvs, err := dump(cctx, c, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for k, v := range kvs {
		if strings.Contains(strings.TrimPrefix(k, dir), "/") {
			continue
		}
		h := v[strings.Index(v, `"host":"`)+8:]
		out = append(out, h[:strings.IndexByte(h, '"')])
	}
	slices.Sort(out)
	return out, nil
}

// memberPause: the etcd member skylb watches from is stopped (SIGSTOP) for 30 s.
func memberPause(t *faultT) {
	ctx := context.Background()
	m, err := watchMember(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	leader, _ := st.EtcdLeader(ctx)
	c := rootClient(t)
	p := st.Proc(m.Name)
	if err := p.Pause(); err != nil {
		t.Fatalf("pause %s: %v", m.Name, err)
	}
	paused := time.Now()
	defer p.Resume()
	var slowest time.Duration
	changes := 0
	for i := 0; time.Since(paused) < 30*time.Second; i++ {
		name := svcName(i % 100)
		want := addresses(2, 3000+i)
		t0 := time.Now()
		if err := setAddresses(ctx, name, want); err != nil {
			t.Fatalf("%v", err)
		}
		for {
			got, err := nameHosts(ctx, c, dnsName(name))
			slices.Sort(want)
			if err == nil && slices.Equal(got, want) {
				break
			}
			if time.Since(t0) > 25*time.Second {
				t.Fatalf("a change made while %s was paused did not land within 25 s: %s has %q, want %q (%v)", m.Name, dnsName(name), got, want, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		changes++
		slowest = max(slowest, time.Since(t0))
	}
	if err := p.Resume(); err != nil {
		t.Fatalf("resume %s: %v", m.Name, err)
	}
	end := time.Now()
	role := "a follower"
	if leader.Name == m.Name {
		role = "the leader"
	}
	t.Notef("paused %s (%s); %d changes made during the pause, the slowest landed in %s", m.Name, role, changes, seconds(slowest))
	settle(ctx, t, end, nil)
}

// etcdDown: every member of the DNS etcd down for 60 s while Services change.
func etcdDown(t *faultT) {
	ctx := context.Background()
	pid := st.Proc("skylb").PID()
	rss0, err := rssBytes(pid)
	if err != nil {
		t.Fatalf("%v", err)
	}
	logOffset := logSize("skylb")
	reloads0, _ := reloaderState()
	// A name published, and never asked of CoreDNS: its cache has nothing
	// to serve for it while etcd is away.
	unasked := dnsName("unasked")
	if err := createService(ctx, "unasked", addresses(2, 4100)); err != nil {
		t.Fatalf("%v", err)
	}
	c := rootClient(t)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if hosts, err := nameHosts(ctx, c, unasked); err == nil && len(hosts) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not in etcd 30 s after its Service was created", unasked)
		}
	}
	probe := startDNSProbe(ctx, t, probeNames())
	if err := eachMember((*stack.Proc).Kill); err != nil {
		t.Fatalf("stop etcd: %v", err)
	}
	down := time.Now()
	// Asked with a timeout past the etcd plugin's 5 s, to see how long a
	// client waits.
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(unasked), dns.TypeA)
	t0 := time.Now()
	r, _, qerr := (&dns.Client{Net: "udp", Timeout: 10 * time.Second}).Exchange(q, st.DNSAddr)
	answer := fmt.Sprintf("no answer (%v)", qerr)
	if qerr == nil {
		answer = dns.RcodeToString[r.Rcode]
	}
	t.Notef("a name published but never asked: %s after %s", answer, time.Since(t0).Round(time.Millisecond))
	var gone []string
	err = parallel(30, 4, func(i int) error {
		switch i % 3 {
		case 0:
			return createService(ctx, fmt.Sprintf("outage-%02d", i), addresses(2, 4000+i))
		case 1:
			return setAddresses(ctx, svcName(i), addresses(2, 4000+i))
		default:
			return deleteService(ctx, fmt.Sprintf("burst-%03d", i*5))
		}
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	for i := 2; i < 30; i += 3 {
		gone = append(gone, dnsName(fmt.Sprintf("burst-%03d", i*5)))
	}
	maxRSS := rss0
	for time.Since(down) < downFor() {
		if rss, err := rssBytes(pid); err == nil {
			maxRSS = max(maxRSS, rss)
		}
		if !st.Proc("skylb").Running() {
			t.Fatalf("skylb exited while etcd was down (%v)", st.Proc("skylb").ExitError())
		}
		time.Sleep(time.Second)
	}
	lines := logSince("skylb", logOffset)
	probe.stop(t)
	if err := eachMember(func(p *stack.Proc) error { return p.Restart(ctx) }); err != nil {
		t.Fatalf("restart etcd: %v", err)
	}
	back := time.Now()
	t.Notef("down %s; skylb RSS %d MiB before, at most %d MiB during; %d log lines in the outage", seconds(back.Sub(down)), rss0>>20, maxRSS>>20, len(lines))
	if len(lines) > 60 {
		t.Errorf("skylb logged %d lines in a %s outage; the last: %s", len(lines), seconds(back.Sub(down)), lines[len(lines)-1])
	}
	if maxRSS-rss0 > 64<<20 {
		t.Errorf("skylb's memory grew by %d MiB while etcd was down", (maxRSS-rss0)>>20)
	}
	settle(ctx, t, back, gone)
	// skylb's write retries back off up to 2 s (maxRetryDelay, as its etcd
	// client's reconnects), so it writes again within about 2 s of etcd's
	// return.
	if t.row.converge > etcdBackLimit {
		t.Errorf("etcd held the desired records %s after etcd returned, want within %s", seconds(t.row.converge), seconds(etcdBackLimit))
	}
	// CoreDNS's own client would reconnect after gRPC's backoff; the
	// reloader beside it has it reconnect at once.
	reloads, _ := reloaderState()
	reloads -= reloads0
	t.Notef("coredns-reloader reloaded CoreDNS %d times", reloads)
	if reloads == 0 {
		t.Errorf("coredns-reloader did not reload CoreDNS after the outage")
	}
	if limit := time.Duration(st.CacheTTL)*time.Second + 2*time.Second; t.row.dns > limit {
		t.Errorf("CoreDNS answered the changes %s after etcd returned, want within the cache TTL + 2 s (%s)", seconds(t.row.dns), seconds(limit))
	}
}

// compaction: etcd compacts past skylb's watch revision while skylb is paused.
//
// skylb is paused first and then the member holding its watch, so that no
// event of what follows reaches skylb's socket; the other two members delete
// one of skylb's records, add an orphan record in skylb's name, and compact
// past it all. The watch member is then killed: when skylb resumes its watch
// must start again from a compacted revision on another member.
func compaction(t *faultT) {
	ctx := context.Background()
	relists0, err := stack.Metric(ctx, st.Proc("skylb").HTTPAddr(), "skylb_etcd_relists_total")
	if err != nil {
		t.Fatalf("%v", err)
	}
	m, err := watchMember(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The changes go through the two other members only.
	var others []string
	for _, o := range st.EtcdCluster {
		if o.Name != m.Name {
			others = append(others, o.ClientURL)
		}
	}
	c, err := st.EtcdClientAt("root", others)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer c.Close()
	d, err := desired(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var victim string
	for _, k := range slices.Sorted(maps.Keys(d.records)) {
		if strings.HasPrefix(d.records[k].Source, "service/"+ns+"/svc-") {
			victim = k
			break
		}
	}
	ghostName := dnsName("ghost")
	ghost := recordKey(ghostName, "192.0.2.99")
	skylb, member := st.Proc("skylb"), st.Proc(m.Name)
	if err := skylb.Pause(); err != nil {
		t.Fatalf("%v", err)
	}
	defer skylb.Resume()
	if err := member.Pause(); err != nil {
		t.Fatalf("%v", err)
	}
	defer member.Resume()
	// The paused member may be the leader: the two others then elect a new
	// one, and a request made meanwhile times out. Each call is retried.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := retry(cctx, func(ctx context.Context) error {
		_, err := c.Delete(ctx, victim)
		return err
	}); err != nil {
		t.Fatalf("delete %s: %v", victim, err)
	}
	var rev int64
	if err := retry(cctx, func(ctx context.Context) error {
		resp, err := c.Put(ctx, ghost, fmt.Sprintf(`{"host":"192.0.2.99","ttl":30,"owner":%q,"source":"service/%s/ghost"}`, owner, ns))
		if err == nil {
			rev = resp.Header.Revision
		}
		return err
	}); err != nil {
		t.Fatalf("put %s: %v", ghost, err)
	}
	if err := retry(cctx, func(ctx context.Context) error {
		_, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical())
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil // an earlier attempt did it
		}
		return err
	}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	if err := member.Kill(); err != nil {
		t.Fatalf("%v", err)
	}
	if err := skylb.Resume(); err != nil {
		t.Fatalf("%v", err)
	}
	end := time.Now()
	t.Notef("compacted at revision %d while skylb and %s were paused", rev, m.Name)
	settle(ctx, t, end, []string{ghostName})
	if relists, err := stack.Metric(ctx, st.Proc("skylb").HTTPAddr(), "skylb_etcd_relists_total"); err != nil || relists <= relists0 {
		t.Errorf("skylb_etcd_relists_total %v -> %v (%v): skylb did not list again", relists0, relists, err)
	}
	if err := member.Restart(ctx); err != nil {
		t.Fatalf("restart %s: %v", m.Name, err)
	}
}

// apiDownFor is how long kube-apiserver is down (fault 5), whatever -long.
const apiDownFor = 60 * time.Second

// apiServerDown: kube-apiserver down for 60 s.
func apiServerDown(t *faultT) {
	ctx := context.Background()
	c := rootClient(t)
	// Start from a settled state: what follows must see no write at all.
	if _, err := converge(ctx, time.Now(), convergeLimit); err != nil {
		t.Fatalf("before the fault: %v", err)
	}
	before, err := c.Get(ctx, "/skydns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("%v", err)
	}
	api := st.Proc("kube-apiserver")
	if err := api.Stop(); err != nil {
		t.Fatalf("%v", err)
	}
	down := time.Now()
	for time.Since(down) < apiDownFor {
		if !st.Proc("skylb").Running() {
			t.Fatalf("skylb exited while the API server was down")
		}
		time.Sleep(time.Second)
	}
	after, err := c.Get(ctx, "/skydns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("%v", err)
	}
	if changed := diffRevisions(before.Kvs, after.Kvs); len(changed) > 0 {
		t.Errorf("etcd changed while the API server was down: %s", strings.Join(changed[:min(5, len(changed))], "; "))
	}
	if err := api.Restart(ctx); err != nil {
		t.Fatalf("restart the API server: %v", err)
	}
	// The changes are made as soon as the API server takes them.
	var gone []string
	for i := 0; ; i++ {
		if err := createService(ctx, "after-api-0", addresses(2, 5000)); err == nil {
			break
		} else if i > 100 {
			t.Fatalf("%v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	end := time.Now()
	for i := 10; i < 13; i++ {
		if err := deleteService(ctx, svcName(i)); err != nil {
			t.Fatalf("%v", err)
		}
		gone = append(gone, dnsName(svcName(i)))
	}
	if err := setAddresses(ctx, svcName(20), addresses(3, 5020)); err != nil {
		t.Fatalf("%v", err)
	}
	t.Notef("down %s; %d keys under /skydns/ unchanged", seconds(apiDownFor), len(before.Kvs))
	settle(ctx, t, end, gone)
	// skylb's informers must not have backed off while the server was away.
	if t.row.converge > apiReturnLimit {
		t.Errorf("the changes made after the API server returned landed in %s, want within %s", seconds(t.row.converge), seconds(apiReturnLimit))
	}
}

// apiReturnLimit is how soon the changes made after the API server returns
// must be in etcd.
const apiReturnLimit = 5 * time.Second

// diffRevisions lists the keys that differ between two listings.
func diffRevisions(a, b []*mvccpb.KeyValue) []string {
	revs := map[string]int64{}
	for _, kv := range a {
		revs[string(kv.Key)] = kv.ModRevision
	}
	var out []string
	for _, kv := range b {
		if r, ok := revs[string(kv.Key)]; !ok || r != kv.ModRevision {
			out = append(out, "written "+string(kv.Key))
		}
		delete(revs, string(kv.Key))
	}
	for k := range revs {
		out = append(out, "deleted "+k)
	}
	return out
}

// skylbKill: skylb killed -9 in the middle of writing 2,000 records; while it
// is dead some of the Services it was publishing go away.
//
// The skylb killed writes in transactions of at most 40 operations
// (--etcd-max-txn-ops, which --max-addresses-per-name=20 permits that low):
// each name, its 20 address records, its SRV record and its claim, makes a
// transaction of its own, 100 of them, 4 at once. Stopped at the first record
// seen, it has written some names and not others, each whole: etcd commits a
// name's keys in one transaction.
func skylbKill(t *faultT) {
	ctx := context.Background()
	c := rootClient(t)
	p := st.Proc("skylb")
	if err := p.Stop(); err != nil {
		t.Fatalf("%v", err)
	}
	const bulk, perService = 100, 20
	if err := parallel(bulk, 8, func(i int) error {
		return createService(ctx, fmt.Sprintf("bulk-%03d", i), addresses(perService, 6000+i*perService))
	}); err != nil {
		t.Fatalf("%v", err)
	}
	bulkPath := stack.StoredPath(ns+"."+zone) + "/bulk-"
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := c.Watch(wctx, bulkPath, clientv3.WithPrefix())
	// skylb is stopped (SIGSTOP) at the first record, and then killed: it
	// does nothing in between, and the stop does not wait for StartSkylb,
	// which returns a quarter of a second after the start.
	stopped := make(chan error, 1)
	go func() {
		select {
		case <-wch:
			stopped <- st.Proc("skylb").Pause()
		case <-wctx.Done():
			stopped <- wctx.Err()
		case <-time.After(60 * time.Second):
			stopped <- errors.New("skylb wrote no bulk record within 60 s")
		}
	}()
	if _, err := st.StartSkylb(ctx, append(slices.Clone(skylbArgs), "--etcd-max-txn-ops=40", fmt.Sprintf("--max-addresses-per-name=%d", perService))...); err != nil {
		t.Fatalf("%v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("%v", err)
	}
	if err := st.Proc("skylb").Kill(); err != nil {
		t.Fatalf("%v", err)
	}
	cancel()
	written, err := bulkAddresses(ctx, c, bulkPath)
	if err != nil {
		t.Fatalf("%v", err)
	}
	total, whole := 0, 0
	for name, n := range written {
		total += n
		if n == perService {
			whole++
		} else {
			t.Errorf("%s half-written at the kill: %d of %d address records", name, n, perService)
		}
	}
	t.Notef("killed with %d of %d address records written (%d whole names of %d)", total, bulk*perService, whole, bulk)
	if total == 0 || total >= bulk*perService {
		t.Errorf("the kill landed with %d of %d address records written, want some and not all: it did not interrupt the writes", total, bulk*perService)
	}
	var gone []string
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("bulk-%03d", i)
		if err := deleteService(ctx, name); err != nil {
			t.Fatalf("%v", err)
		}
		gone = append(gone, dnsName(name))
		if err := setAddresses(ctx, fmt.Sprintf("bulk-%03d", 50+i), addresses(perService, 7000+i*perService)); err != nil {
			t.Fatalf("%v", err)
		}
	}
	end := time.Now()
	restarted, err := st.StartSkylb(ctx, skylbArgs...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	skylbPID = restarted.PID()
	settle(ctx, t, end, gone)
	written, err = bulkAddresses(ctx, c, bulkPath)
	if err != nil {
		t.Fatalf("%v", err)
	}
	total = 0
	for _, n := range written {
		total += n
	}
	left := (bulk - len(gone)) * perService
	t.Notef("after the restart %d of the %d address records of the %d Services left", total, left, bulk-len(gone))
	if total != left || len(written) != bulk-len(gone) {
		t.Errorf("after the restart %d address records in %d names, want %d in %d", total, len(written), left, bulk-len(gone))
	}
}

// bulkAddresses returns the number of address records of each name beneath
// prefix, its SRV records left out.
func bulkAddresses(ctx context.Context, c *clientv3.Client, prefix string) (map[string]int, error) {
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		var rec struct{ Host string }
		if json.Unmarshal(kv.Value, &rec) != nil {
			continue
		}
		if _, err := netip.ParseAddr(rec.Host); err == nil {
			key := string(kv.Key)
			out[key[:strings.LastIndexByte(key, '/')]]++
		}
	}
	return out, nil
}

// noSpace: etcd out of space. The database is defragmented and then filled
// with junk outside skylb's prefixes until etcd raises the NOSPACE alarm;
// Services change meanwhile; then the junk is deleted, the database compacted
// and defragmented, and the alarm disarmed, as an operator would.
func noSpace(t *faultT) {
	ctx := context.Background()
	c := rootClient(t)
	if err := compactAndDefrag(ctx, c); err != nil {
		t.Fatalf("%v", err)
	}
	junk := strings.Repeat("x", 1<<20)
	filled := 0
	for ; filled < 200; filled++ {
		_, err := c.Put(ctx, fmt.Sprintf("/chaos-fill/%04d", filled), junk)
		if publish.IsNoSpace(err) {
			break
		}
		if err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	alarms, err := c.AlarmList(ctx)
	if err != nil || !hasNoSpace(alarms) {
		t.Fatalf("no NOSPACE alarm after %d MiB of junk (%v)", filled, err)
	}
	full := time.Now()
	old, err := desired(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	errs0 := noSpaceErrors(ctx, t)
	logOffset := logSize("skylb")
	var changed []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("nospace-%d", i)
		if err := createService(ctx, name, addresses(3, 8000+3*i)); err != nil {
			t.Fatalf("%v", err)
		}
		if err := setAddresses(ctx, svcName(30+i), addresses(3, 8100+3*i)); err != nil {
			t.Fatalf("%v", err)
		}
		changed = append(changed, dnsName(name), dnsName(svcName(30+i)))
	}
	var noSpaceAt time.Duration
	for {
		v, err := stack.Metric(ctx, st.Proc("skylb").HTTPAddr(), "skylb_etcd_no_space")
		if err == nil && v == 1 {
			noSpaceAt = time.Since(full)
			break
		}
		if time.Since(full) > 20*time.Second {
			t.Fatalf("skylb_etcd_no_space is %v (%v) after %s of NOSPACE, want 1", v, err, seconds(time.Since(full)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Let skylb retry for a while: it must back off, not hammer etcd, and
	// go on trying. Its retries are 100 ms apart at first, twice as far
	// each time, up to 2 s: about 10 in 10 s.
	errsSeen, waitFrom := noSpaceErrors(ctx, t), time.Now()
	time.Sleep(10 * time.Second)
	errs1 := noSpaceErrors(ctx, t)
	waited := time.Since(waitFrom)
	retries := errs1 - errsSeen
	switch {
	case retries < 3:
		t.Errorf("skylb had %.0f transactions refused in the %s after NOSPACE was seen, want at least 3: it stopped retrying", retries, seconds(waited))
	case retries > 3*waited.Seconds():
		t.Errorf("skylb had %.0f transactions refused in the %s after NOSPACE was seen, want at most 3 a second: it does not back off", retries, seconds(waited))
	}
	lines := logSince("skylb", logOffset)
	logged := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "database space exceeded") })
	if !logged {
		t.Errorf("skylb did not log the NOSPACE refusal")
	}
	now, err := desired(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, name := range changed {
		got, err := nameHosts(ctx, c, name)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if !slices.Equal(got, old.names[name]) && !slices.Equal(got, now.names[name]) {
			t.Errorf("%s is half-written during NOSPACE: %q, neither %q nor %q", name, got, old.names[name], now.names[name])
		}
	}
	checkAlive(t)
	if _, err := c.Delete(ctx, "/chaos-fill/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("%v", err)
	}
	if err := compactAndDefrag(ctx, c); err != nil {
		t.Fatalf("%v", err)
	}
	// Each member raised its own alarm: an empty AlarmMember disarms them all.
	if _, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{}); err != nil {
		t.Fatalf("disarm: %v", err)
	}
	end := time.Now()
	t.Notef("NOSPACE after %d MiB of junk; skylb_etcd_no_space 1 after %s; %.0f refused transactions in %s, %.0f in the %s after it was seen; logged",
		filled, seconds(noSpaceAt), errs1-errs0, seconds(end.Sub(full)), retries, seconds(waited))
	settle(ctx, t, end, nil)
	if v, err := stack.Metric(ctx, st.Proc("skylb").HTTPAddr(), "skylb_etcd_no_space"); err != nil || v != 0 {
		t.Errorf("skylb_etcd_no_space = %v (%v) after recovery, want 0", v, err)
	}
}

// noSpaceErrors returns skylb's count of the transactions etcd refused for
// NOSPACE (skylb_etcd_no_space_errors_total).
func noSpaceErrors(ctx context.Context, t *faultT) float64 {
	t.Helper()
	v, err := stack.Metric(ctx, st.Proc("skylb").HTTPAddr(), "skylb_etcd_no_space_errors_total")
	if err != nil {
		t.Fatalf("%v", err)
	}
	return v
}

func hasNoSpace(a *clientv3.AlarmResponse) bool {
	return a != nil && slices.ContainsFunc(a.Alarms, func(m *etcdserverpb.AlarmMember) bool { return m.Alarm == etcdserverpb.AlarmType_NOSPACE })
}

// compactAndDefrag compacts the DNS etcd at its current revision and
// defragments every member, which gives the freed space back.
func compactAndDefrag(ctx context.Context, c *clientv3.Client) error {
	resp, err := c.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	if _, err := c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !strings.Contains(err.Error(), "compacted") {
		return fmt.Errorf("compact: %w", err)
	}
	for _, m := range st.EtcdCluster {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := c.Defragment(dctx, m.ClientURL)
		cancel()
		if err != nil {
			return fmt.Errorf("defragment %s: %w", m.Name, err)
		}
	}
	return nil
}

// certRotation: skylb's client certificate is replaced the way the kubelet
// updates a mounted Secret. The new certificate is for another etcd user,
// skylb-next, with skylb's role. After the etcd members restart one by one
// (so that every connection is new), the old user loses its role: a write
// that lands afterwards was made with the new certificate.
func certRotation(t *faultT) {
	ctx := context.Background()
	c := rootClient(t)
	dir := t.TempDir()
	if err := issueClientCert(dir, "skylb-next"); err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := c.UserAddWithOptions(ctx, "skylb-next", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := c.UserGrantRole(ctx, "skylb-next", "skylb"); err != nil {
		t.Fatalf("%v", err)
	}
	if err := atomicWrite(secretDir, map[string]string{
		"tls.crt": filepath.Join(dir, "skylb-next.crt"),
		"tls.key": filepath.Join(dir, "skylb-next.key"),
		"ca.crt":  filepath.Join(st.Certs, "ca.crt"),
	}); err != nil {
		t.Fatalf("swap: %v", err)
	}
	swapped := time.Now()
	for _, m := range st.EtcdCluster {
		if err := st.Proc(m.Name).Restart(ctx); err != nil {
			t.Fatalf("restart %s: %v", m.Name, err)
		}
	}
	if _, err := c.UserRevokeRole(ctx, "skylb", "skylb"); err != nil {
		t.Fatalf("%v", err)
	}
	old, err := st.EtcdClient("skylb")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer old.Close()
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = old.Put(octx, stack.StoredPath(dnsName("old-identity"))+"/x", `{"host":"192.0.2.98"}`)
	cancel()
	if err == nil {
		t.Fatalf("the old certificate's user can still write after its role was revoked")
	}
	if err := createService(ctx, "rotated", addresses(2, 9000)); err != nil {
		t.Fatalf("%v", err)
	}
	if err := setAddresses(ctx, svcName(50), addresses(2, 9010)); err != nil {
		t.Fatalf("%v", err)
	}
	end := time.Now()
	t.Notef("members restarted one by one in %s after the swap; user skylb revoked (refused: %v)", seconds(end.Sub(swapped)), shortErr(err))
	settle(ctx, t, end, nil)
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}
