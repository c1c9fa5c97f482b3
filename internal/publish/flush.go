package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/skydns"
)

// flushLoop writes dirty names whenever there are some, backing off on errors.
func (p *Publisher) flushLoop(ctx context.Context) {
	bo := newBackoff(100*time.Millisecond, maxRetryDelay)
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.work.wake:
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
			p.work.wakeUp()
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
			p.work.wakeUp()
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
	lease    int64     // the lease of the claim's put
	// recordLease is the lease of the records' puts: lease, or none when
	// the claim holds them (see recordLease).
	recordLease int64
	keyChange
	claimPlan
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
		ops = append(ops, clientv3.OpPut(p.codec.ownKey(c.name), string(c.claimPut), clientv3.WithLease(clientv3.LeaseID(c.lease))))
	case c.claimDel:
		ops = append(ops, clientv3.OpDelete(p.codec.ownKey(c.name)))
	}
	for _, w := range c.puts {
		ops = append(ops, clientv3.OpPut(w.key, string(w.value), clientv3.WithLease(clientv3.LeaseID(c.recordLease))))
	}
	for _, key := range c.dels {
		ops = append(ops, clientv3.OpDelete(key))
	}
	if c.claimsRev != 0 {
		prefix := p.codec.nameDir(c.name)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(prefix), "<", c.claimsRev+1).WithPrefix())
	}
	for _, r := range c.ranked {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p.codec.key(r.name, r.owner)), "=", r.modRev))
	}
	return ops, keyConds(c.guards, cmps)
}

// flush writes every dirty name. Names whose writes fail stay dirty.
func (p *Publisher) flush(ctx context.Context) error {
	p.lock()
	if !p.view.loaded || !p.view.complete || !p.work.active || p.awaitingLeaseLocked() {
		p.mu.Unlock()
		return nil
	}
	asked := p.work.asked
	p.work.asked = false
	if len(p.work.dirty) == 0 {
		// Woken by a change that marked nothing, such as the echo of a
		// write, it has not synced anything.
		if asked {
			p.count.synced(time.Now())
		}
		p.mu.Unlock()
		return nil
	}
	p.work.flushing = true
	q := p.work.take()
	if p.cfg.Gate != nil {
		p.mu.Unlock()
		closed := p.askGate(q.marked)
		p.lock()
		p.work.closed = closed
	}
	q.orderLocked(p)
	p.mu.Unlock()

	failed := p.commitAll(ctx, q)
	// The decisions are told once the flush's transactions are done, and
	// before the flush ends, so that WaitIdle returns once they have been.
	p.cfg.Verdicts.add(takeLocked(&p.mu, &p.clusters.told))
	if p.answers != nil {
		p.tellAnswered()
	}
	p.lock()
	p.work.flushing = false
	p.work.closed = nil
	if failed == nil {
		p.count.synced(time.Now())
	}
	if len(p.work.dirty) > 0 && failed == nil {
		p.work.poke()
	}
	p.work.done.Broadcast()
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
		p.lock()
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
				p.lock()
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
		p.work.markAgain(c.name, c.event, c.observed)
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
// a full reconciliation, dropping names that need nothing: the claims decide
// (claimLocked), plan computes the change from what the Publisher holds, and
// diffLocked records what plan decided.
func (p *Publisher) diffLocked(stored string, event bool) (change, bool) {
	n := p.view.names[stored]
	if n == nil {
		return change{}, false
	}
	in := planInput{
		stored: stored, prefix: p.cfg.Prefix, owner: p.cfg.Owner,
		records: n.records, actual: n.actual, claimed: len(n.claims) > 0,
		held: p.heldLocked(stored), lease: p.lease.id(n.shard), maxOps: p.txnOps(),
	}
	if outside := heldOutside(n); outside != nil {
		// The records outside keep the name, and its claim, as they are.
		p.tellLocked(stored, &arbitrate.Decision{Outside: outside})
	} else {
		if _, had := p.verdictLocked(stored); had && !p.codec.claiming() && n.records != nil {
			// Without claims only records outside decide: no longer.
			p.tellLocked(stored, &arbitrate.Decision{Granted: true})
		}
		in.claim = p.claimLocked(n, stored, in.lease, in.held)
		in.gate = in.claim.write && !in.held && p.gateOpen(stored)
	}
	in.recordLease = p.recordLease(n, in.lease)
	out := plan(in)
	for _, r := range out.misfiled {
		p.cfg.Log.WithField("record", r.String()).Errorf("record not written: it belongs to %s, not to %s, the name it was set at", skydns.HeldBy(r.Name), stored)
	}
	n.shareHosts(out.wants, p.keyBaseLen(stored))
	if out.again {
		p.work.markAgain(stored, event, time.Time{})
	}
	if out.drop {
		p.follow.set(stored, "")
		delete(p.view.names, stored)
	}
	if ops, _ := out.counts(); ops == 0 {
		return change{}, false
	}
	out.event = event
	return out.change, true
}

// guardCmps returns the Guard's conditions, which every transaction of the
// Publisher carries; an error wraps ErrFenced when no write may be attempted.
func (p *Publisher) guardCmps() ([]clientv3.Cmp, error) {
	if p.cfg.Guard == nil {
		return nil, nil
	}
	cmps, err := p.cfg.Guard.Compares()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return cmps, nil
}

// commit writes a batch of changes in one transaction and records the result in the view.
func (p *Publisher) commit(ctx context.Context, batch []change) error {
	cmps, err := p.guardCmps()
	if err != nil {
		return err
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
		p.lock()
		keys = p.work.sending.add(batch, p.codec)
		p.mu.Unlock()
		resp, err := p.client.Txn(tctx).If(cmps...).Then(ops...).Commit()
		p.count.noteTxn(err)
		if err != nil || !resp.Succeeded {
			p.lock()
			p.work.sending.forget(keys)
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

	p.lock()
	p.committedLocked(batch, rev)
	p.work.sending.forget(keys)
	p.mu.Unlock()
	p.logChanges(batch, rev)
	return nil
}

// committedLocked records a batch committed at revision rev (0 for a dry
// run) in the view and the claims, and counts it.
func (p *Publisher) committedLocked(batch []change, rev int64) {
	for _, c := range batch {
		n := p.view.names[c.name]
		for _, w := range c.puts {
			n.put(entry{key: p.relKey(c.name, w.key), sum: digestOf(w.value), host: w.host, modRev: rev, lease: c.recordLease}, "")
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
			shared, share := p.codec.decode(p.cfg.Owner, c.claimPut)
			p.putClaimLocked(c.name, claimEntry{owner: p.cfg.Owner, value: c.claimPut, shared: shared, share: share, created: created, modRev: rev, lease: c.lease})
		case c.claimDel:
			p.removeClaimLocked(c.name, p.cfg.Owner)
		}
		for _, key := range c.dels {
			rel := n.put(entry{key: p.relKey(c.name, key), modRev: rev, deleted: true}, "")
			p.view.tombs = append(p.view.tombs, tomb{name: c.name, key: rel, rev: rev})
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
