package publish

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/skydns"
)

// TestInputsDoNotWaitForTheWriter holds the writer's table, as a flush
// deciding a cold start does, and checks that every input from outside the
// writer returns meanwhile: the controller's Set, Complete, Resync and
// Recheck, the watches' events, a lease obtained and a hold-down's end.
// Once the table is free, the next reader sees them all, applied in the
// order they were sent.
func TestInputsDoNotWaitForTheWriter(t *testing.T) {
	const owner = "east"
	p := New(nil, Config{Prefix: "/skydns", Owner: owner, ClaimPrefix: "/skylb/claims", Log: quiet()})
	a := skydns.Record{Name: "web.example.org", Host: "192.0.2.1"}
	b := skydns.Record{Name: "web.example.org", Host: "192.0.2.2"}
	foreign := skydns.Record{Name: "api.example.org", Host: "192.0.2.3"}
	put := func(key string, value []byte, rev int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: value, CreateRevision: rev, ModRevision: rev}}
	}

	p.mu.Lock() // the writer, busy
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		p.Set("web.example.org", Want{Records: []skydns.Record{a}})
		p.Set("gone.example.org", Want{Records: []skydns.Record{{Name: "gone.example.org", Host: "192.0.2.9"}}})
		p.Set("web.example.org", Want{Records: []skydns.Record{b}, Shared: true})
		p.Set("gone.example.org", Want{})
		p.Complete()
		p.Resync()
		p.Recheck("web.example.org")
		p.apply([]*clientv3.Event{put(skydns.Key("/skydns", owner, foreign), skydns.Encode(owner, foreign), 5)}, 5)
		p.applyClaims([]*clientv3.Event{put("/skylb/claims/web.example.org/west", []byte(`{"owner":"west","shared":true}`), 6)}, 6)
		p.send(message{kind: msgShard, shard: 0})
		p.send(message{kind: msgHoldEnd, stored: "web.example.org", at: time.Now()})
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		p.mu.Unlock()
		t.Fatal("an input waited for the writer's table")
	}
	if got := len(p.view.names); got != 0 {
		t.Errorf("the table changed under the writer: %d names", got)
	}
	p.mu.Unlock()

	var names []string
	p.CountRecords(func(stored string, _ skydns.Type) { names = append(names, stored) })
	slices.Sort(names)
	if want := []string{"web.example.org"}; !slices.Equal(names, want) {
		t.Errorf("records wanted at %v, want %v: the later Set of a name wins", names, want)
	}
	p.lock()
	defer p.mu.Unlock()
	if n := p.view.names["web.example.org"]; n == nil || !slices.Equal(n.records, []skydns.Record{b}) || !n.shared {
		t.Errorf("web.example.org holds %+v, want the last Set's shared record", n)
	} else if len(n.claims) != 1 || n.claims[0].owner != "west" {
		t.Errorf("web.example.org's claims are %+v, want west's from the watch", n.claims)
	}
	if n := p.view.names["api.example.org"]; n == nil || len(n.actual) != 1 {
		t.Errorf("api.example.org holds %+v, want the watched key", n)
	}
	if !p.view.complete {
		t.Error("Complete was not received")
	}
	if p.clusters.claimsRev != 6 {
		t.Errorf("claims seen up to revision %d, want 6", p.clusters.claimsRev)
	}
	if !p.work.dirty["web.example.org"] || !p.work.dirty["api.example.org"] {
		t.Errorf("marked %v, want both names marked by a change", p.work.dirty)
	}
	if p.inbox.n.Load() != 0 {
		t.Errorf("%d messages left in the inbox", p.inbox.n.Load())
	}
}

// lockProbe is a Gate that answers every name and counts the questions asked
// while its view's Publisher held its own table.
type lockProbe struct {
	view          atomic.Pointer[Publisher]
	asked, locked atomic.Int64
}

func (g *lockProbe) Answers(string) bool {
	g.asked.Add(1)
	if p := g.view.Load(); p != nil {
		if p.mu.TryLock() {
			p.mu.Unlock()
		} else {
			g.locked.Add(1)
		}
	}
	return true
}

// TestViewAsksItsGateHoldingNoLock checks that a view's Publisher asks its
// Gate, which takes the default view's table, without holding its own: no
// Publisher holds two tables. Nothing else takes the view's table here (the
// watches send, no lease runs), so a busy table is the flush's own.
func TestViewAsksItsGateHoldingNoLock(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	g := &lockProbe{}
	p := New(c, Config{Prefix: "/skydns-office", Owner: "west", Timeout: 5 * time.Second, Log: quiet(), Gate: g})
	g.view.Store(p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for i := range 50 {
		stored := fmt.Sprintf("n%d.example.org", i)
		p.Set(stored, Want{Records: []skydns.Record{{Name: stored, Host: "192.0.2.1"}}})
	}
	p.Complete()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := p.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if got := g.asked.Load(); got < 50 {
		t.Fatalf("the Gate was asked %d times, want once for each of the 50 names at least", got)
	}
	if got := g.locked.Load(); got != 0 {
		t.Errorf("the Gate was asked %d times of %d while the view held its table", got, g.asked.Load())
	}
}
