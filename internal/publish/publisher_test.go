package publish_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

const owner = "test"

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// start runs a publisher against srv until the test ends.
func start(t *testing.T, client *clientv3.Client) *publish.Publisher {
	t.Helper()
	return startWith(t, client, publish.Config{})
}

// startWith runs a publisher configured by cfg, with the test's prefix, owner
// and timeout, until the test ends; a quiet log unless cfg has one.
func startWith(t *testing.T, client *clientv3.Client, cfg publish.Config) *publish.Publisher {
	t.Helper()
	cfg.Prefix, cfg.Owner, cfg.Timeout = "/skydns", owner, 2*time.Second
	if cfg.Log == nil {
		cfg.Log = quietLog()
	}
	p := publish.New(client, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return p
}

func waitIdle(t *testing.T, p *publish.Publisher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// dump returns every key under /skydns/ with its value.
func dump(t *testing.T, c *clientv3.Client) map[string]string {
	t.Helper()
	out, err := tryDump(c)
	if err != nil {
		t.Fatalf("get /skydns/: %v", err)
	}
	return out
}

func tryDump(c *clientv3.Client) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/skydns/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out, nil
}

func put(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func rec(name, host string) skydns.Record {
	return skydns.Record{Name: name, Host: host, TTL: 30, Source: "service/default/web"}
}

// kv returns the key and value the publisher writes for r.
func kv(r skydns.Record) (string, string) {
	return skydns.Key("/skydns", owner, r), string(skydns.Encode(owner, r))
}

// setMany wants one address record for each of n names, svc0.default.example.org
// and on, and returns the keys and values the publisher writes for them.
func setMany(p *publish.Publisher, n int) map[string]string {
	expected := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("svc%d.default.example.org", i)
		r := rec(name, fmt.Sprintf("192.0.2.%d", i%250+1))
		p.Set(name, publish.Want{Records: []skydns.Record{r}})
		k, v := kv(r)
		expected[k] = v
	}
	return expected
}

// addressRecords returns n address records of name, at <prefix>.0 and on.
func addressRecords(name, prefix string, n int) []skydns.Record {
	records := make([]skydns.Record, 0, n)
	for i := range n {
		records = append(records, rec(name, fmt.Sprintf("%s.%d", prefix, i)))
	}
	return records
}

func want(records ...skydns.Record) map[string]string {
	m := make(map[string]string)
	for _, r := range records {
		k, v := kv(r)
		m[k] = v
	}
	return m
}

// eventually polls cond for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCreateUpdateDelete(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := start(t, c)

	a, b, v6 := rec("web.example.org", "192.0.2.1"), rec("web.example.org", "192.0.2.2"), rec("web.example.org", "2001:db8::1")
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{a, b}})
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(a, b), dump(t, c)); diff != "" {
		t.Fatalf("after create (-want +got):\n%s", diff)
	}

	before := p.Stats().Txns
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{b, v6}})
	waitIdle(t, p)
	if diff := cmp.Diff(want(b, v6), dump(t, c)); diff != "" {
		t.Fatalf("after update (-want +got):\n%s", diff)
	}
	if got := p.Stats().Txns - before; got != 1 {
		t.Errorf("update of one name took %d transactions, want 1", got)
	}

	p.Set("web.example.org", publish.Want{Records: nil})
	waitIdle(t, p)
	if got := dump(t, c); len(got) != 0 {
		t.Fatalf("after delete: etcd holds %v, want nothing", got)
	}
}

// A name's SRV records are set with it and written beneath it; a record of
// another name set there, even one beneath it, is a caller's error, left out.
func TestRecordsBeneathTheNameOnly(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := start(t, c)

	a := rec("web.example.org", "192.0.2.1")
	srvRec := skydns.Record{Name: "_http._tcp.web.example.org", Host: "web.example.org", Port: 80, TTL: 30, Source: "service/default/web"}
	stray := rec("webx.example.org", "192.0.2.2")
	nested := rec("a.web.example.org", "192.0.2.3")
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{a, srvRec, stray, nested}})
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(a, srvRec), dump(t, c)); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	// Written as wanted: nothing more to do.
	before := p.Stats().Txns
	p.Resync()
	waitIdle(t, p)
	if got := p.Stats().Txns - before; got != 0 {
		t.Errorf("a full reconciliation wrote %d transactions, want none", got)
	}
}

// A name's own keys change in one transaction; its SRV records' keys wait for
// the next one when they would not fit beside them.
func TestSRVKeysWaitWhenTheNameFillsATransaction(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := startWith(t, c, publish.Config{MaxTxnOps: 4})
	srvOf := func(port int) skydns.Record {
		return skydns.Record{Name: "_http._tcp.web.example.org", Host: "web.example.org", Port: port, TTL: 30, Source: "service/default/web"}
	}
	first := []skydns.Record{rec("web.example.org", "192.0.2.1"), rec("web.example.org", "192.0.2.2"), srvOf(80)}
	p.Set("web.example.org", publish.Want{Records: first})
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(first...), dump(t, c)); diff != "" {
		t.Fatalf("first records (-want +got):\n%s", diff)
	}

	// Both addresses replaced (4 operations) and the SRV record's port
	// changed (2 more): more than a transaction of 4 holds.
	before := p.Stats().Txns
	second := []skydns.Record{rec("web.example.org", "192.0.2.3"), rec("web.example.org", "192.0.2.4"), srvOf(8080)}
	p.Set("web.example.org", publish.Want{Records: second})
	waitIdle(t, p)
	if diff := cmp.Diff(want(second...), dump(t, c)); diff != "" {
		t.Fatalf("second records (-want +got):\n%s", diff)
	}
	if got := p.Stats().Txns - before; got != 2 {
		t.Errorf("the change took %d transactions, want 2: the addresses, then the SRV record", got)
	}
}

func TestForeignKeysAreLeftAlone(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	foreign := map[string]string{
		"/skydns/org/example/web/other-1":  `{"host":"192.0.2.50","owner":"other"}`,
		"/skydns/org/example/web/manual":   `{"host":"192.0.2.51"}`,
		"/skydns/org/example/web/garbage":  `not json`,
		"/skydns/org/example/webx/test-1":  `{"host":"192.0.2.52","owner":"other"}`,
		"/skydns/org/example/web/sub/test": `{"host":"192.0.2.53","owner":"someone"}`,
	}
	for k, v := range foreign {
		put(t, c, k, v)
	}
	p := start(t, c)
	a := rec("web.example.org", "192.0.2.1")
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{a}})
	p.Complete()
	waitIdle(t, p)
	p.Set("web.example.org", publish.Want{Records: nil})
	p.Resync()
	waitIdle(t, p)
	if diff := cmp.Diff(foreign, dump(t, c)); diff != "" {
		t.Fatalf("foreign keys changed (-want +got):\n%s", diff)
	}
}

func TestNothingIsWrittenBeforeComplete(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	stale := rec("old.example.org", "192.0.2.9")
	k, v := kv(stale)
	put(t, c, k, v)

	p := start(t, c)
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{rec("web.example.org", "192.0.2.1")}})
	time.Sleep(500 * time.Millisecond)
	if diff := cmp.Diff(map[string]string{k: v}, dump(t, c)); diff != "" {
		t.Fatalf("before Complete (-want +got):\n%s", diff)
	}
	if p.Ready() {
		t.Errorf("Ready() = true before Complete")
	}

	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(rec("web.example.org", "192.0.2.1")), dump(t, c)); diff != "" {
		t.Fatalf("after Complete, the stale key of this owner is not removed (-want +got):\n%s", diff)
	}
}

func TestDriftIsRepaired(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := start(t, c)
	a, b := rec("web.example.org", "192.0.2.1"), rec("web.example.org", "192.0.2.2")
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{a, b}})
	p.Complete()
	waitIdle(t, p)
	ka, _ := kv(a)
	kb, _ := kv(b)

	tests := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"deleted by hand", func(ctx context.Context) error { _, err := c.Delete(ctx, ka); return err }},
		{"edited by hand", func(ctx context.Context) error {
			_, err := c.Put(ctx, kb, `{"host":"203.0.113.66","ttl":30,"owner":"test"}`)
			return err
		}},
		{"overwritten with garbage", func(ctx context.Context) error { _, err := c.Put(ctx, ka, `garbage`); return err }},
		{"extra key of this owner", func(ctx context.Context) error {
			_, err := c.Put(ctx, "/skydns/org/example/web/test-ffffffffffff", `{"host":"203.0.113.67","owner":"test"}`)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tc.do(ctx); err != nil {
				t.Fatal(err)
			}
			eventually(t, "repair", func() bool { return cmp.Equal(want(a, b), dump(t, c)) })
		})
	}
}

func TestRestartWritesNothing(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	records := map[string][]skydns.Record{}
	for i := range 50 {
		name := fmt.Sprintf("svc%d.default.example.org", i)
		records[name] = []skydns.Record{rec(name, fmt.Sprintf("192.0.2.%d", i+1)), rec(name, "2001:db8::1")}
	}
	// Two TXT records beside an address: two keys, loaded back as written.
	txt := rec("svc0.default.example.org", "")
	txt.Text = "v=spf1 -all"
	other := txt
	other.Text = "google-site-verification=abc"
	records[txt.Name] = append(records[txt.Name], txt, other)
	var sum uint64
	for _, rs := range records {
		for _, r := range rs {
			sum += r.Digest()
		}
	}
	first := publish.New(c, publish.Config{Prefix: "/skydns", Owner: owner, Log: quietLog()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); first.Run(ctx) }()
	for name, rs := range records {
		first.Set(name, publish.Want{Records: rs})
	}
	first.Complete()
	waitIdle(t, first)
	cancel()
	<-done

	rev := etcdtest.Revision(t, c)
	second := start(t, c)
	loadCtx, cancelLoad := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLoad()
	if got := second.Loaded(loadCtx); got[txt.Source] != sum {
		t.Errorf("Loaded()[%q] = %d, want %d, the sum of the digests of the records written", txt.Source, got[txt.Source], sum)
	}
	for name, rs := range records {
		second.Set(name, publish.Want{Records: rs})
	}
	second.Complete()
	waitIdle(t, second)
	if got := etcdtest.Revision(t, c); got != rev {
		t.Errorf("etcd revision moved from %d to %d on a restart with nothing changed", rev, got)
	}
	if s := second.Stats(); s.Txns != 0 || s.Puts != 0 || s.Deletes != 0 {
		t.Errorf("restart wrote %+v, want nothing", s)
	}
}

func TestManyNamesShareTransactionsWithinLimit(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := start(t, c)
	expected := setMany(p, 300)
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(expected, dump(t, c)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// 300 single-key names fit in three transactions of at most 128 operations.
	if s := p.Stats(); s.Txns != 3 || s.Puts != 300 {
		t.Errorf("Stats() = %+v, want 3 transactions and 300 puts", s)
	}
}

// TestTooLargeTransactionsAreMadeSmaller: an etcd whose --max-txn-ops (its
// default, 128) is lower than the publisher's refuses its transactions; the
// publisher halves them until etcd takes them, warns once per halving, and
// writes every name.
func TestTooLargeTransactionsAreMadeSmaller(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	log, hook := logtest.NewNullLogger()
	p := startWith(t, c, publish.Config{Log: log, MaxTxnOps: 512})
	expected := setMany(p, 1000)
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(expected, dump(t, c)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if halved, warnings := smallerTxns(hook); !slices.Equal(halved, []any{256, 128}) || !warnings {
		t.Errorf("lines of smaller transactions, with their operations: %v (all warnings: %t), want warnings of 256 and 128", halved, warnings)
	}
	// Refused at 512 and at 256, then eight transactions of 128 operations.
	if s := p.Stats(); s.Txns != 8 || s.Puts != 1000 || s.TxnErrors < 2 {
		t.Errorf("Stats() = %+v, want 8 transactions, 1000 puts and 2 or more refused", s)
	}
}

// TestOneLargeNameLeavesTransactionsAlone: a name whose change alone holds
// more operations than etcd allows makes a transaction of its own whatever
// the limit; its refusal is an error like any other and makes no
// transaction smaller.
func TestOneLargeNameLeavesTransactionsAlone(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	log, hook := logtest.NewNullLogger()
	p := startWith(t, c, publish.Config{Log: log})
	p.Set("big.default.example.org", publish.Want{Records: addressRecords("big.default.example.org", "198.51.100", 200)})
	p.Complete()
	eventually(t, "two refused transactions", func() bool { return p.Stats().TxnErrors >= 2 })
	if halved, _ := smallerTxns(hook); len(halved) > 0 {
		t.Errorf("transactions made smaller, to %v operations, for one name too large", halved)
	}
}

// smallerTxns returns the operations of each line, at any level, saying that
// transactions were made smaller, in order, and whether all were warnings.
func smallerTxns(hook *logtest.Hook) (ops []any, warnings bool) {
	warnings = true
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "--max-txn-ops") {
			ops = append(ops, e.Data["operations"])
			warnings = warnings && e.Level == logrus.WarnLevel
		}
	}
	return ops, warnings
}

// TestAllAddressesOfANameReplaced: a name whose 64 addresses (the default
// --max-addresses-per-name) all change at once is written in one transaction
// of 128 operations, 64 puts and 64 deletes, which etcd's default allows: the
// bound skylb's configuration keeps (twice the addresses of a name at most
// --etcd-max-txn-ops).
func TestAllAddressesOfANameReplaced(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := startWith(t, c, publish.Config{ClaimPrefix: "/skylb/claims"})
	set := func(prefix string) map[string]string {
		records := addressRecords("big.default.example.org", prefix, 64)
		p.Set("big.default.example.org", publish.Want{Records: records})
		return want(records...)
	}
	set("198.51.100")
	p.Complete()
	waitIdle(t, p)
	expected := set("198.51.101")
	waitIdle(t, p)
	if diff := cmp.Diff(expected, dump(t, c)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if s := p.Stats(); s.Txns != 2 || s.Puts != 128 || s.Deletes != 64 || s.TxnErrors != 0 {
		t.Errorf("Stats() = %+v, want 2 transactions, 128 puts, 64 deletes and no error", s)
	}
}

// TestAllAddressesReplacedAsTheClaimChanges: a name whose 64 addresses all
// change as its claim changes (here: it becomes shared) takes 129 operations,
// one more than etcd's default --max-txn-ops. The claim is written first, on
// its own, and the records in the next transaction.
func TestAllAddressesReplacedAsTheClaimChanges(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := startWith(t, c, publish.Config{ClaimPrefix: "/skylb/claims"})
	const stored = "big.default.example.org"
	p.Set(stored, publish.Want{Records: addressRecords(stored, "198.51.100", 64)})
	p.Complete()
	waitIdle(t, p)
	records := addressRecords(stored, "198.51.101", 64)
	p.Set(stored, publish.Want{Records: records, Shared: true})
	waitIdle(t, p)
	if diff := cmp.Diff(want(records...), dump(t, c)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if claim, ok := claimOf(t, c, stored, owner); !ok || !claim.Shared {
		t.Errorf("claim = %+v (found: %v), want a shared claim", claim, ok)
	}
	if s := p.Stats(); s.Txns != 3 || s.Puts != 128 || s.Deletes != 64 || s.TxnErrors != 0 {
		t.Errorf("Stats() = %+v, want 3 transactions, 128 puts, 64 deletes and no error", s)
	}
}

// refuseOnce is a Guard that refuses the transaction it is asked about at.
type refuseOnce struct {
	mu    sync.Mutex
	n, at int
}

func (g *refuseOnce) Compares() ([]clientv3.Cmp, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if g.n == g.at {
		return nil, errors.New("not now")
	}
	return nil, nil
}

// TestFlushStoppedMidwayWritesTheRest: a flush decides each transaction's
// names as the one before is committed; when one fails, its names and those
// not yet decided are written by the next flush, each once.
func TestFlushStoppedMidwayWritesTheRest(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	guard := &refuseOnce{at: 3}
	p := startWith(t, c, publish.Config{MaxTxnOps: 10, MaxTxnsInFlight: 1, Guard: guard})
	expected := setMany(p, 100)
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(expected, dump(t, c)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// Two transactions, the refused one, then the other eight of the first
	// flush in the next: ten in all, each name written once.
	if s := p.Stats(); s.Txns != 10 || s.Puts != 100 {
		t.Errorf("Stats() = %+v, want 10 transactions and 100 puts", s)
	}
	guard.mu.Lock()
	defer guard.mu.Unlock()
	if guard.n != 11 {
		t.Errorf("the guard was asked about %d transactions, want 11 (one refused)", guard.n)
	}
}

func TestEtcdDownThenBack(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := start(t, c)
	a := rec("web.example.org", "192.0.2.1")
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{a}})
	p.Complete()
	waitIdle(t, p)

	srv.Stop()
	b := rec("api.example.org", "192.0.2.2")
	p.Set("api.example.org", publish.Want{Records: []skydns.Record{b}})
	p.Set("web.example.org", publish.Want{Records: nil})
	eventually(t, "an etcd error counted while etcd is down", func() bool { return p.Stats().Errors > 0 })
	srv.Restart()
	back := time.Now()
	eventually(t, "convergence after etcd returns", func() bool {
		got, err := tryDump(c)
		return err == nil && cmp.Equal(want(b), got)
	})
	t.Logf("converged %v after etcd returned", time.Since(back).Round(time.Millisecond))
}

// TestLastSync follows Stats.LastSync: zero until the first flush of a
// complete desired state, set by it, unchanged while etcd refuses writes,
// and set again once they succeed.
func TestLastSync(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	p := start(t, c)
	a := rec("web.example.org", "192.0.2.1")
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{a}})
	if got := p.Stats().LastSync; !got.IsZero() {
		t.Errorf("LastSync = %v before Complete, want zero", got)
	}
	p.Complete()
	waitIdle(t, p)
	synced := p.Stats().LastSync
	if synced.IsZero() {
		t.Fatal("LastSync is zero after the first flush")
	}

	srv.Stop()
	p.Set("api.example.org", publish.Want{Records: []skydns.Record{rec("api.example.org", "192.0.2.2")}})
	eventually(t, "an etcd error counted while etcd is down", func() bool { return p.Stats().TxnErrors > 0 })
	if got := p.Stats().LastSync; !got.Equal(synced) {
		t.Errorf("LastSync = %v after a failed flush, want it unchanged: %v", got, synced)
	}
	srv.Restart()
	eventually(t, "LastSync after etcd returns", func() bool { return p.Stats().LastSync.After(synced) })
}

func TestMassDeletionIsHeld(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	// 20 records of this owner from an earlier run.
	var old []skydns.Record
	for i := range 20 {
		r := rec(fmt.Sprintf("svc%d.default.example.org", i), fmt.Sprintf("192.0.2.%d", i+1))
		old = append(old, r)
		k, v := kv(r)
		put(t, c, k, v)
	}
	// The new run wants only 5 of them and one new record: 15 of 20 deletions is
	// more than half, so they are held; the new record is written.
	p := start(t, c)
	for _, r := range old[:5] {
		p.Set(r.Name, publish.Want{Records: []skydns.Record{r}})
	}
	fresh := rec("new.default.example.org", "192.0.2.100")
	p.Set(fresh.Name, publish.Want{Records: []skydns.Record{fresh}})
	p.Complete()
	waitIdle(t, p)
	if got := len(dump(t, c)); got != 21 {
		t.Errorf("etcd holds %d keys, want 21: the full reconciliation's deletions must be held", got)
	}
	if s := p.Stats(); s.HeldDeletes != 15 || s.Deletes != 0 {
		t.Errorf("Stats() = %+v, want 15 held deletions and none made", s)
	}

	// Deletions driven by changes are not held back.
	p.Set(old[0].Name, publish.Want{Records: nil})
	waitIdle(t, p)
	if got := len(dump(t, c)); got != 20 {
		t.Errorf("after an event-driven deletion etcd holds %d keys, want 20", got)
	}

	// Once the desired state is back, nothing is held.
	for _, r := range old[1:] {
		p.Set(r.Name, publish.Want{Records: []skydns.Record{r}})
	}
	p.Resync()
	waitIdle(t, p)
	if s := p.Stats(); s.HeldDeletes != 0 {
		t.Errorf("HeldDeletes = %d after the condition cleared, want 0", s.HeldDeletes)
	}
}

func TestMassDeletionAllowedWithRatioOne(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	for i := range 20 {
		k, v := kv(rec(fmt.Sprintf("svc%d.default.example.org", i), "192.0.2.1"))
		put(t, c, k, v)
	}
	p := publish.New(c, publish.Config{Prefix: "/skydns", Owner: owner, MaxDeleteRatio: 1, Log: quietLog()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	p.Complete()
	waitIdle(t, p)
	if got := len(dump(t, c)); got != 0 {
		t.Errorf("etcd holds %d keys, want 0 with --max-delete-ratio=1", got)
	}
}

func TestDryRunWritesNothingAndCountsEachChangeOnce(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	before := etcdtest.Revision(t, c)
	p := publish.New(c, publish.Config{Prefix: "/skydns", Owner: owner, DryRun: true, Log: quietLog()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	a := rec("web.example.org", "192.0.2.1")
	p.Set(a.Name, publish.Want{Records: []skydns.Record{a}})
	p.Complete()
	waitIdle(t, p)
	// Marked again, as a full reconciliation or an unchanged update does.
	p.Resync()
	waitIdle(t, p)
	if s := p.Stats(); s.Puts != 1 || s.Txns != 0 {
		t.Errorf("Stats() = %+v, want one record counted once and no transaction", s)
	}
	if got := etcdtest.Revision(t, c); got != before {
		t.Errorf("a dry run moved etcd's revision from %d to %d", before, got)
	}
}

func TestIsNoSpace(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"client error", rpctypes.ErrNoSpace, true},
		{"wrapped", fmt.Errorf("commit 3 operations for 1 names: %w", rpctypes.ErrNoSpace), true},
		{"other etcd error", rpctypes.ErrTimeout, false},
		{"deadline", context.DeadlineExceeded, false},
		{"fenced", publish.ErrFenced, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := publish.IsNoSpace(tc.err); got != tc.want {
				t.Errorf("IsNoSpace(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// CountRecords counts records by the type CoreDNS serves them as, and leaves
// out the apex guard, which CoreDNS serves as nothing.
func TestCountRecordsByServedType(t *testing.T) {
	p := publish.New(nil, publish.Config{Prefix: "/skydns", Owner: owner, Log: quietLog()})
	p.Set("apex.dns.example.org", publish.Want{Records: []skydns.Record{{Name: "apex.dns.example.org", Host: "example.org", TTL: 30, Source: "apex-guard"}}, Unclaimed: true})
	p.Set("web.example.org", publish.Want{Records: []skydns.Record{
		{Name: "web.example.org", Host: "192.0.2.1", TTL: 30},
		{Name: "web.example.org", Host: "2001:db8::1", TTL: 30},
	}})
	p.Set("_http._tcp.web.example.org", publish.Want{Records: []skydns.Record{{Name: "_http._tcp.web.example.org", Host: "web.example.org", Port: 80, TTL: 30}}})
	p.Set("alias.example.org", publish.Want{Records: []skydns.Record{{Name: "alias.example.org", Host: "lb.example.net", TTL: 30}}})
	got := map[skydns.Type]int{}
	p.CountRecords(func(_ string, t skydns.Type) { got[t]++ })
	want := map[skydns.Type]int{skydns.A: 1, skydns.AAAA: 1, skydns.SRV: 1, skydns.CNAME: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CountRecords (-want +got):\n%s", diff)
	}
}

// TestLogSumsUpUnobservedChanges: the names a cold start writes are summed up
// in one line, and a name an observed Kubernetes change brought gets its own.
func TestLogSumsUpUnobservedChanges(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	log, hook := logtest.NewNullLogger()
	p := startWith(t, c, publish.Config{Log: log})
	setMany(p, 50)
	p.Complete()
	waitIdle(t, p)
	lines := func(msg string) []*logrus.Entry {
		var out []*logrus.Entry
		for _, e := range hook.AllEntries() {
			if e.Message == msg && e.Level == logrus.InfoLevel {
				out = append(out, e)
			}
		}
		return out
	}
	if got := lines("records changed"); len(got) != 0 {
		t.Errorf("the cold start logged %d names at info, want none", len(got))
	}
	if got := lines("records written"); len(got) != 1 || got[0].Data["names"] != 50 {
		t.Errorf("the cold start's summary lines: %v, want one of 50 names", got)
	}
	hook.Reset()
	p.Set("svc0.default.example.org", publish.Want{Records: []skydns.Record{rec("svc0.default.example.org", "192.0.2.2")}, Observed: time.Now()})
	waitIdle(t, p)
	if got := lines("records changed"); len(got) != 1 || got[0].Data["name"] != "svc0.default.example.org" {
		t.Errorf("an observed change logged %v, want one line for svc0.default.example.org", got)
	}
	if got := lines("records written"); len(got) != 0 {
		t.Errorf("an observed change was summed up too: %v", got)
	}
}
