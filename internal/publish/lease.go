package publish

import (
	"context"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// With Config.RecordExpiry, every key the Publisher writes (records and
// claims) is attached to one etcd lease of that TTL, which the Publisher keeps
// alive. When skylb stops renewing it (its cluster lost, the controller gone),
// etcd deletes the keys once the TTL has passed, with no other cluster
// involved. etcd itself never expires a lease because it was down or electing
// a leader: it restores every lease's full TTL when a leader takes over.
//
// The lease outlives skylb's restarts and hand-overs between replicas: a
// Publisher adopts the lease its keys already carry when it is still alive
// and has the configured TTL, so a restart rewrites nothing. It grants a new
// lease only when there is none to adopt, or when its lease expired; the keys
// are then rewritten with the new one.

// leaseSeconds returns RecordExpiry in the whole seconds etcd takes.
func (p *Publisher) leaseSeconds() int64 {
	return max(int64((p.cfg.RecordExpiry+time.Second-1)/time.Second), 1)
}

// awaitingLeaseLocked reports whether writes must wait for a lease.
func (p *Publisher) awaitingLeaseLocked() bool {
	return p.cfg.RecordExpiry > 0 && !p.cfg.DryRun && p.lease == 0
}

// leaseLoop obtains the lease once the view is loaded, keeps it alive, and
// obtains another when it is lost, until ctx ends.
func (p *Publisher) leaseLoop(ctx context.Context) {
	bo := newBackoff(200*time.Millisecond, maxRetryDelay)
	for ctx.Err() == nil {
		id, err := p.obtainLease(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Log.WithError(err).Warn("obtaining the lease of the records failed")
			}
			sleep(ctx, bo.next())
			continue
		}
		if id == 0 {
			// Not loaded yet, or not active: wait for either.
			select {
			case <-ctx.Done():
			case <-p.leaseWake:
			}
			continue
		}
		bo.reset()
		p.mu.Lock()
		p.lease = id
		p.markAllLocked()
		p.mu.Unlock()

		p.keepAlive(ctx, id)
		if ctx.Err() != nil {
			return
		}
		p.leasesLost.Add(1)
		p.cfg.Log.WithField("lease", hexID(id)).Error("the lease of the records expired; writing them again with a new one")
		p.mu.Lock()
		if p.lease == int64(id) {
			p.lease = 0
		}
		p.mu.Unlock()
	}
}

// keepAlive renews the lease until it expires or ctx ends.
func (p *Publisher) keepAlive(ctx context.Context, id int64) {
	ch, err := p.client.KeepAlive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return
	}
	for range ch {
		// The channel closes when the lease is gone or ctx ends; the client
		// retries the renewals meanwhile, across reconnections.
	}
}

// obtainLease returns the lease to write with: the one skylb's keys carry
// when it is alive with the configured TTL, else a new one. It returns 0 until
// the view is loaded and the Publisher active: a follower writes nothing, and
// adopts the leader's lease when it takes over.
func (p *Publisher) obtainLease(ctx context.Context) (int64, error) {
	p.mu.Lock()
	loaded, active := p.loaded, p.active
	candidate := p.commonLeaseLocked()
	p.mu.Unlock()
	if !loaded || !active {
		return 0, nil
	}
	tctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	if candidate != 0 {
		resp, err := p.client.TimeToLive(tctx, clientv3.LeaseID(candidate))
		if err != nil {
			return 0, err
		}
		if resp.TTL > 0 && resp.GrantedTTL == p.leaseSeconds() {
			p.cfg.Log.WithFields(logrus.Fields{"lease": hexID(candidate), "ttl": resp.TTL}).Info("records expire with the lease they carry")
			return candidate, nil
		}
	}
	resp, err := p.client.Grant(tctx, p.leaseSeconds())
	if err != nil {
		return 0, err
	}
	p.cfg.Log.WithFields(logrus.Fields{"lease": hexID(int64(resp.ID)), "ttl": resp.TTL}).Info("granted the lease of the records")
	return int64(resp.ID), nil
}

// commonLeaseLocked returns the lease most of skylb's keys carry, or 0.
func (p *Publisher) commonLeaseLocked() int64 {
	count := make(map[int64]int)
	for _, n := range p.names {
		for _, e := range n.actual {
			if e.lease != 0 && !e.deleted {
				count[e.lease]++
			}
		}
	}
	best, most := int64(0), 0
	for id, c := range count {
		if c > most || c == most && id < best {
			best, most = id, c
		}
	}
	return best
}

// wakeLeaseLocked wakes leaseLoop after the view was loaded or the Publisher
// became active.
func (p *Publisher) wakeLeaseLocked() {
	select {
	case p.leaseWake <- struct{}{}:
	default:
	}
}

// hexID formats a lease id as etcdctl does.
func hexID(id int64) string { return strconv.FormatInt(id, 16) }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
