package leader

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skylb/skylb/internal/kubeclient"
)

// API reads and writes the Kubernetes Lease; *kubeclient.Client is one.
type API interface {
	Get(ctx context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error
	Create(ctx context.Context, r schema.GroupVersionResource, namespace string, obj runtime.Object) error
	Update(ctx context.Context, r schema.GroupVersionResource, namespace, name string, obj runtime.Object) error
	Watch(ctx context.Context, r schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// lease holds or waits for the Kubernetes Lease, with the protocol of
// client-go's leader election, so that replicas of both kinds exclude each
// other: a holder renews the Lease every RetryPeriod and steps down when it
// could not for RenewDeadline; another replica takes it once its holder is
// empty, or once it has seen the same record for LeaseDuration by its own
// clock (never comparing clocks across machines). Every write is conditional
// on the resourceVersion read, so two replicas cannot both take it.
type lease struct {
	cfg Config
	api API

	// current is the Lease as last read or written, nil before the first
	// time, and observedAt when its record last changed, by this replica's
	// clock.
	current    *coordinationv1.Lease
	observedAt time.Time
}

// acquire tries to take the Lease until it does (true) or ctx ends (false):
// every RetryPeriod, with jitter, and besides as soon as a watch of the Lease
// shows it released or its holder's time up. A leader that stops releases
// the Lease (see release), so a standby takes it within milliseconds; one
// that dies stops renewing it, and the watch dates its last renewal, so a
// standby takes it LeaseDuration after that rather than at its next try.
func (l *lease) acquire(ctx context.Context) bool {
	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	defer wg.Wait()
	defer stop()
	seen := make(chan *coordinationv1.Lease, 1)
	wg.Go(func() { l.watch(wctx, seen) })
	for {
		if l.try(ctx) {
			return true
		}
		tried := time.Now()
		jitter := time.Duration(rand.Float64() * 0.2 * float64(l.cfg.RetryPeriod))
		next := tried.Add(l.cfg.RetryPeriod + jitter)
	wait:
		for {
			// The holder's time comes up before the next try: try then.
			// Not when it was up at the try that failed (a write the API
			// server refuses), which would try without end.
			at := next
			if up, ok := l.upAt(); ok && up.After(tried) && up.Before(at) {
				at = up
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(time.Until(at)):
				break wait
			case cur := <-seen:
				l.observe(cur)
			}
		}
	}
}

// upAt returns when the holder's time is up by this replica's clock:
// LeaseDuration after its record last changed, or when it was seen released;
// false before the Lease was read.
func (l *lease) upAt() (time.Time, bool) {
	if l.current == nil {
		return time.Time{}, false
	}
	if deref(l.current.Spec.HolderIdentity) == "" {
		return l.observedAt, true
	}
	return l.observedAt.Add(l.leaseDuration(l.current)), true
}

// watch watches the Lease until ctx ends and hands each state of it seen to
// seen, the latest only when the last is not taken yet. The watch only
// hastens acquire: when it fails (an API server down, RBAC without watch on
// the Lease) acquire still tries every RetryPeriod, and the watch is tried
// again after LeaseDuration.
func (l *lease) watch(ctx context.Context, seen chan *coordinationv1.Lease) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", l.cfg.Name).String()}
	for failed := false; ctx.Err() == nil; {
		w, err := l.api.Watch(ctx, kubeclient.Leases, l.cfg.Namespace, opts)
		if err != nil {
			if ctx.Err() == nil {
				entry := l.cfg.Log.WithError(err)
				if !failed {
					entry.Warn("could not watch the Kubernetes Lease; a released or expired Lease is taken at the next try")
				} else {
					entry.Debug("watch the Kubernetes Lease")
				}
				failed = true
				sleep(ctx, l.cfg.LeaseDuration)
			}
			continue
		}
		// Stopped when ctx ends, whatever the watch makes of its context.
		unwatch := context.AfterFunc(ctx, w.Stop)
		for ev := range w.ResultChan() {
			cur, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || ev.Type == watch.Deleted || cur.Name != l.cfg.Name {
				continue
			}
			select {
			case <-seen: // replaced by the newer state
			default:
			}
			seen <- cur
		}
		unwatch()
		w.Stop()
		// A watch that ended starts again a little later, so that one
		// ending at once does not spin.
		sleep(ctx, l.cfg.RetryPeriod/4)
	}
}

// renew renews the Lease every RetryPeriod until ctx ends, or until it could
// not renew it for RenewDeadline: then this replica no longer leads.
func (l *lease) renew(ctx context.Context) {
	last := time.Now()
	tick := time.NewTicker(l.cfg.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, l.cfg.RenewDeadline)
		ok := l.try(rctx)
		cancel()
		switch {
		case ok:
			last = time.Now()
		case ctx.Err() != nil:
			return
		case time.Since(last) >= l.cfg.RenewDeadline:
			l.cfg.Log.WithField("since", last.Format(time.RFC3339Nano)).Warn("could not renew the Kubernetes Lease; stepping down")
			return
		}
	}
}

// release gives the Lease up when this replica holds it, so that the next
// replica need not wait for it to expire.
func (l *lease) release() {
	if l.current == nil || deref(l.current.Spec.HolderIdentity) != l.cfg.Identity {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.RenewDeadline)
	defer cancel()
	now := metav1.NowMicro()
	released := l.current.DeepCopy()
	released.Spec = coordinationv1.LeaseSpec{
		HolderIdentity:       new(""),
		LeaseDurationSeconds: new(int32(1)),
		AcquireTime:          &now,
		RenewTime:            &now,
		LeaseTransitions:     l.current.Spec.LeaseTransitions,
	}
	if err := l.api.Update(ctx, kubeclient.Leases, l.cfg.Namespace, l.cfg.Name, released); err != nil {
		l.cfg.Log.WithError(err).Warn("release the Kubernetes Lease")
		return
	}
	l.current = released
}

// try takes or renews the Lease once and reports whether this replica holds it.
func (l *lease) try(ctx context.Context) bool {
	now := metav1.NowMicro()
	duration := int32(l.cfg.LeaseDuration / time.Second)
	desired := coordinationv1.LeaseSpec{
		HolderIdentity:       new(l.cfg.Identity),
		LeaseDurationSeconds: &duration,
		AcquireTime:          &now,
		RenewTime:            &now,
		LeaseTransitions:     new(int32(0)),
	}
	cur := &coordinationv1.Lease{}
	err := l.api.Get(ctx, kubeclient.Leases, l.cfg.Namespace, l.cfg.Name, cur)
	if apierrors.IsNotFound(err) {
		created := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.cfg.Namespace, Name: l.cfg.Name},
			Spec:       desired,
		}
		if err := l.api.Create(ctx, kubeclient.Leases, l.cfg.Namespace, created); err != nil {
			l.cfg.Log.WithError(err).Debug("create the Kubernetes Lease")
			return false
		}
		l.observe(created)
		return true
	}
	if err != nil {
		l.cfg.Log.WithError(err).Debug("read the Kubernetes Lease")
		return false
	}
	l.observe(cur)
	holder := deref(cur.Spec.HolderIdentity)
	if holder != "" && holder != l.cfg.Identity && time.Since(l.observedAt) < l.leaseDuration(cur) {
		return false
	}
	if holder == l.cfg.Identity {
		desired.AcquireTime = cur.Spec.AcquireTime
		desired.LeaseTransitions = cur.Spec.LeaseTransitions
	} else {
		desired.LeaseTransitions = new(deref(cur.Spec.LeaseTransitions) + 1)
	}
	next := cur.DeepCopy()
	next.Spec = desired
	if err := l.api.Update(ctx, kubeclient.Leases, l.cfg.Namespace, l.cfg.Name, next); err != nil {
		l.cfg.Log.WithError(err).Debug("update the Kubernetes Lease")
		return false
	}
	l.observe(next)
	return true
}

// leaseDuration is how long the holder of cur may go without renewing it: its
// own duration when it gives one, else this replica's.
func (l *lease) leaseDuration(cur *coordinationv1.Lease) time.Duration {
	if s := deref(cur.Spec.LeaseDurationSeconds); s > 0 {
		return time.Duration(s) * time.Second
	}
	return l.cfg.LeaseDuration
}

// observe notes the Lease read or written, and when its record last changed.
func (l *lease) observe(cur *coordinationv1.Lease) {
	prev := l.current
	l.current = cur
	if prev != nil && specEqual(prev.Spec, cur.Spec) {
		return
	}
	l.observedAt = time.Now()
	var before string
	if prev != nil {
		before = deref(prev.Spec.HolderIdentity)
	}
	after := deref(cur.Spec.HolderIdentity)
	if after != before && after != "" && after != l.cfg.Identity {
		l.cfg.Log.WithField("leader", after).Info("following")
	}
}

func specEqual(a, b coordinationv1.LeaseSpec) bool {
	return deref(a.HolderIdentity) == deref(b.HolderIdentity) &&
		deref(a.LeaseDurationSeconds) == deref(b.LeaseDurationSeconds) &&
		deref(a.LeaseTransitions) == deref(b.LeaseTransitions) &&
		timeEqual(a.RenewTime, b.RenewTime) && timeEqual(a.AcquireTime, b.AcquireTime)
}

func timeEqual(a, b *metav1.MicroTime) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
