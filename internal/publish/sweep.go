package publish

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
)

// With Config.RecordExpiry the records a claim holds carry no lease; their
// claim does (see lease.go). When another cluster's leased claim disappears
// while this Publisher writes, that cluster either withdrew the name, in the
// transaction that deleted its records, or stopped renewing its lease: then
// its records are still there, and nobody else will remove them. The
// sweeper deletes them, in a transaction that holds only while the claim is
// still absent and the records unchanged: a cluster that comes back and
// claims the name again keeps them. Every cluster that sees the claim go
// sweeps; the first transaction deletes, the others find nothing.
//
// A cluster's records left behind while no other cluster ran stay until
// their own cluster returns and writes the name again or withdraws it.

// sweeper holds the names to sweep, under its own lock: the Publisher's
// lock is held while the claims' watch adds to it.
type sweeper struct {
	mu    sync.Mutex
	queue []sweep
	wake  chan struct{}
}

// sweep is one name whose claim by owner expired.
type sweep struct{ stored, owner string }

func newSweeper() *sweeper { return &sweeper{wake: make(chan struct{}, 1)} }

// add queues a sweep of stored for owner's records.
func (s *sweeper) add(stored, owner string) {
	s.mu.Lock()
	s.queue = append(s.queue, sweep{stored, owner})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the queued sweeps and empties the queue.
func (s *sweeper) take() []sweep {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.queue
	s.queue = nil
	return out
}

// sweepLoop sweeps the names the claims' watch queued until ctx ends.
func (p *Publisher) sweepLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.sweeper.wake:
		}
		// One line per cluster and batch: a lost cluster's claims expire
		// together, thousands at once.
		swept := make(map[string][2]int) // owner -> names, records
		for _, sw := range p.sweeper.take() {
			bo := newBackoff(100*time.Millisecond, maxRetryDelay)
			for attempt := 1; ; attempt++ {
				n, err := p.sweepOne(ctx, sw)
				if err == nil {
					if n > 0 {
						s := swept[sw.owner]
						swept[sw.owner] = [2]int{s[0] + 1, s[1] + n}
					}
					break
				}
				if ctx.Err() != nil {
					return
				}
				if attempt == 5 {
					p.cfg.Log.WithError(err).WithFields(logrus.Fields{"name": sw.stored, "owner": sw.owner}).Warn("deleting the records of an expired claim failed; they stay until their cluster returns")
					break
				}
				sleep(ctx, bo.next())
			}
		}
		for owner, s := range swept {
			p.cfg.Log.WithFields(logrus.Fields{"owner": owner, "names": s[0], "records": s[1]}).Info("deleted the records of another cluster whose claims expired")
		}
	}
}

// sweepOne deletes owner's unleased records at stored and beneath it (its
// SRV records), if owner's claim on stored is still absent, and returns how
// many it deleted.
func (p *Publisher) sweepOne(ctx context.Context, sw sweep) (int, error) {
	tctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	resp, err := p.client.Get(tctx, p.keyBase(sw.stored), clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	var ops []clientv3.Op
	// The claim still absent, each record unchanged.
	conds := []keyCond{{key: p.codec.key(sw.stored, sw.owner)}}
	for _, kv := range resp.Kvs {
		name, _, ok := skydns.SplitKey(p.cfg.Prefix, string(kv.Key))
		if !ok || name != sw.stored && skydns.HeldBy(name) != sw.stored || kv.Lease != 0 {
			continue
		}
		if v, err := skydns.Decode(kv.Value); err != nil || v.Owner != sw.owner {
			continue
		}
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		conds = append(conds, keyCond{key: string(kv.Key), modRev: kv.ModRevision})
	}
	if len(ops) == 0 {
		return 0, nil
	}
	cmps, err := p.guardCmps()
	if err != nil {
		return 0, err
	}
	cmps = keyConds(conds, cmps)
	if len(cmps) > p.txnOps() {
		// More keys than a transaction holds: a name has at most
		// --max-addresses-per-name records, which fit; leave the rest.
		return 0, fmt.Errorf("%d records of %s at %s: more than a transaction holds", len(ops), sw.owner, sw.stored)
	}
	txn, err := p.client.Txn(tctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, err
	}
	if !txn.Succeeded {
		// The claim is back, or the records changed: their cluster is
		// writing again.
		return 0, nil
	}
	p.count.swept.Add(int64(len(ops)))
	p.cfg.Log.WithFields(logrus.Fields{"name": sw.stored, "owner": sw.owner, "records": len(ops)}).Debug("deleted the records of another cluster whose claim expired")
	return len(ops), nil
}
