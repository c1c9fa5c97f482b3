package leader_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/leader"
)

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func elector(kube *kubefake.Fake, etcd *clientv3.Client, id string) *leader.Elector {
	return leader.New(leader.Config{
		Namespace: "skylb", Name: "skylb", Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
		EtcdKey: "/skylb/leader/test", EtcdTTL: 1, Log: quiet(),
	}, kube, etcd)
}

// run runs e, whose lead waits for its end, until stop is called; stop
// returns once Run has.
func run(e *leader.Elector) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, func(ctx context.Context) { <-ctx.Done() })
	}()
	return func() {
		cancel()
		<-done
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFencedLeadership(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	kube := kubefake.New()

	a, b := elector(kube, etcd, "a"), elector(kube, etcd, "b")
	if _, err := a.Compares(); err == nil {
		t.Fatalf("Compares() before leading succeeded, want ErrNotLeader")
	}
	stopA := run(a)
	waitFor(t, "a to lead", a.Leading)
	stopB := run(b)

	cmps, err := a.Compares()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := etcd.Txn(ctx).If(cmps...).Then(clientv3.OpPut("/skydns/fenced", "a")).Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("the leader's guarded write = %v, %v; want success", resp, err)
	}

	// The leader's etcd session ends (as when it is paused past its TTL): its
	// election key goes, and a write carrying its old condition lands nothing.
	keys, err := etcd.Get(ctx, "/skylb/leader/test", clientv3.WithPrefix())
	if err != nil || len(keys.Kvs) == 0 {
		t.Fatalf("election keys: %v, %v", keys, err)
	}
	if _, err := etcd.Revoke(ctx, clientv3.LeaseID(keys.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	resp, err = etcd.Txn(ctx).If(cmps...).Then(clientv3.OpPut("/skydns/fenced", "stale")).Commit()
	if err != nil || resp.Succeeded {
		t.Fatalf("a deposed leader's guarded write = %v, %v; want it refused", resp, err)
	}
	got, _ := etcd.Get(ctx, "/skydns/fenced")
	if string(got.Kvs[0].Value) != "a" {
		t.Errorf("value = %q, want the leader's write only", got.Kvs[0].Value)
	}

	// b cannot lead while a holds the Kubernetes Lease; once a stops, b takes over.
	if b.Leading() {
		t.Fatalf("b leads while a holds the Lease")
	}
	stopA()
	if a.Leading() {
		t.Errorf("a still leads after it stopped")
	}
	start := time.Now()
	waitFor(t, "b to take over", b.Leading)
	t.Logf("b took over %v after a stopped", time.Since(start).Round(time.Millisecond))
	stopB()
}

// TestStandbyTakesAReleasedLeaseAtOnce: a standby takes the Lease as soon as
// the leader that stopped has released it, not at its next try a RetryPeriod
// later.
func TestStandbyTakesAReleasedLeaseAtOnce(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	kube := kubefake.New()
	const retry = time.Minute
	slow := func(id string) *leader.Elector {
		return leader.New(leader.Config{
			Namespace: "skylb", Name: "skylb", Identity: id,
			LeaseDuration: 3 * retry, RenewDeadline: 2 * retry, RetryPeriod: retry,
			EtcdKey: "/skylb/leader/test", EtcdTTL: 5, Log: quiet(),
		}, kube, etcd)
	}
	a, b := slow("a"), slow("b")
	stopA := run(a)
	waitFor(t, "a to lead", a.Leading)

	tried := make(chan struct{}, 1)
	kube.PrependReactor("get", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		select {
		case tried <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	defer run(b)()
	// b found the Lease held and waits for its next try, a minute away.
	<-tried
	time.Sleep(100 * time.Millisecond)
	if b.Leading() {
		t.Fatal("b leads while a holds the Lease")
	}

	stopA()
	start := time.Now()
	// waitFor gives up after 15 s, long before b's next try.
	waitFor(t, "b to take the released Lease before its next try", b.Leading)
	t.Logf("b took over %v after a stopped", time.Since(start).Round(time.Millisecond))
}

// TestStandbyTakesAnExpiredLeaseOnTime: a holder that dies stops renewing
// the Lease; a standby takes it once the holder's time is up by its own
// clock, LeaseDuration after the last renewal it saw, never before, and not
// at its next try a RetryPeriod later.
func TestStandbyTakesAnExpiredLeaseOnTime(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	const duration = 2 // seconds, the holder's
	now := metav1.NowMicro()
	kube := kubefake.New(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "skylb", Name: "skylb"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: new("ghost"), LeaseDurationSeconds: new(int32(duration)),
			AcquireTime: &now, RenewTime: &now,
		},
	})
	b := leader.New(leader.Config{
		Namespace: "skylb", Name: "skylb", Identity: "b",
		LeaseDuration: 2 * time.Minute, RenewDeadline: 90 * time.Second, RetryPeriod: time.Minute,
		EtcdKey: "/skylb/leader/test", EtcdTTL: 5, Log: quiet(),
	}, kube, etcd)
	defer run(b)()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The ghost renews for a while, then dies.
	leases := kube.CoordinationV1().Leases("skylb")
	var last time.Time
	for range 6 {
		time.Sleep(300 * time.Millisecond)
		if b.Leading() {
			t.Fatal("b leads while the ghost renews the Lease")
		}
		l, err := leases.Get(ctx, "skylb", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		renewed := metav1.NowMicro()
		l.Spec.RenewTime = &renewed
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
	}
	waitFor(t, "b to take the expired Lease", b.Leading)
	took := time.Since(last)
	if took < duration*time.Second {
		t.Errorf("b took the Lease %v after its last renewal, before its %ds were up", took, duration)
	}
	if took > duration*time.Second+5*time.Second {
		t.Errorf("b took the Lease %v after its last renewal, want it about %ds after", took, duration)
	}
	t.Logf("b took the Lease %v after its last renewal", took.Round(time.Millisecond))
}

// TestRunJoinsLead checks that Run returns only after lead has: the caller
// may then stop what lead used.
func TestRunJoinsLead(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	e := elector(kubefake.New(), etcd, "a")
	ctx, cancel := context.WithCancel(context.Background())
	var returned atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, func(lctx context.Context) {
			<-lctx.Done()
			time.Sleep(300 * time.Millisecond) // a lead that takes its time to stop
			returned.Store(true)
		})
	}()
	waitFor(t, "a to lead", e.Leading)
	cancel()
	<-done
	if !returned.Load() {
		t.Errorf("Run returned before lead did")
	}
}

// TestLeaseOfAnotherHolder: a Lease held by another replica (written as
// client-go's leader election writes it) is taken only once this replica has
// seen it unrenewed for its duration, and the take counts a transition.
func TestLeaseOfAnotherHolder(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	now := metav1.NowMicro()
	kube := kubefake.New(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "skylb", Name: "skylb"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: new("gone"), LeaseDurationSeconds: new(int32(2)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: new(int32(3)),
		},
	})
	a := elector(kube, etcd, "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx, func(ctx context.Context) { <-ctx.Done() })
	}()
	defer func() { cancel(); <-done }()
	start := time.Now()
	time.Sleep(time.Second)
	if a.Leading() {
		t.Fatalf("a leads %v after start, while the other holder's Lease (2 s) runs", time.Since(start))
	}
	waitFor(t, "a to take the expired Lease", a.Leading)
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("a took the Lease after %v, before its 2 s had passed unrenewed", took)
	}
	l, err := kube.CoordinationV1().Leases("skylb").Get(context.Background(), "skylb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h, n := *l.Spec.HolderIdentity, *l.Spec.LeaseTransitions; h != "a" || n != 4 {
		t.Errorf("Lease holder %q, transitions %d; want a, 4", h, n)
	}
}
