package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skylb/skylb/test/stack"
)

// propNS is the namespace of the small cluster's Services.
const propNS = "prop"

// change is one timed API write and the answer it should lead to.
type change struct {
	kind  string
	name  string   // DNS name
	want  []string // A records CoreDNS should answer
	write func(context.Context) error
}

// timed is what one change took.
type timed struct {
	api, etcd, dns time.Duration
	etcdOK         bool
	events         []watchEvent // etcd changes from the write until shortly after the answer
}

// measure makes one change and polls CoreDNS every millisecond until it
// answers the new address set.
func (b *bench) measure(ctx context.Context, c change, settle time.Duration) (timed, error) {
	var t timed
	mark := b.rec.mark()
	t0 := time.Now()
	if err := c.write(ctx); err != nil {
		return t, fmt.Errorf("%s %s: %w", c.kind, c.name, err)
	}
	t.api = time.Since(t0)
	at, err := b.dns.waitAnswer(ctx, c.name, c.want, 10*time.Second)
	if err != nil {
		return t, fmt.Errorf("%s: %w", c.kind, err)
	}
	t.dns = at.Sub(t0)
	if settle > 0 {
		time.Sleep(settle)
	}
	if ev, ok := b.rec.first(mark, stack.StoredPath(c.name)+"/"); ok {
		t.etcd, t.etcdOK = ev.at.Sub(t0), true
	}
	t.events, _ = b.rec.since(mark)
	return t, nil
}

// propagation times changes on a small cluster: Services created, endpoints
// added and endpoints made unready, in turn.
func (b *bench) propagation(ctx context.Context, res *results) error {
	if err := b.startSkylb(ctx); err != nil {
		return err
	}
	if _, err := b.waitSkylbReady(ctx, time.Minute); err != nil {
		return err
	}
	if err := createNamespace(ctx, b.kube, propNS); err != nil {
		return err
	}
	before, err := b.skylbMetrics(ctx)
	if err != nil {
		return err
	}
	p := &propagation{Changes: b.o.changes, ByKind: map[string]quantiles{}}
	var all, etcd, api []time.Duration
	byKind := map[string][]time.Duration{}
	base := netip.MustParseAddr("10.244.0.1")
	for i := 0; len(all) < b.o.changes; i++ {
		svc := fmt.Sprintf("web-%03d", i)
		name := svc + "." + propNS + ".example.org"
		ip1, ip2 := addrN(base, 2*i).String(), addrN(base, 2*i+1).String()
		// The endpoints exist before the Service, as when a Service is
		// created for running pods.
		if err := setEndpoints(ctx, b.kube, propNS, svc, []endpoint{{ip1, true}}); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		changes := []change{
			{kind: "service created", name: name, want: []string{ip1}, write: func(ctx context.Context) error {
				_, err := b.kube.CoreV1().Services(propNS).Create(ctx, podsService(propNS, svc), metav1.CreateOptions{})
				return err
			}},
			{kind: "endpoint added", name: name, want: []string{ip1, ip2}, write: func(ctx context.Context) error {
				return setEndpoints(ctx, b.kube, propNS, svc, []endpoint{{ip1, true}, {ip2, true}})
			}},
			{kind: "endpoint unready", name: name, want: []string{ip2}, write: func(ctx context.Context) error {
				return setEndpoints(ctx, b.kube, propNS, svc, []endpoint{{ip1, false}, {ip2, true}})
			}},
		}
		for _, c := range changes {
			if len(all) >= b.o.changes {
				break
			}
			t, err := b.measure(ctx, c, 0)
			if err != nil {
				return err
			}
			all = append(all, t.dns)
			api = append(api, t.api)
			byKind[c.kind] = append(byKind[c.kind], t.dns)
			if t.etcdOK {
				etcd = append(etcd, t.etcd)
			}
			// Let the status write-back and its echo pass before the next change.
			time.Sleep(20 * time.Millisecond)
		}
	}
	after, err := b.skylbMetrics(ctx)
	if err != nil {
		return err
	}
	if p.Deployment, err = b.deploymentScaled(ctx); err != nil {
		return err
	}
	p.DNS, p.Etcd, p.API = summarise(all), summarise(etcd), summarise(api)
	for k, v := range byKind {
		p.ByKind[k] = summarise(v)
	}
	p.Skylb = fromHistogram(after.histogram("skylb_propagation_seconds").minus(before.histogram("skylb_propagation_seconds")))
	res.Propagation = p
	logf("propagation: p50 %.1f ms, p99 %.1f ms, max %.1f ms; inside skylb p99 %.1f ms", p.DNS.P50, p.DNS.P99, p.DNS.Max, p.Skylb.P99)
	return nil
}

// deploymentScaled scales a Deployment between one and two replicas and times
// each scale from the API write to CoreDNS answering with as many addresses:
// the path a user sees, through kube-controller-manager's deployment,
// replica-set and endpointslice controllers and the simulated kubelet.
func (b *bench) deploymentScaled(ctx context.Context) (quantiles, error) {
	nodes := []stack.NodeSpec{
		{Name: "node-1", InternalIP: []string{"192.0.2.11"}, PodCIDR: "10.245.1.0/24"},
		{Name: "node-2", InternalIP: []string{"192.0.2.12"}, PodCIDR: "10.245.2.0/24"},
	}
	if err := b.st.CreateNodes(ctx, nodes...); err != nil {
		return quantiles{}, err
	}
	kctx, stop := context.WithCancel(ctx)
	defer stop()
	go stack.RunKubelet(kctx, b.st.Kube, []string{"node-1", "node-2"})
	const app = "scaled"
	if _, err := b.kube.AppsV1().Deployments(propNS).Create(ctx, stack.Deployment(propNS, app, 1, 8080), metav1.CreateOptions{}); err != nil {
		return quantiles{}, err
	}
	svc := podsService(propNS, app)
	svc.Spec.Selector = map[string]string{"app": app}
	if _, err := b.kube.CoreV1().Services(propNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return quantiles{}, err
	}
	name := app + "." + propNS + "." + benchZone
	if _, err := b.dns.waitCount(ctx, name, 1, time.Minute); err != nil {
		return quantiles{}, err
	}
	scale := func(n int32) error {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
		_, err := b.kube.AppsV1().Deployments(propNS).Patch(ctx, app, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	var lat []time.Duration
	for i := range b.o.deployChanges {
		n := int32(2 - i%2)
		t0 := time.Now()
		if err := scale(n); err != nil {
			return quantiles{}, err
		}
		at, err := b.dns.waitCount(ctx, name, int(n), 30*time.Second)
		if err != nil {
			return quantiles{}, err
		}
		lat = append(lat, at.Sub(t0))
		time.Sleep(200 * time.Millisecond)
	}
	q := summarise(lat)
	logf("deployment scaled: p50 %.1f ms, p99 %.1f ms over %d changes", q.P50, q.P99, q.N)
	return q, nil
}

// scaledNS and scaledSvc are the Service of phase 4, which skylb implements
// with the pods address source among the large cluster's Services.
const (
	scaledSvc  = "scaled"
	benchZone  = "example.org"
	benchPaths = "/skydns/org/example/bench-"
)

func (b *bench) scaledName() string {
	return scaledSvc + "." + b.o.scale.namespace(0) + "." + benchZone
}

// coldStart stops skylb, creates the large cluster, starts skylb and times it
// until every record is in etcd.
func (b *bench) coldStart(ctx context.Context, res *results) error {
	if err := b.skylb.Stop(); err != nil {
		return err
	}
	sc := b.o.scale
	// A record per Service and per Ingress, and one SRV record per named
	// port (unless skylb runs with --srv=false): two for each Service of the
	// large cluster, one for the pods Service.
	srv := srvPerPort()
	c := &coldStart{Objects: sc.Services + sc.Ingresses + 1, Keys: (1+2*srv)*sc.Services + sc.Ingresses + 1 + srv}
	t := time.Now()
	logf("creating %d Services and %d Ingresses in %d namespaces, with their status", sc.Services, sc.Ingresses, sc.Namespaces)
	if err := populate(ctx, b.kube, sc, b.o.creators, logf); err != nil {
		return err
	}
	ns0 := sc.namespace(0)
	if err := setEndpoints(ctx, b.kube, ns0, scaledSvc, []endpoint{{"10.200.0.1", true}}); err != nil {
		return err
	}
	if _, err := b.kube.CoreV1().Services(ns0).Create(ctx, podsService(ns0, scaledSvc), metav1.CreateOptions{}); err != nil {
		return err
	}
	c.PopulateSeconds = time.Since(t).Seconds()
	logf("created %d objects in %.1fs", c.Objects, c.PopulateSeconds)
	if n, err := b.countKeys(ctx, benchPaths); err != nil || n != 0 {
		return fmt.Errorf("etcd holds %d records of the large cluster before skylb starts (%v)", n, err)
	}
	etcdBefore, err := b.etcdMetrics(ctx)
	if err != nil {
		return err
	}

	if err := b.skylbColdStart(ctx, c); err != nil {
		return err
	}
	if etcdAfter, err := b.etcdMetrics(ctx); err == nil {
		txn := map[string]string{"grpc_method": "Txn"}
		c.EtcdTxns = etcdAfter.sum("grpc_server_started_total", txn) - etcdBefore.sum("grpc_server_started_total", txn)
	}
	res.ColdStart = c
	logf("cold start: caches synced %.2fs, last record %.2fs (%.2fs after sync), ready %.2fs; peak RSS %.1f MiB, CPU %.2fs; %0.f txns, %.0f keys",
		c.CachesSyncedSeconds, c.LastRecordSeconds, c.LastRecordAfterSync, c.ReadySeconds, c.PeakRSSMiB, c.CPUSeconds, c.Txns, c.KeysWritten)
	return nil
}

// skylbColdStart starts skylb and times it until the c.Keys records of the
// large cluster are in etcd: from the process start to caches synced, to the
// first and the last record, and to ready; and its peak RSS and CPU time.
func (b *bench) skylbColdStart(ctx context.Context, c *coldStart) error {
	lw := b.watchSynced()
	defer lw.close()
	mark := b.rec.mark()
	t0 := time.Now()
	if err := b.startSkylb(ctx); err != nil {
		return err
	}
	stopRSS := rssPeaks(b.skylb.PID)
	// The records arrive on the benchmark's etcd watch.
	keys := map[string]bool{}
	var first, last time.Time
	deadline := time.Now().Add(2*time.Minute + time.Duration(c.Keys)*time.Millisecond)
	for i := mark; len(keys) < c.Keys; {
		evs, next := b.rec.since(i)
		i = next
		for _, ev := range evs {
			if ev.put && strings.HasPrefix(ev.key, benchPaths) && !keys[ev.key] {
				keys[ev.key] = true
				if first.IsZero() {
					first = ev.at
				}
				last = ev.at
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d records in etcd after %v", len(keys), c.Keys, time.Since(t0).Round(time.Millisecond))
		}
		if !b.skylb.Running() {
			return fmt.Errorf("skylb exited (%v); see %s", b.skylb.ExitError(), b.skylb.LogFile())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.FirstRecordSeconds, c.LastRecordSeconds = first.Sub(t0).Seconds(), last.Sub(t0).Seconds()
	readyAt, err := b.waitSkylbReady(ctx, time.Minute)
	if err != nil {
		return err
	}
	c.ReadySeconds = readyAt.Sub(t0).Seconds()
	synced, computed, err := lw.synced(2 * time.Second)
	if err != nil {
		return err
	}
	c.DesiredSeconds = computed.Sub(t0).Seconds()
	c.CachesSyncedSeconds = synced.Sub(t0).Seconds()
	c.LastRecordAfterSync = c.LastRecordSeconds - c.CachesSyncedSeconds
	// Let the last transaction's echo and the Go runtime settle.
	time.Sleep(time.Second)
	anon, file := stopRSS()
	c.PeakAnonMiB, c.PeakFileMiB = mib(anon), mib(file)
	u, m, err := b.skylbUsage(ctx)
	if err != nil {
		return err
	}
	c.PeakRSSMiB, c.RSSMiB, c.RSSFileMiB, c.CPUSeconds = mib(u.PeakRSS), mib(u.RSS), mib(u.File), u.CPU
	c.Txns = m.sum("skylb_etcd_transactions_total", nil)
	c.KeysWritten = m.sum("skylb_etcd_keys_written_total", map[string]string{"operation": "put"})
	c.Memory = readGoMemory(m)
	c.HeapInuseMiB = c.Memory.HeapInuse
	return nil
}

// restart restarts skylb over the converged state.
func (b *bench) restart(ctx context.Context, res *results) error {
	r, err := b.restartOver(ctx)
	if err != nil {
		return err
	}
	res.Restart = r
	logf("restart: ready in %.2fs, %.0f keys written, etcd revision %+d", r.ReadySeconds, r.KeysWritten, r.RevisionDelta)
	return nil
}

// restartOver stops skylb and starts it again with extra flags over what it
// wrote, and measures the restart: the time to ready, and the keys written
// in every tree (the etcd revision, which any write moves).
func (b *bench) restartOver(ctx context.Context, extra ...string) (*restartResult, error) {
	r := &restartResult{}
	rev0, err := b.revision(ctx)
	if err != nil {
		return nil, err
	}
	t := time.Now()
	if err := b.skylb.Stop(); err != nil {
		return nil, err
	}
	r.StopSeconds = time.Since(t).Seconds()
	lw := b.watchSynced()
	defer lw.close()
	t0 := time.Now()
	if err := b.startSkylb(ctx, extra...); err != nil {
		return nil, err
	}
	readyAt, err := b.waitSkylbReady(ctx, time.Minute)
	if err != nil {
		return nil, err
	}
	r.ReadySeconds = readyAt.Sub(t0).Seconds()
	synced, _, err := lw.synced(2 * time.Second)
	if err != nil {
		return nil, err
	}
	r.CachesSyncedSeconds = synced.Sub(t0).Seconds()
	// Whatever it would write, it writes right after the first full pass.
	time.Sleep(3 * time.Second)
	m, err := b.skylbMetrics(ctx)
	if err != nil {
		return nil, err
	}
	r.KeysWritten = m.sum("skylb_etcd_keys_written_total", nil)
	r.Txns = m.sum("skylb_etcd_transactions_total", nil)
	rev1, err := b.revision(ctx)
	if err != nil {
		return nil, err
	}
	r.RevisionDelta = rev1 - rev0
	if u, err := readProc(b.skylb.PID()); err == nil {
		r.PeakRSSMiB, r.CPUSeconds = mib(u.PeakRSS), u.CPU
	}
	return r, nil
}

// oneChange adds and removes an endpoint of one Service among the large
// cluster's and counts the keys each change writes.
func (b *bench) oneChange(ctx context.Context, res *results) error {
	name := b.scaledName()
	path := stack.StoredPath(name) + "/"
	o := &oneChange{Changes: b.o.atScale}
	before, err := b.skylbMetrics(ctx)
	if err != nil {
		return err
	}
	u0, err := readProc(b.skylb.PID())
	if err != nil {
		return err
	}
	var lat, etcd []time.Duration
	for i := range b.o.atScale {
		t, err := b.measure(ctx, b.scaledChange(i), 300*time.Millisecond)
		if err != nil {
			return err
		}
		lat = append(lat, t.dns)
		if t.etcdOK {
			etcd = append(etcd, t.etcd)
		}
		o.KeysPerChange = max(o.KeysPerChange, len(t.events))
		o.KeysTotal += len(t.events)
		for _, ev := range t.events {
			if !strings.HasPrefix(ev.key, path) {
				o.Outside++
			}
		}
	}
	after, err := b.skylbMetrics(ctx)
	if err != nil {
		return err
	}
	u1, err := readProc(b.skylb.PID())
	if err != nil {
		return err
	}
	o.DNS, o.Etcd = summarise(lat), summarise(etcd)
	o.Skylb = fromHistogram(after.histogram("skylb_propagation_seconds").minus(before.histogram("skylb_propagation_seconds")))
	o.SkylbKeys = after.sum("skylb_etcd_keys_written_total", nil) - before.sum("skylb_etcd_keys_written_total", nil)
	o.CPUSeconds = u1.CPU - u0.CPU
	o.CPUPerEvent = o.CPUSeconds * 1000 / float64(max(1, o.Changes))
	// The change external-dns is timed on, for the comparison.
	if o.StatusChange, err = b.statusChanges(ctx, b.o.extChanges, 10*time.Second); err != nil {
		return err
	}
	res.OneChange = o
	logf("one change at scale: ≤ %d keys per change, %d outside %s; p50 %.1f ms, p99 %.1f ms; status change p50 %.1f ms, p99 %.1f ms",
		o.KeysPerChange, o.Outside, path, o.DNS.P50, o.DNS.P99, o.StatusChange.P50, o.StatusChange.P99)
	return nil
}

// scaledChange is the i-th change of the scaled Service of the large
// cluster: its second endpoint added (i even) or made unready (i odd).
func (b *bench) scaledChange(i int) change {
	ns0, name := b.o.scale.namespace(0), b.scaledName()
	ip1, ip2 := "10.200.0.1", "10.200.0.2"
	if i%2 == 0 {
		return change{kind: "endpoint added", name: name, want: []string{ip1, ip2}, write: func(ctx context.Context) error {
			return setEndpoints(ctx, b.kube, ns0, scaledSvc, []endpoint{{ip1, true}, {ip2, true}})
		}}
	}
	return change{kind: "endpoint unready", name: name, want: []string{ip1}, write: func(ctx context.Context) error {
		return setEndpoints(ctx, b.kube, ns0, scaledSvc, []endpoint{{ip1, true}, {ip2, false}})
	}}
}

// idle counts etcd requests while nothing changes. skylb is then the only
// client that could make any: CoreDNS's etcd plugin reads only when asked,
// the benchmark only keeps its watch open, and the reloader beside CoreDNS,
// which reads one key a second, is paused for the window.
func (b *bench) idle(ctx context.Context, res *results) error {
	i, err := b.idleWindow(ctx, b.skylb.PID())
	if err != nil {
		return err
	}
	res.Idle = i
	logf("idle %.0fs: etcd requests %v; skylb CPU %.2fs", i.Seconds, i.GRPC, i.CPUSeconds)
	return nil
}

// idleWindow counts etcd requests by method over the idle window, and the
// CPU time of the controller pid meanwhile.
func (b *bench) idleWindow(ctx context.Context, pid int) (*idleResult, error) {
	if r := b.st.Proc("coredns-reloader"); r != nil && r.Running() {
		if err := r.Pause(); err != nil {
			return nil, err
		}
		defer r.Resume()
	}
	time.Sleep(3 * time.Second)
	e0, err := b.etcdMetrics(ctx)
	if err != nil {
		return nil, err
	}
	u0, err := readProc(pid)
	if err != nil {
		return nil, err
	}
	t := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(b.o.idle):
	}
	e1, err := b.etcdMetrics(ctx)
	if err != nil {
		return nil, err
	}
	u1, err := readProc(pid)
	if err != nil {
		return nil, err
	}
	i := &idleResult{Seconds: time.Since(t).Seconds(), GRPC: map[string]float64{}, CPUSeconds: u1.CPU - u0.CPU}
	g0, g1 := e0.byLabel("grpc_server_started_total", "grpc_method"), e1.byLabel("grpc_server_started_total", "grpc_method")
	for m, v := range g1 {
		if d := v - g0[m]; d > 0 {
			i.GRPC[m] = d
		}
	}
	for _, m := range []string{"Range", "Txn", "Put", "DeleteRange"} {
		i.GRPC[m] += 0
	}
	return i, nil
}

// restartSkylb stops skylb and starts it again with extra flags.
func (b *bench) restartSkylb(ctx context.Context, extra ...string) error {
	if err := b.skylb.Stop(); err != nil {
		return err
	}
	p, err := b.st.StartSkylb(ctx, append(slices.Clone(skylbArgs), extra...)...)
	if err != nil {
		return err
	}
	b.skylb = p
	_, err = b.waitSkylbReady(ctx, time.Minute)
	return err
}

// waitLeased waits until every claim in etcd carries a lease: with
// --record-expiry skylb writes every claim again to attach its lease (the
// records it holds keep theirs, none). It lists the claims once a second,
// keys only.
func (b *bench) waitLeased(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		resp, err := b.etcd.Get(ctx, "/skylb/claims/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		leased := 0
		if err == nil {
			for _, kv := range resp.Kvs {
				if kv.Lease != 0 {
					leased++
				}
			}
			if len(resp.Kvs) > 0 && leased == len(resp.Kvs) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%d of %d claims written with the lease", leased, len(resp.Kvs))
			}
			return fmt.Errorf("%w: %w", err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
