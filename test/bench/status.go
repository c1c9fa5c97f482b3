package main

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// statusNS is the namespace of the Services the status phase creates.
const statusNS = "bench-status"

// statusResult is the status phase: Services skylb implements, created while
// it is stopped, as when skylb is installed in a cluster that has them, and
// the time it takes to write the status of every one.
type statusResult struct {
	Services int `json:"services"`
	// AfterStartSeconds is from skylb's process start to the last status
	// written; AfterSyncSeconds from its caches synced.
	AfterStartSeconds float64 `json:"after_start_seconds"`
	AfterSyncSeconds  float64 `json:"after_sync_seconds"`
	// PerSecond is the Services whose status was written per second after
	// the caches synced.
	PerSecond float64 `json:"per_second"`
	// RSSAfterMiB and HeapInuseAfterMiB are skylb's once the Services are
	// deleted again and their records removed: its memory after a start
	// and some churn, where the peak is its cold start's.
	RSSAfterMiB       float64 `json:"rss_after_mib"`
	HeapInuseAfterMiB float64 `json:"heap_inuse_after_mib"`
	PeakRSSMiB        float64 `json:"peak_rss_mib"`
}

// statusAtScale stops skylb, creates Services it implements, each with a
// ready endpoint, starts skylb again and times the status write of every
// one. Then it deletes them and waits until skylb has removed their records,
// so that what follows sees the large cluster as before.
func (b *bench) statusAtScale(ctx context.Context, res *results) error {
	n := b.o.statusServices
	if err := b.skylb.Stop(); err != nil {
		return err
	}
	if err := createNamespace(ctx, b.kube, statusNS); err != nil {
		return err
	}
	base := netip.MustParseAddr("10.248.0.1")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("lb-%04d", i)
	}
	err := stack.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		if err := setEndpoints(ctx, b.kube, statusNS, names[i], []endpoint{{addrN(base, i).String(), true}}); err != nil {
			return err
		}
		_, err := b.kube.CoreV1().Services(statusNS).Create(ctx, podsService(statusNS, names[i]), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	lw := b.watchSynced()
	defer lw.close()
	t0 := time.Now()
	if err := b.startSkylb(ctx); err != nil {
		return err
	}
	done, err := b.waitStatus(ctx, n, 5*time.Minute)
	if err != nil {
		return err
	}
	r := &statusResult{Services: n, AfterStartSeconds: done.Sub(t0).Seconds()}
	synced, _, err := lw.synced(time.Second)
	if err != nil {
		return err
	}
	r.AfterSyncSeconds = done.Sub(synced).Seconds()
	r.PerSecond = float64(n) / r.AfterSyncSeconds
	res.Status = r
	logf("status: %d Services' status written %.2fs after skylb started (%.2fs after its caches synced, %.0f/s)", n, r.AfterStartSeconds, r.AfterSyncSeconds, r.PerSecond)

	if err := stack.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		return b.kube.CoreV1().Services(statusNS).Delete(ctx, names[i], metav1.DeleteOptions{})
	}); err != nil {
		return err
	}
	if err := b.kube.DiscoveryV1().EndpointSlices(statusNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := b.waitNoRecords(ctx, "/skydns/org/example/"+statusNS+"/", time.Minute); err != nil {
		return err
	}
	time.Sleep(time.Second)
	u, m, err := b.skylbUsage(ctx)
	if err != nil {
		return err
	}
	r.RSSAfterMiB, r.PeakRSSMiB = mib(u.RSS), mib(u.PeakRSS)
	r.HeapInuseAfterMiB = readGoMemory(m).HeapInuse
	logf("status: skylb's RSS %.1f MiB (heap in use %.1f MiB, peak RSS %.1f MiB) once the %d Services are deleted", r.RSSAfterMiB, r.HeapInuseAfterMiB, r.PeakRSSMiB, n)
	// The Services go once skylb has removed its finalizer: the phase
	// leaves none of that work to the next.
	return b.waitServicesGone(ctx, statusNS)
}

// waitStatus waits until n Services of statusNS have a status, polling every
// 100 ms, and returns when the last one was seen.
func (b *bench) waitStatus(ctx context.Context, n int, limit time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		list, err := b.kube.CoreV1().Services(statusNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			written := 0
			for _, svc := range list.Items {
				if len(svc.Status.LoadBalancer.Ingress) > 0 {
					written++
				}
			}
			if written >= n {
				return time.Now(), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("status of %d Services not written: %w", n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNoRecords waits until etcd holds no key under prefix.
func (b *bench) waitNoRecords(ctx context.Context, prefix string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		count, err := b.countKeys(ctx, prefix)
		if err == nil && count == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d keys left under %s after %v (%v)", count, prefix, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitServicesGone waits until namespace holds no Service.
func (b *bench) waitServicesGone(ctx context.Context, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		l, err := b.kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			n := 0
			if l != nil {
				n = len(l.Items)
			}
			return fmt.Errorf("%d Services of %s not gone: %w", n, namespace, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
