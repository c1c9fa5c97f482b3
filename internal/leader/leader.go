// Package leader makes sure that at most one skylb replica writes at a time, and
// that a replica which lost leadership cannot land a single write afterwards.
//
// A replica leads when it holds two things: the Kubernetes Lease (lease.go,
// the protocol of client-go's leader election), and the etcd election key under /skylb/leader/<owner-id>
// (etcd's concurrency package; the key lives as long as the replica's etcd
// session lease). Every transaction the publisher commits is conditional on that
// key still existing with the create revision this replica won it at. A leader
// that is paused past its leases (garbage collection, SIGSTOP, a partition) and
// wakes up finds its key gone, because its etcd session expired and another
// replica won the election; its transaction fails its comparison and writes
// nothing. The Kubernetes Lease alone cannot give that guarantee: nothing stops a
// deposed leader's request that is already on its way.
package leader

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// ErrNotLeader is returned by Compares while this replica does not lead.
var ErrNotLeader = errors.New("not the leader")

// Config configures an Elector.
type Config struct {
	Namespace string // of the Kubernetes Lease
	Name      string // of the Kubernetes Lease
	Identity  string // this replica, e.g. the pod name
	// Kubernetes Lease timings; zero values take client-go's usual defaults.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// EtcdKey is the election prefix in etcd, e.g. /skylb/leader/<owner-id>.
	EtcdKey string
	// EtcdTTL is the etcd session lease in seconds; shorter than LeaseDuration so
	// that a dead leader's etcd key is gone by the time its Lease can be taken.
	EtcdTTL int
	Log     logrus.FieldLogger
}

func (c *Config) defaults() {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.EtcdTTL == 0 {
		c.EtcdTTL = max(1, int((c.LeaseDuration*2/3)/time.Second))
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
}

// Elector campaigns for leadership.
type Elector struct {
	cfg  Config
	kube API
	etcd *clientv3.Client

	mu      sync.Mutex
	key     string
	rev     int64
	leading bool
}

// New returns an Elector.
func New(cfg Config, kube API, etcd *clientv3.Client) *Elector {
	cfg.defaults()
	return &Elector{cfg: cfg, kube: kube, etcd: etcd}
}

// Compares returns the condition every write must meet: this replica's election
// key still exists with the revision it was won at. It implements publish.Guard.
func (e *Elector) Compares() ([]clientv3.Cmp, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return nil, ErrNotLeader
	}
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.key), "=", e.rev)}, nil
}

// Leading reports whether this replica leads.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Run campaigns until ctx ends. Each time this replica becomes the leader, lead
// is called with a context that ends when leadership ends; lead must return
// promptly then, and Run resigns only after it has returned. Run returns only
// once every call of lead has.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) error {
	l := &lease{cfg: e.cfg, api: e.kube}
	for ctx.Err() == nil {
		if !l.acquire(ctx) {
			return nil
		}
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.lead(lctx, lead)
		}()
		l.renew(lctx)
		// A lost Lease ends this round: its lead returns before the Lease
		// is released or the next round may start another.
		cancel()
		<-done
		e.cfg.Log.Info("stopped leading")
		if ctx.Err() != nil {
			l.release()
		}
	}
	return nil
}

// lead runs while this replica holds the Kubernetes Lease: it wins the etcd
// election, calls lead, and resigns when either leadership ends.
func (e *Elector) lead(ctx context.Context, lead func(context.Context)) {
	log := e.cfg.Log.WithField("identity", e.cfg.Identity)
	log.Info("holding the Kubernetes Lease; campaigning in etcd")
	for ctx.Err() == nil {
		session, err := concurrency.NewSession(e.etcd, concurrency.WithTTL(e.cfg.EtcdTTL), concurrency.WithContext(ctx))
		if err != nil {
			log.WithError(err).Warn("etcd session")
			sleep(ctx, time.Second)
			continue
		}
		election := concurrency.NewElection(session, e.cfg.EtcdKey)
		if err := election.Campaign(ctx, e.cfg.Identity); err != nil {
			session.Close()
			if ctx.Err() == nil {
				log.WithError(err).Warn("etcd campaign")
				sleep(ctx, time.Second)
			}
			continue
		}
		e.mu.Lock()
		e.key, e.rev, e.leading = election.Key(), election.Rev(), true
		e.mu.Unlock()
		log.WithFields(logrus.Fields{"key": election.Key(), "revision": election.Rev()}).Info("leading")

		lctx, cancel := context.WithCancel(ctx)
		go func() {
			// Losing the etcd session ends leadership as losing the Lease does.
			select {
			case <-session.Done():
				log.Warn("etcd session expired; stepping down")
				cancel()
			case <-lctx.Done():
			}
		}()
		lead(lctx)
		cancel()

		e.mu.Lock()
		e.leading = false
		e.mu.Unlock()
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := election.Resign(rctx); err != nil {
			log.WithError(err).Debug("resign")
		}
		rcancel()
		session.Close()
		if ctx.Err() != nil {
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
