package publish

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/skydns"
)

// keyBase returns the path of a stored name, which every key of the name
// begins with: its SRV records' keys lie beneath it too (skydns.HeldBy).
func (p *Publisher) keyBase(stored string) string { return skydns.Path(p.cfg.Prefix, stored) }

// relKey returns key relative to the path of stored, a part of key.
func (p *Publisher) relKey(stored, key string) string { return key[p.keyBaseLen(stored):] }

// keyBaseLen returns len(p.keyBase(stored)) without building the path.
func (p *Publisher) keyBaseLen(stored string) int {
	return len(strings.TrimSuffix(p.cfg.Prefix, "/")) + 1 + len(stored)
}

// Publisher keeps skylb's records in etcd equal to the desired records.
type Publisher struct {
	cfg    Config
	client *clientv3.Client
	codec  claimCodec // the claims' keys and values (claimcodec.go)
	dir    string     // prefix with a trailing slash

	// mu guards the parts below but the inbox and the counters: the table
	// of the writer, taken with lock, which receives the inbox first. Only
	// the writer's own goroutines take it (the flush, its transactions, the
	// leases' loops and a load), and those that read the table: the views'
	// Gate, CountRecords, Ready and WaitIdle. Each part is declared beside
	// the code that keeps it. No Publisher takes another's mu while it
	// holds its own (see gate.go).
	mu       sync.Mutex
	inbox    inbox        // what reaches the writer from outside it (inbox.go), under its own lock
	view     table        // the names: the records wanted and the keys etcd holds (view.go)
	work     work         // the names to write and the flush that writes them
	clusters clusterState // the claims of the clusters sharing the etcd (claims.go, share.go)
	follow   following    // names stored at their name and what they follow (atname.go)

	// lease holds the leases the claims (and unclaimed records) are written
	// with (lease.go), each read and set atomically; sweeper, under its own
	// lock, the names whose records another cluster's expired claim left
	// behind (sweep.go).
	lease   *leases
	sweeper *sweeper

	// answers, for the default view's Publisher of a Group with views, is
	// signalled when names its answer may have changed on are noted
	// (clusters.answered, see gate.go); nil otherwise.
	answers chan struct{}

	count counters // what it has done, read by Stats without the lock
	// maxOps is the most operations a transaction holds: Config.MaxTxnOps,
	// less once etcd refused that many (txnops.go).
	maxOps atomic.Int64
}

type tomb struct {
	name, key string
	rev       int64
}

// New returns a Publisher writing through client.
func New(client *clientv3.Client, cfg Config) *Publisher { return newPublisher(client, cfg, false) }

// newPublisher returns a Publisher writing through client; with views, one
// that notes the names its answer (Answers) may have changed on for them
// (see Group).
func newPublisher(client *clientv3.Client, cfg Config, views bool) *Publisher {
	cfg.defaults()
	p := &Publisher{
		cfg:    cfg,
		client: client,
		codec:  newClaimCodec(cfg.Owner, cfg.ClaimPrefix),
		dir:    trimSlash(cfg.Prefix) + "/",
		view:   table{names: make(map[string]*name), firstLoad: make(chan struct{})},
		work: work{
			dirty: make(map[string]bool), since: make(map[string]time.Time),
			wake: make(chan struct{}, 1), active: !cfg.Inactive, sending: make(underWay),
		},
		clusters: clusterState{
			foreignBelow: make(map[string]nameSet), verdicts: make(map[string]arbitrate.Decision),
			sharings: make(map[string]arbitrate.Sharing), holds: make(map[string]hold),
		},
		follow:  following{follows: make(map[string]string), followers: make(map[string]nameSet), occupied: make(map[string]bool)},
		lease:   newLeases(),
		sweeper: newSweeper(),
	}
	p.maxOps.Store(int64(cfg.MaxTxnOps))
	p.work.done = sync.NewCond(&p.mu)
	if views {
		p.answers = make(chan struct{}, 1)
	}
	return p
}

func trimSlash(s string) string {
	for len(s) > 1 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// Set replaces what is wanted at one stored name: its records and those kept
// with it, whose owner names lie beneath it (SRV records; stored is
// skydns.HeldBy of each record's name). Setting what a name has
// already is cheap and changes nothing: the controller hands over every name
// of a group whenever one object of the group changes.
//
// Set only queues w for the writer (inbox.go): it never waits for a flush.
func (p *Publisher) Set(stored string, w Want) {
	p.send(message{kind: msgWant, stored: stored, want: w, at: time.Now()})
}

// setLocked makes w what is wanted at stored, as Set asked at time at.
func (p *Publisher) setLocked(stored string, w Want, at time.Time) {
	records := w.Records
	if len(records) == 0 {
		records = nil
	}
	n := p.view.names[stored]
	switch {
	case n == nil && records == nil:
		return
	case n == nil:
		n = newName(stored)
		p.view.names[stored] = n
	case !p.view.complete:
		// A name filed by the load, before the first pass, is filed again
		// under the caller's string, which the table then keeps rather
		// than its own copy, decoded from a key.
		p.view.names[stored] = n
	}
	shareChanged := setShareLocked(n, w, at)
	if (n.records == nil) == (records == nil) && slices.Equal(n.records, records) &&
		n.shared == w.Shared && n.unclaimed == w.Unclaimed && p.follow.follows[stored] == w.Follows && !shareChanged {
		return
	}
	p.follow.set(stored, w.Follows)
	shared := p.sharesLocked(stored)
	n.records = slices.Clip(records)
	n.shared, n.unclaimed = w.Shared, w.Unclaimed
	if p.sharesLocked(stored) != shared && p.foreignIn(n.claims) {
		// Names beneath another cluster's claim may join it only while
		// this cluster shares the name too.
		p.markBelowLocked(stored)
	}
	p.work.observed(stored, w.Observed)
	p.markLocked(stored)
}

// Complete declares that every wanted name has been Set. From then on the
// Publisher writes, and deletes the keys of skylb's that no name wants.
func (p *Publisher) Complete() { p.send(message{kind: msgComplete}) }

func (p *Publisher) completeLocked() {
	p.view.complete = true
	p.view.atLoad = nil
	p.markAllLocked()
}

// Loaded returns, once, what etcd held when the view was loaded, before
// Complete: by the object the records of this Publisher come from
// (skydns.Record.Source), the sum of their digests (skydns.Record.Digest).
// It waits for the first load until ctx ends, and returns nil then, after
// Complete, and once taken.
// A start compares it with what it wants to tell what changed while no
// skylb was running.
func (p *Publisher) Loaded(ctx context.Context) map[string]uint64 {
	select {
	case <-p.view.firstLoad:
	case <-ctx.Done():
		return nil
	}
	p.lock()
	defer p.mu.Unlock()
	out := p.view.atLoad
	p.view.atLoad = nil
	return out
}

// SetActive starts or stops writing. An inactive Publisher keeps its view and the
// desired records current, so that it can take over at once; becoming active
// compares everything. SetActive(false) returns once a transaction in flight has
// finished.
func (p *Publisher) SetActive(active bool) {
	p.lock()
	defer p.mu.Unlock()
	p.work.active = active
	if active {
		p.lease.wakeAll()
		p.markAllLocked()
		return
	}
	for p.work.flushing {
		p.work.done.Wait()
	}
}

// Resync compares every name with the view and repairs what differs. It reads
// nothing from etcd.
func (p *Publisher) Resync() { p.send(message{kind: msgResync}) }

// Reachable reports whether the connection to etcd is up. It sends nothing.
func (p *Publisher) Reachable() bool {
	switch p.client.ActiveConnection().GetState() {
	case connectivity.Ready, connectivity.Idle:
		return true
	}
	return false
}

// Ready reports whether the view of etcd is loaded and the desired state complete.
func (p *Publisher) Ready() bool {
	p.lock()
	defer p.mu.Unlock()
	return p.view.loaded && p.view.complete
}

// WaitIdle blocks until the Publisher is ready and has nothing left to write,
// or ctx ends.
func (p *Publisher) WaitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.work.done.Broadcast()
	})
	defer stop()
	p.lock()
	defer p.mu.Unlock()
	for !(p.view.loaded && p.view.complete && p.work.active && p.work.idle()) {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.work.done.Wait()
		p.receiveLocked()
	}
	return nil
}

// markLocked marks a name changed by an object or by someone editing etcd.
func (p *Publisher) markLocked(stored string) { p.work.mark(stored) }

// markAllLocked marks every name for a full reconciliation, but those held
// only for other clusters' claims.
func (p *Publisher) markAllLocked() { p.markFullLocked(func(*name) bool { return true }) }

// markFullLocked marks the names keep keeps for a full reconciliation, but
// those held only for other clusters' claims.
func (p *Publisher) markFullLocked(keep func(*name) bool) {
	for stored, n := range p.view.names {
		if keep(n) && !n.othersOnly(p.cfg.Owner) {
			p.work.markFull(stored)
		}
	}
	p.work.poke()
}

// Run loads the view of etcd, keeps it current and writes changes until ctx
// ends. It survives etcd being unavailable: every failure is retried with backoff.
func (p *Publisher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { p.flushLoop(ctx) })
	if p.cfg.RecordExpiry > 0 && !p.cfg.DryRun {
		for shard := range leaseShards {
			wg.Go(func() { p.leaseLoop(ctx, shard) })
		}
	}
	if p.codec.claiming() && !p.cfg.DryRun {
		wg.Go(func() { p.sweepLoop(ctx) })
	}
	for ctx.Err() == nil {
		rev, ok := p.loadWithRetry(ctx)
		if !ok {
			break
		}
		p.watchAll(ctx, rev)
	}
	wg.Wait()
}
