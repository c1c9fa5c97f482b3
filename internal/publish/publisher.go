package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/skydns"
)

// ErrFenced is returned when a transaction was refused because its conditions
// no longer hold: leadership lost to another replica (a Guard's), or another
// cluster's claim on a name changed (see claims.go).
var ErrFenced = errors.New("transaction refused by its conditions")

// ErrPaused is what a Guard's error wraps when writes wait for something the
// Guard reports itself: the Publisher retries them quietly.
var ErrPaused = errors.New("writes paused")

// guardCmps is the room left in every transaction for a Guard's conditions.
const guardCmps = 4

// Guard adds conditions to every transaction the Publisher commits.
type Guard interface {
	// Compares returns the conditions under which a write may land, or an error
	// when no write may be attempted now.
	Compares() ([]clientv3.Cmp, error)
}

// Config configures a Publisher.
type Config struct {
	Prefix    string        // key prefix, e.g. "/skydns"
	Owner     string        // owner id written into every value
	Timeout   time.Duration // deadline of each etcd request
	MaxTxnOps int           // operations per transaction, at most etcd's --max-txn-ops (halved while etcd refuses that many)
	PageSize  int64         // keys per page when listing the prefix
	Guard     Guard         // optional
	// MaxDeleteRatio is the largest share of skylb's records a full
	// reconciliation may delete at once when it owns more than
	// minOwnedForRatio of them; a larger deletion is held back. Deletions
	// driven by changes to objects are never held. 0 means 0.5; 1 or more
	// disables the check.
	MaxDeleteRatio float64
	// MaxTxnsInFlight is how many transactions one flush commits at once
	// (they touch distinct names); etcd then shares its disk syncs among
	// them. 0 means 4.
	MaxTxnsInFlight int
	// Inactive starts the Publisher without writing, for a replica that is
	// not (yet) the leader; SetActive starts writing.
	Inactive bool
	// DryRun logs every change instead of writing it.
	DryRun bool
	// ObservePropagation, when set, is told how long each change took from
	// being observed in Kubernetes to being committed in etcd.
	ObservePropagation func(time.Duration)
	// ClaimPrefix, when set, is where the clusters sharing the etcd claim the
	// names they publish (see claims.go); empty claims nothing.
	ClaimPrefix string
	// OnClaim, when set, is told whenever the decision on a claimed name
	// changes: granted, or refused with the owners holding it or a name
	// nested with it. It is called without the Publisher's lock held.
	OnClaim func(stored string, d arbitrate.Decision)
	// OnShare, when set, is told whenever the decision on a name this
	// cluster shares with others changes (see share.go), with the decision
	// told before it (nil for the first): whether this cluster serves the
	// name, which clusters answer it, whether it waits for its failback
	// hold-down. It is called without the Publisher's lock held.
	OnShare func(stored string, s arbitrate.Sharing, was *arbitrate.Sharing)
	// FailbackHoldDown is how long a preferred cluster of a failover name,
	// healthy again, waits before it takes the name back from a healthy
	// cluster that answers it (see arbitrate.Share).
	FailbackHoldDown time.Duration
	// RecordExpiry, when set, attaches every key to an etcd lease of this TTL
	// that the Publisher keeps alive (see lease.go): the keys of a cluster
	// whose skylb stops renewing it expire.
	RecordExpiry time.Duration
	// Owns, when set, reports whether a record of Owner coming from source
	// (the value's source field) is this Publisher's to keep: a skylb
	// scoped to some namespaces or kinds of object owns only the records of
	// those. A record it does not own is left alone: never deleted, not
	// counted by MaxDeleteRatio, and the name's claim is kept while it is
	// there. One it wants is taken over. Nil owns every record of Owner.
	Owns func(source string) bool
	Log  logrus.FieldLogger
}

// minOwnedForRatio is the number of owned records above which MaxDeleteRatio applies.
const minOwnedForRatio = 10

func (c *Config) defaults() {
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = 128
	}
	if c.MaxTxnsInFlight <= 0 {
		c.MaxTxnsInFlight = 4
	}
	if c.PageSize == 0 {
		c.PageSize = 1000
	}
	if c.MaxDeleteRatio == 0 {
		c.MaxDeleteRatio = 0.5
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
}

// Want is what is wanted at one stored name.
type Want struct {
	// Records are the records; none wants the name removed. The Publisher
	// keeps the slice it is handed: it must not be changed afterwards.
	Records []skydns.Record
	// Shared lets other clusters whose objects share the name publish it
	// beside this one (see claims.go).
	Shared bool
	// Unclaimed records are claimed by no cluster: every cluster keeps its
	// own, like the apex guard of a zone they share.
	Unclaimed bool
	// Policy and Priority say how the clusters sharing the name answer it
	// (a Shared name only; Policy "" is Balanced, Priority 0 the most
	// preferred); Unhealthy says that every address of this cluster for
	// the name fails its health checks (see share.go).
	Policy    arbitrate.Policy
	Priority  int
	Unhealthy bool
	// Follows, when set, is the stored name the records point to: they are
	// written only while this cluster publishes that name (a PTR record
	// follows its forward name; see atname.go).
	Follows string
	// Observed is when the Kubernetes change behind it was seen, or zero.
	Observed time.Time
}

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
	dir    string // prefix with a trailing slash

	// mu guards everything below but the counters. Each part is declared
	// beside the code that keeps it.
	mu           sync.Mutex
	table        // the names: the records wanted and the keys etcd holds (view.go)
	work         // the names to write and the flush that writes them
	leaseState   // the leases the records are written with (lease.go)
	clusterState // the claims of the clusters sharing the etcd (claims.go, share.go)
	following    // names stored at their name and what they follow (atname.go)

	count counters // what it has done, read by Stats without the lock
	// maxOps is the most operations a transaction holds: Config.MaxTxnOps,
	// less once etcd refused that many (txnops.go).
	maxOps atomic.Int64
}

// work is what a Publisher has left to write, and whether it writes.
type work struct {
	dirty    map[string]bool      // name -> marked by a change (true) or by a full reconciliation (false)
	since    map[string]time.Time // dirty name -> when its change was observed
	active   bool                 // it writes (see Config.Inactive)
	flushing bool                 // a flush is under way
	idle     *sync.Cond           // signalled when a flush ends
	wake     chan struct{}        // starts a flush
	sending  map[string]sent      // the keys the transactions under way write (echo.go)
}

type tomb struct {
	name, key string
	rev       int64
}

// New returns a Publisher writing through client.
func New(client *clientv3.Client, cfg Config) *Publisher {
	cfg.defaults()
	p := &Publisher{
		cfg:    cfg,
		client: client,
		dir:    trimSlash(cfg.Prefix) + "/",
		table:  table{names: make(map[string]*name), firstLoad: make(chan struct{})},
		work: work{
			dirty: make(map[string]bool), since: make(map[string]time.Time),
			wake: make(chan struct{}, 1), active: !cfg.Inactive, sending: make(map[string]sent),
		},
		clusterState: clusterState{
			foreignBelow: make(map[string]nameSet), verdicts: make(map[string]arbitrate.Decision),
			sharings: make(map[string]arbitrate.Sharing), holds: make(map[string]hold),
		},
		following: following{follows: make(map[string]string), followers: make(map[string]nameSet), occupied: make(map[string]bool)},
	}
	if cfg.ClaimPrefix != "" {
		p.claimDir = trimSlash(cfg.ClaimPrefix) + "/"
	}
	p.claimValues = ownClaimValues(cfg.Owner)
	for i := range p.leaseWake {
		p.leaseWake[i] = make(chan struct{}, 1)
	}
	p.maxOps.Store(int64(cfg.MaxTxnOps))
	p.idle = sync.NewCond(&p.mu)
	return p
}

// TellClaims sets Config.OnClaim and Config.OnShare, for a caller that
// builds what they tell (the controller) after the Publisher it feeds. It
// must be called before Run. Lock order: the Publisher calls them without
// its lock held, and what they call takes its own lock and hands records
// back to the Publisher only after releasing it.
func (p *Publisher) TellClaims(onClaim func(stored string, d arbitrate.Decision), onShare func(stored string, s arbitrate.Sharing, was *arbitrate.Sharing)) {
	p.cfg.OnClaim, p.cfg.OnShare = onClaim, onShare
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
func (p *Publisher) Set(stored string, w Want) {
	records := w.Records
	if len(records) == 0 {
		records = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.names[stored]
	if n == nil {
		if records == nil {
			return
		}
		n = newName(stored)
		p.names[stored] = n
	}
	shareChanged := setShareLocked(n, w, time.Now())
	if (n.records == nil) == (records == nil) && slices.Equal(n.records, records) &&
		n.shared == w.Shared && n.unclaimed == w.Unclaimed && p.follows[stored] == w.Follows && !shareChanged {
		return
	}
	p.followLocked(stored, w.Follows)
	shared := p.sharesLocked(stored)
	n.records = slices.Clip(records)
	n.shared, n.unclaimed = w.Shared, w.Unclaimed
	if p.sharesLocked(stored) != shared && p.foreignIn(n.claims) {
		// Names beneath another cluster's claim may join it only while
		// this cluster shares the name too.
		p.markBelowLocked(stored)
	}
	if t, ok := p.since[stored]; !w.Observed.IsZero() && (!ok || w.Observed.Before(t)) {
		p.since[stored] = w.Observed
	}
	p.markLocked(stored)
}

// Complete declares that every wanted name has been Set. From then on the
// Publisher writes, and deletes the keys of skylb's that no name wants.
func (p *Publisher) Complete() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.complete = true
	p.atLoad = nil
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
	case <-p.firstLoad:
	case <-ctx.Done():
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.atLoad
	p.atLoad = nil
	return out
}

// SetActive starts or stops writing. An inactive Publisher keeps its view and the
// desired records current, so that it can take over at once; becoming active
// compares everything. SetActive(false) returns once a transaction in flight has
// finished.
func (p *Publisher) SetActive(active bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active = active
	if active {
		p.wakeLeaseLocked()
		p.markAllLocked()
		return
	}
	for p.flushing {
		p.idle.Wait()
	}
}

// Resync compares every name with the view and repairs what differs. It reads
// nothing from etcd.
func (p *Publisher) Resync() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.markAllLocked()
}

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
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded && p.complete
}

// WaitIdle blocks until the Publisher is ready and has nothing left to write,
// or ctx ends.
func (p *Publisher) WaitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.idle.Broadcast()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for !(p.loaded && p.complete && p.active && len(p.dirty) == 0 && !p.flushing) {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.idle.Wait()
	}
	return nil
}

// markLocked marks a name changed by an object or by someone editing etcd.
func (p *Publisher) markLocked(stored string) {
	p.dirty[stored] = true
	p.poke()
}

// markAllLocked marks every name for a full reconciliation, but those held
// only for other clusters' claims.
func (p *Publisher) markAllLocked() {
	for stored, n := range p.names {
		if _, ok := p.dirty[stored]; !ok && !n.othersOnly(p.cfg.Owner) {
			p.dirty[stored] = false
		}
	}
	p.poke()
}

// poke wakes the flush loop without blocking.
func (p *Publisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
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
	for ctx.Err() == nil {
		rev, ok := p.loadWithRetry(ctx)
		if !ok {
			break
		}
		p.watchAll(ctx, rev)
	}
	wg.Wait()
}

// flushLoop writes dirty names whenever there are some, backing off on errors.
func (p *Publisher) flushLoop(ctx context.Context) {
	bo := newBackoff(100*time.Millisecond, maxRetryDelay)
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		err := p.flush(ctx)
		switch {
		case err == nil:
			if failing {
				p.cfg.Log.Info("etcd writes succeed again")
				failing = false
			}
			bo.reset()
		case ctx.Err() != nil:
			return
		case errors.Is(err, errSmallerTxns):
			// Nothing was lost but time: again at once, in smaller transactions.
			p.poke()
		default:
			delay := bo.next()
			switch {
			case errors.Is(err, ErrPaused):
				p.cfg.Log.WithError(err).WithField("retry_in", delay).Debug("writing to etcd waits")
			case !failing || errors.Is(err, ErrFenced):
				p.cfg.Log.WithError(err).WithField("retry_in", delay).Warn("writing to etcd failed")
				failing = true
			default:
				p.cfg.Log.WithError(err).WithField("retry_in", delay).Debug("writing to etcd failed again")
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			p.poke()
		}
	}
}

// change is what brings one name to its desired state. A flush holds the
// change of every dirty name at once, all of them at a cold start, so it
// holds only what the operations are made of; ops builds them when the
// change is committed.
type change struct {
	name     string
	event    bool      // marked by a change rather than by a full reconciliation
	observed time.Time // when the Kubernetes change behind it was seen, or zero
	lease    int64     // the lease of the puts
	above    []above   // ancestors on which no claim may have been created (see nested.go)
	keyChange
	claimPut []byte // the value of this cluster's claim, when written
	claimDel bool   // this cluster's claim is deleted
	// claimsRev, when not 0, is the revision of the claims the name was
	// decided on: the change holds only if no claim on the name was created
	// since. ranked are the claims that must be unchanged: those ranked
	// before this cluster's on the name, and older ones on its ancestors.
	claimsRev int64
	ranked    []rankedClaim
	// handover is 1 when the change has this cluster start serving a shared
	// name it claimed before, -1 when it stops, 0 otherwise (see share.go).
	handover int8
}

// rankedClaim is another cluster's claim a change was decided on, on the
// name itself or on one of its ancestors.
type rankedClaim struct {
	name, owner string
	modRev      int64
}

// rank adds to c the condition that the claim e on stored is unchanged, once.
func (c *change) rank(stored string, e claimEntry) {
	if !slices.ContainsFunc(c.ranked, func(r rankedClaim) bool { return r.name == stored && r.owner == e.owner }) {
		c.ranked = append(c.ranked, rankedClaim{name: stored, owner: e.owner, modRev: e.modRev})
	}
}

// counts returns the number of operations and of conditions of c.
func (c *change) counts() (ops, cmps int) {
	ops = len(c.puts) + len(c.dels)
	if c.claimPut != nil || c.claimDel {
		ops++
	}
	cmps = len(c.ranked) + len(c.guards)
	if c.claimsRev != 0 {
		cmps++
	}
	return ops, cmps
}

// ops appends the operations and the conditions of c.
func (p *Publisher) ops(c *change, ops []clientv3.Op, cmps []clientv3.Cmp) ([]clientv3.Op, []clientv3.Cmp) {
	switch {
	case c.claimPut != nil:
		ops = append(ops, clientv3.OpPut(p.claimKey(c.name, p.cfg.Owner), string(c.claimPut), clientv3.WithLease(clientv3.LeaseID(c.lease))))
	case c.claimDel:
		ops = append(ops, clientv3.OpDelete(p.claimKey(c.name, p.cfg.Owner)))
	}
	for _, w := range c.puts {
		ops = append(ops, clientv3.OpPut(w.key, string(w.value), clientv3.WithLease(clientv3.LeaseID(c.lease))))
	}
	for _, key := range c.dels {
		ops = append(ops, clientv3.OpDelete(key))
	}
	if c.claimsRev != 0 {
		prefix := p.claimDir + c.name + "/"
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(prefix), "<", c.claimsRev+1).WithPrefix())
	}
	for _, r := range c.ranked {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p.claimKey(r.name, r.owner)), "=", r.modRev))
	}
	return ops, keyConds(c.guards, cmps)
}

// flush writes every dirty name. Names whose writes fail stay dirty.
func (p *Publisher) flush(ctx context.Context) error {
	p.mu.Lock()
	if !p.loaded || !p.complete || !p.active || p.awaitingLeaseLocked() {
		p.mu.Unlock()
		return nil
	}
	if len(p.dirty) == 0 {
		p.count.synced(time.Now())
		p.mu.Unlock()
		return nil
	}
	p.flushing = true
	q := p.takeDirtyLocked()
	p.mu.Unlock()

	failed := p.commitAll(ctx, q)
	// The decisions are told before the flush ends, so that WaitIdle
	// returns once they have been.
	if p.cfg.OnClaim != nil {
		p.tellPending()
	}
	if p.cfg.OnShare != nil {
		p.tellShares()
	}
	p.mu.Lock()
	p.flushing = false
	if failed == nil {
		p.count.synced(time.Now())
	}
	if len(p.dirty) > 0 && failed == nil {
		p.poke()
	}
	p.idle.Broadcast()
	p.mu.Unlock()
	return failed
}

// commitAll commits the changes of q in batches, up to MaxTxnsInFlight at
// once, each decided as its slot frees up, and returns the first failure.
// After a failure no new batch starts: the failed batch and what q has left
// are marked dirty again.
func (p *Publisher) commitAll(ctx context.Context, q *queue) error {
	var (
		start    = time.Now()
		wg       sync.WaitGroup
		failMu   sync.Mutex // guards failed and written
		failed   error
		written  unobserved
		inFlight = make(chan struct{}, p.cfg.MaxTxnsInFlight)
		maxOps   = p.txnOps()
		b        = newBatcher(maxOps)
	)
	stopped := func() bool {
		failMu.Lock()
		defer failMu.Unlock()
		return failed != nil
	}
	for {
		inFlight <- struct{}{}
		p.mu.Lock()
		if stopped() {
			q.requeueLocked(p)
			p.mu.Unlock()
			<-inFlight
			break
		}
		batch := q.fillLocked(p, b)
		p.mu.Unlock()
		if len(batch) == 0 {
			<-inFlight
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inFlight }()
			err := p.commit(ctx, batch)
			if err != nil && p.fewerTxnOps(maxOps, len(batch), err) {
				err = fmt.Errorf("%w: %w", errSmallerTxns, err)
			}
			failMu.Lock()
			if err == nil {
				written.add(batch)
			} else if failed == nil {
				failed = err
			}
			failMu.Unlock()
			if err != nil {
				p.mu.Lock()
				p.requeueLocked(batch)
				p.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	p.logUnobserved(written, time.Since(start))
	return failed
}

// requeueLocked marks the names of a batch not written dirty again, as they
// were.
func (p *Publisher) requeueLocked(batch []change) {
	for _, c := range batch {
		p.markAgainLocked(c.name, c.event, c.observed)
	}
}

// markAgainLocked marks a name a flush did not write dirty again: by a
// change (event) seen at observed, or by a full reconciliation.
func (p *Publisher) markAgainLocked(stored string, event bool, observed time.Time) {
	if _, ok := p.dirty[stored]; !ok {
		p.dirty[stored] = event
	}
	if _, ok := p.since[stored]; !ok && !observed.IsZero() {
		p.since[stored] = observed
	}
}

// compareFromRight orders stored names by their labels from the right, as
// their keys are stored, so that the names of one parent come together: the
// transactions of a flush then ask about few ancestors each (see nested.go).
func compareFromRight(a, b string) int {
	for {
		i, j := strings.LastIndexByte(a, '.'), strings.LastIndexByte(b, '.')
		if c := strings.Compare(a[i+1:], b[j+1:]); c != 0 {
			return c
		}
		switch {
		case i < 0 && j < 0:
			return 0
		case i < 0:
			return -1
		case j < 0:
			return 1
		}
		a, b = a[:i], b[:j]
	}
}

// diffLocked computes the change of one name, marked by a change (event) or by
// a full reconciliation, dropping names that need nothing.
func (p *Publisher) diffLocked(stored string, event bool) (change, bool) {
	n := p.names[stored]
	if n == nil {
		return change{}, false
	}
	c := change{name: stored, event: event, lease: p.leases[n.shard]}
	held := p.heldLocked(stored)
	base := p.keyBase(stored)
	var wants []want
	if outside := heldOutside(n); outside != nil {
		// The records outside keep the name, and its claim, as they are.
		p.tellLocked(stored, &arbitrate.Decision{Outside: outside})
	} else {
		if _, had := p.verdictLocked(stored); had && !p.claiming() && n.records != nil {
			// Without claims only records outside decide: no longer.
			p.tellLocked(stored, &arbitrate.Decision{Granted: true})
		}
		if p.claimLocked(n, &c, held) && !held {
			wants = p.wants(stored, n.records)
		}
	}
	c.keyChange = diff(wants, base, c.lease, n.actual, atName(stored))
	if ops, _ := c.counts(); ops > p.txnOps() {
		// A name's keys change in one transaction, which its own records
		// fit (config holds --max-addresses-per-name to it); the keys of its
		// SRV records, beneath it, wait for the next flush when they would
		// not fit beside them.
		if own, deferred := c.keyChange.withoutBeneath(base); deferred && len(own.puts)+len(own.dels) > 0 {
			c.keyChange = own
			p.markAgainLocked(stored, event, time.Time{})
		}
	}
	if ops, _ := c.counts(); ops == 0 {
		if n.records == nil && len(n.actual) == 0 && len(n.claims) == 0 {
			p.followLocked(stored, "")
			delete(p.names, stored)
		}
		return change{}, false
	}
	return c, true
}

// CountRecords calls f for every record wanted that CoreDNS serves, with its
// stored name and the type CoreDNS serves it as; the apex guard, which CoreDNS
// serves as nothing, is left out.
func (p *Publisher) CountRecords(f func(stored string, t skydns.Type)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for stored, n := range p.names {
		for _, r := range n.records {
			if t := r.Type(); t != skydns.None {
				f(stored, t)
			}
		}
	}
}

// CountOutside returns the number of records of Owner in etcd that this
// Publisher does not own (see Config.Owns), and leaves alone.
func (p *Publisher) CountOutside() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, nm := range p.names {
		for _, e := range nm.actual {
			if e.outside && !e.deleted {
				n++
			}
		}
	}
	return n
}

// commit writes a batch of changes in one transaction and records the result in the view.
func (p *Publisher) commit(ctx context.Context, batch []change) error {
	var cmps []clientv3.Cmp
	if p.cfg.Guard != nil {
		var err error
		if cmps, err = p.cfg.Guard.Compares(); err != nil {
			return fmt.Errorf("%w: %w", ErrFenced, err)
		}
	}
	// Sized up front: an Op is a few hundred bytes, and a transaction holds
	// a hundred or more.
	nops, ncmps := 0, len(cmps)
	for i := range batch {
		o, c := batch[i].counts()
		nops, ncmps = nops+o, ncmps+c
	}
	above := p.aboveCmps(batch)
	ops := make([]clientv3.Op, 0, nops)
	cmps = slices.Grow(cmps, ncmps+len(above))
	for i := range batch {
		ops, cmps = p.ops(&batch[i], ops, cmps)
	}
	cmps = append(cmps, above...)
	// A dry run records its changes in the view as if they were written, at
	// revision 0 so that anything etcd reports supersedes them: each change is
	// then logged and counted once.
	var rev int64
	var keys []string // the keys under way (echo.go)
	if !p.cfg.DryRun {
		// A transaction under way finishes even when ctx ends at shutdown; its
		// own deadline bounds it.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.Timeout)
		defer cancel()
		p.mu.Lock()
		keys = p.sendLocked(batch)
		p.mu.Unlock()
		resp, err := p.client.Txn(tctx).If(cmps...).Then(ops...).Commit()
		p.count.noteTxn(err)
		if err != nil || !resp.Succeeded {
			p.mu.Lock()
			p.unsendLocked(keys)
			p.mu.Unlock()
		}
		if err != nil {
			p.count.txnErrs.Add(1)
			return fmt.Errorf("commit %d operations for %d names: %w", len(ops), len(batch), err)
		}
		if !resp.Succeeded {
			p.count.txnErrs.Add(1)
			return ErrFenced
		}
		rev = resp.Header.Revision
		p.count.txns.Add(1)
		if p.cfg.ObservePropagation != nil {
			now := time.Now()
			for _, c := range batch {
				if !c.observed.IsZero() {
					p.cfg.ObservePropagation(now.Sub(c.observed))
				}
			}
		}
	}

	p.mu.Lock()
	p.committedLocked(batch, rev)
	p.unsendLocked(keys)
	p.mu.Unlock()
	p.logChanges(batch, rev)
	return nil
}

// committedLocked records a batch committed at revision rev (0 for a dry
// run) in the view and the claims, and counts it.
func (p *Publisher) committedLocked(batch []change, rev int64) {
	for _, c := range batch {
		n := p.names[c.name]
		for _, w := range c.puts {
			n.put(entry{key: p.relKey(c.name, w.key), sum: digestOf(w.value), host: w.host, modRev: rev, lease: c.lease}, "")
		}
		// The keys come one by one, from the watch's echo or from here, and
		// the slice grows by doubling: a name with an address and two SRV
		// records would keep room for four keys. The view holds a name's
		// keys for as long as it is published, so it holds them without
		// the room.
		if len(c.puts) > 0 && cap(n.actual) > len(n.actual)+len(n.actual)/4 {
			n.actual = slices.Clone(n.actual)
		}
		switch {
		case c.claimPut != nil:
			created := rev
			if own := p.ownClaimLocked(c.name); own != nil {
				created = own.created
			}
			shared, share := p.decodeClaim(p.cfg.Owner, c.claimPut)
			p.putClaimLocked(c.name, claimEntry{owner: p.cfg.Owner, value: c.claimPut, shared: shared, share: share, created: created, modRev: rev, lease: c.lease})
		case c.claimDel:
			p.removeClaimLocked(c.name, p.cfg.Owner)
		}
		for _, key := range c.dels {
			rel := n.put(entry{key: p.relKey(c.name, key), modRev: rev, deleted: true}, "")
			p.tombs = append(p.tombs, tomb{name: c.name, key: rel, rev: rev})
		}
		switch c.handover {
		case 1:
			p.count.tookOver.Add(1)
		case -1:
			p.count.handedOver.Add(1)
		}
		p.count.puts.Add(int64(len(c.puts)))
		p.count.deletes.Add(int64(len(c.dels)))
	}
}
