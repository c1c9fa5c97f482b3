package publish

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leases are the leases a Publisher writes the records with, by shard. They
// are a part of their own, outside the Publisher's lock: each shard's loop
// (leaseLoop) sets its lease, and the Publisher reads them as it decides.
type leases struct {
	// ids are the leases the keys are written with, by shard: 0 without
	// RecordExpiry, and while a shard holds none.
	ids  [leaseShards]atomic.Int64
	wake [leaseShards]chan struct{} // wakes a shard's lease loop
}

func newLeases() *leases {
	l := &leases{}
	for i := range l.wake {
		l.wake[i] = make(chan struct{}, 1)
	}
	return l
}

// id returns the lease of a shard; 0 while it holds none.
func (l *leases) id(shard uint8) int64 { return l.ids[shard].Load() }

// missing reports whether a shard holds no lease.
func (l *leases) missing() bool {
	for i := range l.ids {
		if l.ids[i].Load() == 0 {
			return true
		}
	}
	return false
}

// wakeAll wakes every shard's loop: the view was loaded, or the Publisher
// became active.
func (l *leases) wakeAll() {
	for _, wake := range l.wake {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// With Config.RecordExpiry, the Publisher's claims are attached to an etcd
// lease of that TTL, which it keeps alive. When skylb stops renewing the
// leases (its cluster lost, the controller gone), etcd deletes the claims once
// the TTL has passed, and the other clusters sharing the etcd, which watch
// the claims, delete the records the claims held (see sweep.go). The records
// themselves carry no lease: CoreDNS's etcd plugin asks etcd for the time
// left on the lease of every key it answers from, a call per key that took
// the answers read from etcd to a ninth of their rate. Records that no claim
// holds (the apex guard, every record when names are not claimed) keep the
// lease and expire with it. etcd itself never expires a lease because it was
// down or electing a leader: it restores every lease's full TTL when a leader
// takes over.
//
// The names are spread over leaseShards leases by a hash of the name: etcd,
// for a user that is not root, checks the permission of every key already
// attached to a lease each time it attaches another, so that one lease for
// all keys would make writing n keys cost n² checks (minutes at tens of
// thousands of keys).
//
// The leases outlive skylb's restarts and hand-overs between replicas: a
// Publisher adopts the lease the keys of a shard already carry when it is
// still alive and has the configured TTL, so a restart rewrites nothing. It
// grants a new lease only when there is none to adopt, or when the shard's
// lease expired; the shard's keys are then rewritten with the new one.

// leaseShards is the number of leases the keys are spread over: 64,000 keys
// make 500 a lease. A shard number fits in a byte.
const leaseShards = 128

// recordLease returns the lease the records of n are written with, where its
// claim is written with lease: none when a claim holds them.
func (p *Publisher) recordLease(n *name, lease int64) int64 {
	if p.codec.claiming() && !n.unclaimed {
		return 0
	}
	return lease
}

// leaseShard returns the lease shard of a stored name.
func leaseShard(stored string) uint8 {
	h := fnv.New32a()
	h.Write([]byte(stored))
	return uint8(h.Sum32() % leaseShards)
}

// leaseSeconds returns RecordExpiry in the whole seconds etcd takes.
func (p *Publisher) leaseSeconds() int64 {
	return max(int64((p.cfg.RecordExpiry+time.Second-1)/time.Second), 1)
}

// awaitingLeaseLocked reports whether writes must wait for a lease: until
// every shard holds one.
func (p *Publisher) awaitingLeaseLocked() bool {
	return p.cfg.RecordExpiry != 0 && !p.cfg.DryRun && p.lease.missing()
}

// leaseLoop obtains the lease of a shard once the view is loaded, keeps it
// alive, and obtains another when it is lost, until ctx ends.
func (p *Publisher) leaseLoop(ctx context.Context, shard int) {
	bo := newBackoff(200*time.Millisecond, maxRetryDelay)
	for ctx.Err() == nil {
		id, err := p.obtainLease(ctx, shard)
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Log.WithError(err).WithField("shard", shard).Warn("obtaining the lease of the records failed")
			}
			sleep(ctx, bo.next())
			continue
		}
		if id == 0 {
			// Not loaded yet, or not active: wait for either.
			select {
			case <-ctx.Done():
			case <-p.lease.wake[shard]:
			}
			continue
		}
		bo.reset()
		p.lease.ids[shard].Store(id)
		p.send(message{kind: msgShard, shard: shard})

		p.keepAlive(ctx, id)
		if ctx.Err() != nil {
			return
		}
		p.count.leasesLost.Add(1)
		p.cfg.Log.WithFields(logrus.Fields{"lease": hexID(id), "shard": shard}).Error("a lease of the records expired; writing its records again with a new one")
		p.lease.ids[shard].CompareAndSwap(id, 0)
	}
}

// markShardLocked marks the names of a lease shard, to be written with its
// lease.
func (p *Publisher) markShardLocked(shard int) {
	p.markFullLocked(func(n *name) bool { return int(n.shard) == shard })
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

// obtainLease returns the lease to write a shard with: the one the shard's
// keys carry when it is alive with the configured TTL, else a new one. It
// returns 0 until the view is loaded and the Publisher active: a follower
// writes nothing, and adopts the leader's leases when it takes over.
func (p *Publisher) obtainLease(ctx context.Context, shard int) (int64, error) {
	p.lock()
	loaded, active := p.view.loaded, p.work.active
	candidate := p.commonLeaseLocked(shard)
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
			p.cfg.Log.WithFields(logrus.Fields{"lease": hexID(candidate), "shard": shard, "ttl": resp.TTL}).Debug("records expire with the lease they carry")
			return candidate, nil
		}
	}
	resp, err := p.client.Grant(tctx, p.leaseSeconds())
	if err != nil {
		return 0, err
	}
	p.cfg.Log.WithFields(logrus.Fields{"lease": hexID(int64(resp.ID)), "shard": shard, "ttl": resp.TTL}).Debug("granted a lease of the records")
	return int64(resp.ID), nil
}

// commonLeaseLocked returns the lease most of a shard's keys (records and
// claims) carry, or 0.
func (p *Publisher) commonLeaseLocked(shard int) int64 {
	count := make(map[int64]int)
	for _, n := range p.view.names {
		if int(n.shard) != shard {
			continue
		}
		for _, e := range n.actual {
			if e.lease != 0 && !e.deleted {
				count[e.lease]++
			}
		}
		if own := n.claimOf(p.cfg.Owner); own != nil && own.lease != 0 {
			count[own.lease]++
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

// hexID formats a lease id as etcdctl does.
func hexID(id int64) string { return strconv.FormatInt(id, 16) }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
