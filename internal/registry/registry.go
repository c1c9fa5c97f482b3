// Package registry keeps the skylb instances that share an owner id to one
// scope.
//
// Records and claims in etcd are kept by owner id: a skylb deletes the
// records of its owner id that no object it sees wants. Two instances of one
// owner id with different scopes (--namespace, --source, --label-selector,
// --ingress-class, --gateway-class) would each see part of the objects: one
// would delete the claim of a name the other still publishes, neither would
// rank the other's namespaces, and with leader election only one of them
// would ever write. So they must not both write.
//
// Each instance with a scope registers it under
// /skylb/scopes/<owner-id>/<lease>, on an etcd lease it keeps alive; an
// instance without a scope registers only once it finds another registered,
// so that a restart of an unscoped skylb writes nothing. Every instance
// watches the registrations of its owner id. While one of another scope is
// registered, the instance does not write: both of them log the conflict and
// hold their writes, and nothing is deleted, until one of them stops (its
// registration goes with its lease). Replicas of one Deployment share their
// scope and never conflict. Every write is conditional on what was decided:
// no registration was created since, and this instance's own is still there.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/publish"
)

// ErrConflict is returned by Compares while an instance of another scope
// runs with the same owner id.
var ErrConflict = errors.New("another skylb with this owner id runs with another scope")

// Errors of Compares while writes wait.
var (
	errNotChecked    = errors.New("the scopes of this owner id's instances are not read yet")
	errNotRegistered = errors.New("this skylb's scope is not registered yet")
)

// Config configures a Registry.
type Config struct {
	// Prefix is where the instances of one owner id register, e.g.
	// /skylb/scopes/<owner-id>/.
	Prefix string
	// Scope is this instance's scope in its canonical form; empty for
	// everything.
	Scope string
	// Identity names this instance in the others' logs (its host name).
	Identity string
	// TTL is the registration's lease; 10 s when 0.
	TTL time.Duration
	// Timeout bounds each etcd request; 5 s when 0.
	Timeout time.Duration
	Log     logrus.FieldLogger
}

// Value is the JSON of a registration.
type Value struct {
	Scope    string    `json:"scope"`
	Instance string    `json:"instance"`
	Since    time.Time `json:"since"`
}

// Registry registers this instance's scope and watches the others'. It is a
// publish.Guard.
type Registry struct {
	cfg    Config
	client *clientv3.Client

	mu      sync.Mutex
	others  map[string]Value // by key, every registration but this instance's
	mine    string           // this instance's key, empty while not registered
	mineRev int64            // its create revision
	rev     int64            // the revision the registrations were read at
	checked bool
	// conflict describes the registration of another scope, nil without one.
	conflict error
	// checkedCh is closed once the registrations have been read.
	checkedCh chan struct{}
	// wake is signalled when registering becomes needed.
	wake chan struct{}
	// resolved is signalled when a conflict ends (see Resolved).
	resolved chan struct{}
}

// New returns a Registry of cfg.
func New(client *clientv3.Client, cfg Config) *Registry {
	if cfg.TTL <= 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Registry{cfg: cfg, client: client, others: map[string]Value{}, checkedCh: make(chan struct{}), wake: make(chan struct{}, 1), resolved: make(chan struct{}, 1)}
}

// Compares returns the conditions of every write: no registration was
// created since the registrations were read, and this instance's own, if it
// has one, is still there. It returns an error wrapping publish.ErrPaused
// until the registrations are read and while an instance of another scope
// runs.
func (r *Registry) Compares() ([]clientv3.Cmp, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.checked:
		return nil, fmt.Errorf("%w: %w", publish.ErrPaused, errNotChecked)
	case r.conflict != nil:
		return nil, fmt.Errorf("%w: %w", publish.ErrPaused, r.conflict)
	case r.needsRegistrationLocked():
		return nil, fmt.Errorf("%w: %w", publish.ErrPaused, errNotRegistered)
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(r.cfg.Prefix), "<", r.rev+1).WithPrefix()}
	if r.mine != "" {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(r.mine), "=", r.mineRev))
	}
	return cmps, nil
}

// Conflict returns, once the registrations are read, the conflict that
// holds this instance's writes: nil when there is none.
func (r *Registry) Conflict() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conflict
}

// Checked returns a channel closed once the registrations have been read.
func (r *Registry) Checked() <-chan struct{} { return r.checkedCh }

// Run registers and watches until ctx ends; it deletes the registration
// then. It survives etcd being unavailable, retrying with backoff.
func (r *Registry) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.keepRegistered(ctx) })
	for ctx.Err() == nil {
		if err := r.follow(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Log.WithError(err).Debug("reading the scopes of this owner id failed; retrying")
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// follow reads the registrations, then watches them until the watch ends.
func (r *Registry) follow(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	resp, err := r.client.Get(tctx, r.cfg.Prefix, clientv3.WithPrefix())
	cancel()
	if err != nil {
		return fmt.Errorf("get %s: %w", r.cfg.Prefix, err)
	}
	others := map[string]Value{}
	r.mu.Lock()
	for _, kv := range resp.Kvs {
		if string(kv.Key) != r.mine {
			others[string(kv.Key)] = decode(kv.Value)
		}
	}
	r.others, r.rev = others, resp.Header.Revision
	resolved := r.decideLocked()
	r.mu.Unlock()
	r.tellResolved(resolved)

	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	for wr := range r.client.Watch(wctx, r.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithProgressNotify()) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("watch %s: %w", r.cfg.Prefix, err)
		}
		r.mu.Lock()
		for _, ev := range wr.Events {
			key := string(ev.Kv.Key)
			switch {
			case key == r.mine && ev.Type == mvccpb.DELETE:
				r.mine = "" // its lease expired: registered again
			case key == r.mine:
			case ev.Type == mvccpb.PUT:
				r.others[key] = decode(ev.Kv.Value)
			default:
				delete(r.others, key)
			}
			r.rev = max(r.rev, ev.Kv.ModRevision)
		}
		if wr.IsProgressNotify() {
			r.rev = max(r.rev, wr.Header.Revision)
		}
		resolved := r.decideLocked()
		r.mu.Unlock()
		r.tellResolved(resolved)
	}
	return nil
}

// Resolved receives when a conflict has ended and writing may go on: what
// the paused writes were to be compared with etcd again. Conflicts that end
// before it is read are one receive.
func (r *Registry) Resolved() <-chan struct{} { return r.resolved }

// tellResolved signals Resolved when a conflict has ended.
func (r *Registry) tellResolved(resolved bool) {
	if !resolved {
		return
	}
	select {
	case r.resolved <- struct{}{}:
	default:
	}
}

// decode reads a registration; one that does not decode is of an unknown
// scope, which conflicts with every scope.
func decode(b []byte) Value {
	var v Value
	if err := json.Unmarshal(b, &v); err != nil {
		return Value{Scope: "?", Instance: "?"}
	}
	return v
}

// decideLocked decides from the registrations read whether this instance may
// write, logs a change, and wakes the registration when one is needed. It
// reports whether a conflict has just ended.
func (r *Registry) decideLocked() (resolved bool) {
	conflict := conflictOf(r.cfg.Scope, r.others)
	switch {
	case conflict != nil && r.conflict == nil:
		r.cfg.Log.WithFields(logrus.Fields{"scope": describe(r.cfg.Scope)}).WithError(conflict).
			Error("not writing while a skylb of another scope runs with this owner id: each scope needs its own --owner-id")
	case conflict == nil && r.conflict != nil:
		r.cfg.Log.Info("no skylb of another scope runs with this owner id any more; writing again")
		resolved = true
	}
	r.conflict = conflict
	if !r.checked {
		r.checked = true
		close(r.checkedCh)
	}
	if r.needsRegistrationLocked() {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return resolved
}

// conflictOf returns the conflict of scope with the registrations others,
// or nil: the registrations of another scope, in a stable order.
func conflictOf(scope string, others map[string]Value) error {
	var differ []string
	for _, key := range slices.Sorted(maps.Keys(others)) {
		if v := others[key]; v.Scope != scope {
			differ = append(differ, fmt.Sprintf("%s (scope %s, since %s)", v.Instance, describe(v.Scope), v.Since.Format(time.RFC3339)))
		}
	}
	if len(differ) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrConflict, differ)
}

// describe names a scope in a log line.
func describe(scope string) string {
	if scope == "" {
		return "everything"
	}
	return strconv.Quote(scope)
}

// needsRegistrationLocked reports whether this instance should be
// registered and is not: a scoped instance always, an unscoped one once
// another is registered.
func (r *Registry) needsRegistrationLocked() bool {
	return r.mine == "" && (r.cfg.Scope != "" || len(r.others) > 0)
}

// keepRegistered registers this instance whenever it needs to be, keeps its
// lease alive, and revokes it when ctx ends.
func (r *Registry) keepRegistered(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		need := r.needsRegistrationLocked()
		r.mu.Unlock()
		if !need {
			continue
		}
		if err := r.register(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Log.WithError(err).Warn("registering this skylb's scope failed; retrying")
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}
}

// register writes this instance's registration on a lease of its own, and
// keeps the lease alive until ctx ends or the lease is lost.
func (r *Registry) register(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	lease, err := r.client.Grant(tctx, int64(max(r.cfg.TTL/time.Second, 1)))
	cancel()
	if err != nil {
		return fmt.Errorf("grant: %w", err)
	}
	key := r.cfg.Prefix + strconv.FormatInt(int64(lease.ID), 16)
	value, _ := json.Marshal(Value{Scope: r.cfg.Scope, Instance: r.cfg.Identity, Since: time.Now().UTC().Truncate(time.Second)})
	tctx, cancel = context.WithTimeout(ctx, r.cfg.Timeout)
	resp, err := r.client.Put(tctx, key, string(value), clientv3.WithLease(lease.ID))
	cancel()
	if err != nil {
		r.revoke(ctx, lease.ID)
		return fmt.Errorf("put %s: %w", key, err)
	}
	r.mu.Lock()
	r.mine, r.mineRev = key, resp.Header.Revision
	delete(r.others, key) // read before it was known as this instance's
	r.mu.Unlock()
	r.cfg.Log.WithFields(logrus.Fields{"key": key, "scope": describe(r.cfg.Scope)}).Info("registered this skylb's scope")

	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	ch, err := r.client.KeepAlive(kctx, lease.ID)
	if err == nil {
		go func() {
			for range ch {
				// The channel closes when the lease is gone or ctx ends.
			}
			kcancel()
		}()
	}
	<-kctx.Done()
	if ctx.Err() != nil {
		r.revoke(ctx, lease.ID)
		return nil
	}
	r.mu.Lock()
	if r.mine == key {
		r.mine = ""
	}
	r.mu.Unlock()
	r.cfg.Log.WithField("key", key).Warn("the lease of this skylb's scope registration expired; registering again")
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// revoke deletes the registration with its lease, when ctx has ended too.
func (r *Registry) revoke(ctx context.Context, id clientv3.LeaseID) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := r.client.Revoke(rctx, id); err != nil {
		r.cfg.Log.WithError(err).Debug("revoke the scope registration")
	}
}
