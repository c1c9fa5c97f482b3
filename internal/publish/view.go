package publish

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
)

// table is what a Publisher knows of each name: the records wanted for it
// and the keys of skylb's etcd holds for it (the view), with the tombstones
// of the keys it deleted.
type table struct {
	names    map[string]*name
	tombs    []tomb
	loaded   bool // the view was listed from etcd and follows its watch
	complete bool // every wanted name has been Set (see Complete)
	// atLoad is, by the object they come from, the sum of the digests of
	// the records a load before Complete found (see Loaded).
	atLoad map[string]uint64
	// firstLoad is closed once the view has been loaded.
	firstLoad chan struct{}
}

// loadWithRetry lists the prefix until it succeeds or ctx ends, and returns the
// revision the view is current at.
func (p *Publisher) loadWithRetry(ctx context.Context) (int64, bool) {
	bo := newBackoff(200*time.Millisecond, maxRetryDelay)
	for attempt := 0; ; attempt++ {
		rev, err := p.load(ctx)
		if err == nil {
			if attempt > 0 {
				p.cfg.Log.WithField("revision", rev).Info("etcd is reachable again; view loaded")
			}
			return rev, true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		p.count.listErrs.Add(1)
		delay := bo.next()
		entry := p.cfg.Log.WithError(err).WithField("retry_in", delay)
		if attempt == 0 {
			entry.Warn("listing etcd failed")
		} else {
			entry.Debug("listing etcd failed again")
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(delay):
		}
	}
}

// load lists the prefix, and the claims, page by page at one revision and
// replaces the view.
func (p *Publisher) load(ctx context.Context) (int64, error) {
	p.lock()
	p.view.loaded = false
	// Only a load before Complete sums the records by object (see Loaded):
	// a relist later has no one to tell.
	var bySource map[string]uint64
	if !p.view.complete {
		bySource = make(map[string]uint64)
	}
	p.mu.Unlock()

	owned := make(map[string][]entry)
	outsideOf := make(map[string]map[string]string) // stored name -> key -> source (see name.outside)
	occupied := make(map[string]bool)
	rev, err := p.listAt(ctx, p.dir, 0, func(kv *mvccpb.KeyValue) {
		recName, label, ok := skydns.SplitKey(p.cfg.Prefix, string(kv.Key))
		if !ok {
			return
		}
		stored := skydns.HeldBy(recName)
		if v, outside, mine := p.owns(kv.Value); mine {
			rel := string(kv.Key[p.keyBaseLen(stored):])
			owned[stored] = append(owned[stored], entry{key: rel, sum: digestOf(kv.Value), host: v.Record(recName).Data(), modRev: kv.ModRevision, lease: kv.Lease, outside: outside != ""})
			if outside != "" {
				if outsideOf[stored] == nil {
					outsideOf[stored] = make(map[string]string)
				}
				outsideOf[stored][rel] = outside
			}
			if bySource != nil && outside == "" && v.Source != "" {
				bySource[v.Source] += v.Record(recName).Digest()
			}
		} else if label == "" {
			occupied[stored] = true // see atname.go
		}
	})
	if err != nil {
		return 0, err
	}
	claims := make(map[string][]claimEntry)
	if p.codec.claiming() {
		if claims, err = p.loadClaims(ctx, rev); err != nil {
			return 0, err
		}
	}

	p.lock()
	defer p.mu.Unlock()
	for _, actual := range owned {
		// A range returns keys in order, so this only checks.
		slices.SortFunc(actual, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	}
	spread(p.view.names, owned, func(n *name, actual []entry) { n.actual = actual })
	spread(p.view.names, outsideOf, func(n *name, m map[string]string) { n.outside = m })
	spread(p.view.names, claims, func(n *name, list []claimEntry) { n.claims = list })
	p.clusters.claimsRev = rev
	p.follow.occupied = occupied
	p.reindexClaimsLocked()
	p.view.tombs = nil
	if !p.view.complete {
		p.view.atLoad = bySource
	}
	select {
	case <-p.view.firstLoad:
	default:
		close(p.view.firstLoad)
	}
	p.view.loaded = true
	p.lease.wakeAll()
	p.count.relists.Add(1)
	p.markAllLocked()
	return rev, nil
}

// listAt calls f for every key under dir at revision rev (0: the current one),
// reading page by page, and returns the revision read.
func (p *Publisher) listAt(ctx context.Context, dir string, rev int64, f func(*mvccpb.KeyValue)) (int64, error) {
	end := clientv3.GetPrefixRangeEnd(dir)
	key := dir
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(p.cfg.PageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		tctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
		resp, err := p.client.Get(tctx, key, opts...)
		cancel()
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			f(kv)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// owns reports whether a stored value is skylb's, its decoded value, and its
// source when that lies outside what this skylb may delete (see Config.Owns).
func (p *Publisher) owns(value []byte) (v skydns.Value, outside string, mine bool) {
	// Cheap test first: most values of a shared prefix are not skylb's.
	if !bytes.Contains(value, []byte(p.cfg.Owner)) {
		return skydns.Value{}, "", false
	}
	v, err := skydns.Decode(value)
	if err != nil || v.Owner != p.cfg.Owner {
		return skydns.Value{}, "", false
	}
	if p.cfg.Owns != nil && !p.cfg.Owns(v.Source) {
		return v, v.Source, true
	}
	return v, "", true
}

// spread hands every name its part of what a load found, with set (the zero
// value when there is none), and adds a name for each part of a name not
// held. It empties parts.
func spread[T any](names map[string]*name, parts map[string]T, set func(*name, T)) {
	for stored, n := range names {
		set(n, parts[stored])
		delete(parts, stored)
	}
	for stored, part := range parts {
		n := newName(stored)
		set(n, part)
		names[stored] = n
	}
}

// watchAll watches the records and the claims from revision rev+1 on, until a
// relist is needed or ctx ends.
func (p *Publisher) watchAll(ctx context.Context, rev int64) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		p.watch(ctx, p.dir, rev, p.apply)
	})
	if p.codec.claiming() {
		wg.Go(func() {
			defer cancel()
			p.watch(ctx, p.codec.dir, rev, p.applyClaims)
		})
	}
	wg.Wait()
}

// watch hands the changes under dir from revision rev+1 on to apply, until a
// relist is needed or ctx ends.
func (p *Publisher) watch(ctx context.Context, dir string, rev int64, apply func([]*clientv3.Event, int64)) {
	next := rev + 1
	bo := newBackoff(200*time.Millisecond, 10*time.Second)
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := p.client.Watch(wctx, dir, clientv3.WithPrefix(), clientv3.WithRev(next), clientv3.WithProgressNotify())
		for wr := range wch {
			if wr.CompactRevision != 0 {
				cancel()
				p.cfg.Log.WithFields(logrus.Fields{"revision": next, "compacted": wr.CompactRevision}).
					Warn("etcd compacted past the watch; listing again")
				return
			}
			if err := wr.Err(); err != nil {
				p.count.watchErrs.Add(1)
				p.cfg.Log.WithError(err).Debug("etcd watch ended")
				break
			}
			bo.reset()
			if n := len(wr.Events); n > 0 {
				next = wr.Events[n-1].Kv.ModRevision + 1
			} else if wr.IsProgressNotify() {
				next = wr.Header.Revision + 1
			}
			apply(wr.Events, next-1)
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(bo.next()):
		}
	}
}

// apply hands the records' watched events, up to revision rev, to the writer.
func (p *Publisher) apply(events []*clientv3.Event, rev int64) {
	p.send(message{kind: msgRecords, events: events, rev: rev})
}

// applyLocked records watched events in the view. Events no newer than what
// the view holds are skylb's own writes, already recorded. Any other change
// to a key of skylb's marks its name for repair.
func (p *Publisher) applyLocked(events []*clientv3.Event, rev int64) {
	for _, ev := range events {
		key := string(ev.Kv.Key)
		recName, label, ok := skydns.SplitKey(p.cfg.Prefix, key)
		if !ok {
			continue
		}
		stored := skydns.HeldBy(recName)
		rel := p.relKey(stored, key)
		n := p.view.names[stored]
		var old *entry
		if n != nil {
			old = n.find(rel)
		}
		if old != nil && ev.Kv.ModRevision <= old.modRev {
			continue
		}
		var v skydns.Value
		outside, mine := "", false
		if ev.Type == mvccpb.PUT {
			v, outside, mine = p.owns(ev.Kv.Value)
		}
		if label == "" {
			p.occupyLocked(stored, ev.Type == mvccpb.PUT && !mine)
		}
		switch {
		case mine:
			if n == nil {
				n = newName(stored)
				p.view.names[stored] = n
			}
			n.put(entry{key: rel, sum: digestOf(ev.Kv.Value), host: v.Record(recName).Data(), modRev: ev.Kv.ModRevision, lease: ev.Kv.Lease, outside: outside != ""}, outside)
		case old != nil:
			// Deleted, or overwritten with something that is not skylb's.
			n.remove(rel)
		default:
			continue
		}
		if !p.work.sending.echo(ev) {
			p.markLocked(stored)
		}
	}
	p.pruneTombsLocked(rev)
}

// pruneTombsLocked forgets the tombstones of deletes the watch has passed.
func (p *Publisher) pruneTombsLocked(rev int64) {
	kept := p.view.tombs[:0]
	for _, t := range p.view.tombs {
		if t.rev > rev {
			kept = append(kept, t)
			continue
		}
		if n := p.view.names[t.name]; n != nil {
			if e := n.find(t.key); e != nil && e.deleted && e.modRev == t.rev {
				n.remove(t.key)
			}
		}
	}
	p.view.tombs = kept
}
