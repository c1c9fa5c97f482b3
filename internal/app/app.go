// Package app wires skylb together: the publisher writing to etcd, the
// controller feeding it from Kubernetes, leader election, and the HTTP endpoints.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/dnsprobe"
	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/leader"
	"github.com/skylb/skylb/internal/metrics"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/registry"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// Config is everything skylb needs besides its clients.
type Config struct {
	Version string
	// Controller and Publish are the controller's and the publisher's
	// configurations as the command line gives them; Run adds what connects
	// them to the other parts (the Verdicts, the guards, the metrics, the
	// leader, the logs). Controller.Source, Controller.Scope and
	// Controller.DryRun are skylb's as a whole, which the other parts read
	// too.
	Controller controller.Config
	Publish    publish.Config

	// HTTPAddress is where /healthz, /readyz and /metrics are served; empty disables them.
	HTTPAddress string
	// CoreDNSAddress is the DNS address (host:port) of the CoreDNS that
	// serves skylb's zones. skylb asks it, at start and every minute,
	// whether it answers each zone of the sources and the reverse zones
	// authoritatively (package dnsprobe), and says so when one is not
	// served: its records would be published and never answered. Empty
	// disables the check; Once does not run it.
	CoreDNSAddress string

	// LeaderElect runs leader election: only the leader writes.
	LeaderElect bool
	Leader      leader.Config
	// Identity names this instance (its host name) to the others of its
	// owner id.
	Identity string
	// ScopePrefix is where the instances of the owner id register their
	// scope (see package registry); /skylb/scopes/<owner-id>/ when empty.
	ScopePrefix string

	// EventQPS is the rate at which the API client sends Events
	// (--event-qps); Events beyond what its queue holds at that rate are
	// dropped and counted (see eventGate). 0 is DefaultEventQPS.
	EventQPS float32

	// StartGCPercent, when above 0, is the collector's GOGC from the start
	// until the first full pass is in etcd; the previous setting is restored
	// then, and the memory the cold start freed is returned to the system.
	// The cold start is when the heap is largest, and at GOGC=100 the heap
	// grows to twice what is live before the collector runs.
	// DefaultStartGCPercent is the usual value.
	StartGCPercent int

	// ViewBlocks, when set, has skylb keep the views' CoreDNS server blocks
	// in a ConfigMap.
	ViewBlocks *ViewBlocks

	// Once syncs everything once, writes Summary and returns.
	Once        bool
	OnceTimeout time.Duration
	Summary     io.Writer

	Log logrus.FieldLogger
}

// DefaultEventQPS is the usual rate of Events, --event-qps's default.
const DefaultEventQPS = 10

// DefaultStartGCPercent is the GOGC of the cold start, when the live heap
// is largest: at 10,000 Services and 2,000 Ingresses the peak RSS is 71.6 to
// 71.8 MiB at 20 against 74.0 to 74.8 MiB at 25 and 88 MiB or more at 100,
// for a tenth of a second of CPU time or less (see test/bench/README.md).
const DefaultStartGCPercent = 20

// Clients are the API clients skylb reads from.
type Clients struct {
	Kube kubeclient.Interface
	// Metadata, when set, watches CustomResourceDefinitions so that the
	// Gateway API is picked up as soon as its CRDs are installed.
	Metadata metadata.Interface
	// APIServerErr, when set, says why the API server cannot be reached, or
	// nil while it answers; /readyz gives the reason.
	APIServerErr func() error
}

// Run publishes until ctx ends, or once with Config.Once. It builds the
// components, then runs them under one group that it joins before returning:
// the first to fail, or the controller stopping, stops them all.
func Run(ctx context.Context, cfg Config, clients Clients, etcd *clientv3.Client) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := metrics.New(cfg.Version)

	var elector *leader.Elector
	if cfg.LeaderElect {
		cfg.Leader.Log = cfg.Log.WithField("component", "leader")
		elector = leader.New(cfg.Leader, clients.Kube, etcd)
	}
	// The default view's publisher decides on the names other clusters
	// claim, and the controller tells the objects behind them: both are
	// handed the one Verdicts.
	verdicts := publish.NewVerdicts()
	pub, reg := newPublisher(cfg, etcd, m, elector, verdicts)
	recorder, stopEvents := eventRecorder(ctx, clients.Kube, cfg.EventQPS, cfg.Log.WithField("component", "events"))
	defer stopEvents()
	served := zoneChecker(cfg, clients.Kube, recorder)
	ccfg := controllerConfig(cfg, clients, m, elector, verdicts)
	// The views' blocks follow the nodes, which the controller watches.
	keepBlocks := cfg.ViewBlocks != nil && !cfg.Controller.DryRun && !cfg.Once
	nodesChanged := make(chan struct{}, 1)
	if keepBlocks {
		ccfg.NodesChanged = nodesChanged
	}
	ctrl := controller.New(ccfg, clients.Kube, pub, recorder)
	var leading []func(context.Context)
	if keepBlocks {
		leading = append(leading, newBlockKeeper(cfg, clients.Kube, ctrl.Nodes, nodesChanged).run)
	}
	register(m, cfg, pub, ctrl, elector, reg, recorder, served)

	if cfg.HTTPAddress != "" {
		srv, err := serveHTTP(cfg.HTTPAddress, m, func() error {
			return notReady(clients, pub, ctrl)
		})
		if err != nil {
			return err
		}
		defer func() {
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer scancel()
			srv.Shutdown(sctx)
		}()
	}

	g, ctx := errgroup.WithContext(ctx)
	if cfg.StartGCPercent > 0 {
		g.Go(func() error {
			coldStart(ctx, cfg.StartGCPercent, ctrl, elector == nil)
			return nil
		})
	}
	g.Go(func() error {
		pub.Run(ctx)
		return nil
	})
	if reg != nil {
		g.Go(func() error {
			reg.Run(ctx)
			return nil
		})
		// Writes paused for another scope's instance compare everything
		// with etcd again once it has gone.
		g.Go(func() error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-reg.Resolved():
					pub.Resync()
				}
			}
		})
	}
	if served != nil {
		g.Go(func() error {
			served.Run(ctx)
			return nil
		})
	}
	g.Go(func() error { return lead(ctx, elector, pub, ctrl, leading...) })
	// The controller stopping stops everything; with Once, so does the
	// summary being written.
	g.Go(func() error {
		defer cancel()
		return ctrl.Run(ctx)
	})
	if !cfg.Once {
		return g.Wait()
	}
	err := once(ctx, cfg, pub, ctrl, reg)
	cancel()
	if werr := g.Wait(); err == nil {
		err = werr
	}
	return err
}

// newPublisher returns the publisher of cfg and, unless this is a dry run,
// the registry of the scopes sharing its owner id, which guards its writes
// (with the elector's fence when there is one).
func newPublisher(cfg Config, etcd *clientv3.Client, m *metrics.Metrics, elector *leader.Elector, verdicts *publish.Verdicts) (*publish.Group, *registry.Registry) {
	pubCfg := cfg.Publish
	pubCfg.ObservePropagation = func(d time.Duration) { m.Propagation.Observe(d.Seconds()) }
	pubCfg.Verdicts = verdicts
	pubCfg.Log = cfg.Log.WithField("component", "publisher")
	if sc := cfg.Controller.Scope; !sc.All() {
		pubCfg.Owns = sc.Owns
	}
	// A dry run writes nothing, so it neither registers its scope nor
	// waits for another's.
	var (
		reg    *registry.Registry
		guards guardList
	)
	scopePrefix := cfg.ScopePrefix
	if scopePrefix == "" {
		scopePrefix = "/skylb/scopes/" + cfg.Publish.Owner + "/"
	}
	if !cfg.Controller.DryRun {
		reg = registry.New(etcd, registry.Config{
			Prefix: scopePrefix, Scope: cfg.Controller.Scope.String(), Identity: cfg.Identity, Timeout: cfg.Publish.Timeout,
			Log: cfg.Log.WithField("component", "registry"),
		})
		guards = append(guards, reg)
	}
	if elector != nil {
		guards = append(guards, elector)
		pubCfg.Inactive = true
	}
	if len(guards) > 0 {
		pubCfg.Guard = guards
	}
	return publish.NewGroup(etcd, pubCfg, source.ViewNames(cfg.Controller.Source.Views)...), reg
}

// controllerConfig returns the controller's configuration from cfg.
func controllerConfig(cfg Config, clients Clients, m *metrics.Metrics, elector *leader.Elector, verdicts *publish.Verdicts) controller.Config {
	c := cfg.Controller
	c.Verdicts = verdicts
	c.ObserveReconcile = func(d time.Duration) { m.ReconcileDuration.Observe(d.Seconds()) }
	c.ObserveProbe = func(r health.Result) {
		m.ProbeDuration.Observe(r.Duration.Seconds())
		if r.Err != nil {
			m.ProbeErrors.WithLabelValues(probeErrorReason(r.Err)).Inc()
		}
	}
	c.Log = cfg.Log.WithField("component", "controller")
	if c.GatewayAPI || c.DNSEndpoint {
		c.CRDs = clients.Metadata
	}
	if elector != nil {
		c.Leading = elector.Leading
	}
	return c
}

// coldStart runs the first pass at the garbage collector setting gcPercent,
// then returns to the usual one.
func coldStart(ctx context.Context, gcPercent int, ctrl *controller.Controller, writes bool) {
	prev := debug.SetGCPercent(gcPercent)
	firstPass(ctx, ctrl, writes)
	debug.SetGCPercent(prev)
	if ctx.Err() == nil {
		// The cold start's garbage is gone, and the pages it took stay
		// with the process unless returned now: at the usual setting the
		// runtime keeps up to twice what is live.
		debug.FreeOSMemory()
	}
}

// lead runs the health checks, and each of also once the caches have synced,
// until ctx ends; with an elector, only while this replica leads, which is
// also when the publisher writes.
func lead(ctx context.Context, elector *leader.Elector, pub *publish.Group, ctrl *controller.Controller, also ...func(context.Context)) error {
	if elector == nil {
		var wg sync.WaitGroup
		if len(also) > 0 {
			wg.Go(func() {
				if waitUntil(ctx, ctrl.Ready) == nil {
					runAll(ctx, also)
				}
			})
		}
		ctrl.RunHealth(ctx)
		wg.Wait()
		return nil
	}
	// A replica stands for leader once it could lead at once: its caches
	// synced, its first pass done and its view of etcd loaded. One just
	// started, as the one replacing a deleted leader is, would otherwise
	// take the Lease as it is released, ahead of a ready standby, and
	// publish nothing until its own caches synced: seconds in a large
	// cluster.
	if waitUntil(ctx, func() bool { return ctrl.Ready() && pub.Ready() }) != nil {
		return nil
	}
	return elector.Run(ctx, func(lctx context.Context) {
		pub.SetActive(true)
		ctrl.Resync(lctx)
		// Only the leader probes; a new leader starts from healthy.
		var wg sync.WaitGroup
		wg.Go(func() { ctrl.RunHealth(lctx) })
		wg.Go(func() { runAll(lctx, also) })
		<-lctx.Done()
		// Finish the transaction in flight before leadership is released.
		pub.SetActive(false)
		wg.Wait()
	})
}

// runAll runs each of fs until ctx ends, and returns when all have.
func runAll(ctx context.Context, fs []func(context.Context)) {
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(func() { f(ctx) })
	}
	wg.Wait()
}

// notReady returns every reason skylb is not ready, on one line, or nil when
// it is.
func notReady(clients Clients, pub *publish.Group, ctrl *controller.Controller) error {
	var reasons []string
	if clients.APIServerErr != nil {
		if err := clients.APIServerErr(); err != nil {
			reasons = append(reasons, err.Error())
		}
	}
	if !ctrl.Ready() {
		reasons = append(reasons, "informer caches not synced")
	}
	if !pub.Reachable() {
		reasons = append(reasons, "etcd unreachable")
	}
	if !pub.Ready() {
		reasons = append(reasons, "etcd view not loaded")
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "; "))
}

// firstPass returns once the first full pass is in etcd, or when it is not
// coming soon: ctx ends, a minute has passed (etcd is unreachable), or the
// caches have synced on a replica that does not write (writing is not
// active) and so holds no writes back.
func firstPass(ctx context.Context, ctrl *controller.Controller, writes bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if waitReady(ctx, ctrl) == nil && writes {
		ctrl.WaitIdle(ctx)
	}
}

// waitReady returns once the controller's caches have synced, or ctx's error.
func waitReady(ctx context.Context, ctrl *controller.Controller) error {
	return waitUntil(ctx, ctrl.Ready)
}

// waitUntil returns once cond holds, or ctx's error.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// once waits until everything is published and writes a summary. It fails at
// once when an instance of another scope runs with the same owner id.
func once(ctx context.Context, cfg Config, pub *publish.Group, ctrl *controller.Controller, reg *registry.Registry) error {
	timeout := cfg.OnceTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := waitReady(ctx, ctrl); err != nil {
		return fmt.Errorf("once: informer caches did not sync: %w", err)
	}
	if reg != nil {
		select {
		case <-reg.Checked():
		case <-ctx.Done():
			return fmt.Errorf("once: the scopes of owner id %s could not be read (is etcd reachable?): %w", cfg.Publish.Owner, ctx.Err())
		}
		if err := reg.Conflict(); err != nil {
			return fmt.Errorf("once: nothing written: %w; each scope needs its own --owner-id", err)
		}
	}
	if err := ctrl.WaitIdle(ctx); err != nil {
		return fmt.Errorf("once: records not published within %v (is etcd reachable?): %w", timeout, err)
	}
	verb := "written"
	if cfg.Controller.DryRun {
		verb = "to write (dry run)"
	}
	// The default view's, then each view's, prefixed with its name.
	summarise := func(prefix string, p *publish.Publisher) {
		names, records := map[string]bool{}, 0
		p.CountRecords(func(stored string, _ skydns.Type) {
			names[stored] = true
			records++
		})
		s := p.Stats()
		fmt.Fprintf(cfg.Summary, "%[1]snames: %[2]d\n%[1]srecords: %[3]d\n%[1]srecords %[4]s: %[5]d\n%[1]srecords deleted: %[6]d\n%[1]srecords unchanged: %[7]d\n",
			prefix, len(names), records, verb, s.Puts, s.Deletes, int64(records)-s.Puts)
		if s.HeldDeletes > 0 {
			fmt.Fprintf(cfg.Summary, "%sdeletions held back by --max-delete-ratio: %d\n", prefix, s.HeldDeletes)
		}
	}
	summarise("", pub.View(""))
	for _, name := range pub.Views() {
		summarise("view "+name+": ", pub.View(name))
	}
	return nil
}

// eventRecorder returns the recorder of skylb's Events, sent to the API
// server at qps behind an eventGate, and what stops it.
func eventRecorder(ctx context.Context, kube kubeclient.Interface, qps float32, log logrus.FieldLogger) (*eventGate, func()) {
	if qps <= 0 {
		qps = DefaultEventQPS
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(kube.EventSink())
	rec := broadcaster.NewRecorder(kubeclient.Scheme, corev1.EventSource{Component: "skylb"})
	return newEventGate(rec, qps, log), broadcaster.Shutdown
}

// guardList is the conditions of several Guards together: every write meets
// them all.
type guardList []publish.Guard

// Compares returns the conditions of every Guard, or the first error.
func (l guardList) Compares() ([]clientv3.Cmp, error) {
	var all []clientv3.Cmp
	for _, g := range l {
		cmps, err := g.Compares()
		if err != nil {
			return nil, err
		}
		all = append(all, cmps...)
	}
	return all, nil
}

// register exposes the components' counters as metrics.
func register(m *metrics.Metrics, cfg Config, pub *publish.Group, ctrl *controller.Controller, el *leader.Elector, reg *registry.Registry, events *eventGate, served *dnsprobe.Checker) {
	zones := dnsname.WithReverse(cfg.Controller.Source.Zones, cfg.Controller.ReverseZones)
	zoneOf := func(stored string) string {
		best := ""
		for _, z := range zones {
			if dnsname.IsWithin(stored, z) && len(z) > len(best) {
				best = z
			}
		}
		return best
	}
	m.Vec("skylb_records", "Records skylb wants published, by zone and type.", prometheus.GaugeValue,
		[]string{"zone", "type"}, func() map[string]float64 {
			out := map[string]float64{}
			pub.CountRecords(func(stored string, t skydns.Type) { out[zoneOf(stored)+metrics.LabelSep+string(t)]++ })
			return out
		})
	if views := pub.Views(); len(views) > 0 {
		m.Vec("skylb_view_records", "Records skylb wants published in each view besides the default one (--view), by view, zone and type.", prometheus.GaugeValue,
			[]string{"view", "zone", "type"}, func() map[string]float64 {
				out := map[string]float64{}
				for _, name := range views {
					pub.View(name).CountRecords(func(stored string, t skydns.Type) {
						out[name+metrics.LabelSep+zoneOf(stored)+metrics.LabelSep+string(t)]++
					})
				}
				return out
			})
	}
	stats := func(f func(publish.Stats) int64) func() float64 {
		return func() float64 { return float64(f(pub.Stats())) }
	}
	m.Vec("skylb_etcd_request_errors_total", "Failed etcd requests by operation.", prometheus.CounterValue,
		[]string{"operation"}, func() map[string]float64 {
			s := pub.Stats()
			return map[string]float64{"list": float64(s.ListErrors), "watch": float64(s.WatchErrors), "txn": float64(s.TxnErrors)}
		})
	m.Vec("skylb_etcd_keys_written_total", "etcd keys written by operation.", prometheus.CounterValue,
		[]string{"operation"}, func() map[string]float64 {
			s := pub.Stats()
			return map[string]float64{"put": float64(s.Puts), "delete": float64(s.Deletes)}
		})
	m.Counter("skylb_etcd_transactions_total", "etcd transactions committed.", stats(func(s publish.Stats) int64 { return s.Txns }))
	m.Counter("skylb_etcd_no_space_errors_total", "etcd transactions refused because etcd's database is full (NOSPACE alarm).",
		stats(func(s publish.Stats) int64 { return s.NoSpaceErrors }))
	m.Gauge("skylb_etcd_no_space", "1 while etcd refuses skylb's writes because its database is full (NOSPACE alarm).",
		stats(func(s publish.Stats) int64 { return int64(boolInt(s.NoSpace)) }))
	m.Counter("skylb_etcd_relists_total", "Full lists of the prefix, at start and after compaction.", stats(func(s publish.Stats) int64 { return s.Relists }))
	m.Gauge("skylb_held_deletions", "Deletions the last full reconciliation held back under --max-delete-ratio.", stats(func(s publish.Stats) int64 { return s.HeldDeletes }))
	m.Gauge("skylb_scope_conflict", "1 while this replica does not write because a skylb of another scope runs with its owner id.", func() float64 {
		if reg != nil && reg.Conflict() != nil {
			return 1
		}
		return 0
	})
	m.Gauge("skylb_records_outside_scope", "Records of this owner id whose objects lie outside this skylb's namespaces or sources (--namespace, --source): left alone.",
		func() float64 { return float64(pub.CountOutside()) })
	m.Gauge("skylb_hostname_conflicts", "Hostname claims refused because another namespace holds the name.", func() float64 { return float64(ctrl.Conflicts()) })
	m.Gauge("skylb_names_held_by_other_clusters", "Names not published because another cluster sharing the etcd holds them, or a name above or beneath them, or records of this owner id outside this skylb's scope hold them.", stats(func(s publish.Stats) int64 { return s.Refused }))
	m.Vec("skylb_cluster_failovers_total", "Times this cluster started (direction in) or stopped (out) answering a name it shares with other clusters, as committed to etcd.", prometheus.CounterValue,
		[]string{"direction"}, func() map[string]float64 {
			s := pub.Stats()
			return map[string]float64{"in": float64(s.TookOver), "out": float64(s.HandedOver)}
		})
	m.Gauge("skylb_shared_names_standby", "Names this cluster shares with other clusters and leaves to them: they answer by the cluster policy, or this cluster is held down.", stats(func(s publish.Stats) int64 { return s.Standby }))
	m.Counter("skylb_record_leases_lost_total", "Times the lease of the records expired under skylb (with --record-expiry).", stats(func(s publish.Stats) int64 { return s.LeasesLost }))
	m.Counter("skylb_swept_records_total", "Records of other clusters sharing the etcd deleted because the claims that held them expired (their cluster ran with --record-expiry and stopped renewing them).", stats(func(s publish.Stats) int64 { return s.Swept }))
	m.Gauge("skylb_health_fail_open", "Objects publishing all their addresses because none passes its health check.", func() float64 { return float64(ctrl.FailOpen()) })
	m.Gauge("skylb_workqueue_depth", "Objects waiting to be synced.", func() float64 { return float64(ctrl.QueueLen()) })
	m.Counter("skylb_service_status_writes_total", "Service status updates written.", func() float64 { return float64(ctrl.StatusWrites()) })
	m.Vec("skylb_events_dropped_total", "Events not sent because more came at once than the API server takes at --event-qps, by type.", prometheus.CounterValue,
		[]string{"type"}, func() map[string]float64 {
			normal, warning := events.Dropped()
			return map[string]float64{corev1.EventTypeNormal: float64(normal), corev1.EventTypeWarning: float64(warning)}
		})
	m.Gauge("skylb_leader", "1 while this replica leads and writes, 0 otherwise.", func() float64 {
		if el == nil || el.Leading() {
			return 1
		}
		return 0
	})
	m.Vec("skylb_address_healthy", fmt.Sprintf("1 while an address passes its health check, by published name and address; at most %d series, the failing ones first.", maxAddressSeries), prometheus.GaugeValue,
		[]string{"name", "address"}, func() map[string]float64 {
			return addressSeries(ctrl.HealthStates(), maxAddressSeries)
		})
	m.Vec("skylb_addresses_checked", "Addresses under health checks, by state (healthy, unhealthy).", prometheus.GaugeValue,
		[]string{"state"}, func() map[string]float64 {
			healthy, unhealthy := 0.0, 0.0
			for _, ok := range ctrl.HealthStates() {
				if ok {
					healthy++
				} else {
					unhealthy++
				}
			}
			return map[string]float64{"healthy": healthy, "unhealthy": unhealthy}
		})
	m.Vec("skylb_nameservers", "Nameservers published for a zone; a delegation needs at least 2.", prometheus.GaugeValue,
		[]string{"zone"}, func() map[string]float64 {
			out := map[string]float64{}
			for zn, n := range ctrl.Nameservers() {
				out[zn] = float64(n)
			}
			return out
		})
	m.Gauge("skylb_last_sync_timestamp_seconds", "When this replica last found etcd as it wants it, or left it so (Unix time); 0 before the first time. A leader does so at least every --resync-interval.",
		func() float64 {
			if t := pub.Stats().LastSync; !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		})
	m.Gauge("skylb_etcd_reachable", "1 while the connection to etcd is up.", func() float64 {
		return float64(boolInt(pub.Reachable()))
	})
	if served != nil {
		m.Vec("skylb_zone_served", "1 while CoreDNS (--coredns-address) answers the zone authoritatively; 0 while it answers, and not for the zone: its Corefile does not serve it, and the zone's records are published and not answered; -1 while no answer tells (CoreDNS starting or unreachable). Absent without --coredns-address.", prometheus.GaugeValue,
			[]string{"zone"}, func() map[string]float64 {
				out := map[string]float64{}
				for zn, s := range served.States() {
					out[zn] = zoneServedValue(s)
				}
				return out
			})
	}
}

// maxAddressSeries bounds skylb_address_healthy: with --address-source=pods
// every pod address of every checked object would be a series.
const maxAddressSeries = 500

// addressSeries returns the series of skylb_address_healthy for states: at
// most limit of them, the failing addresses first, then by name and address.
func addressSeries(states map[health.Target]bool, limit int) map[string]float64 {
	type series struct {
		key string
		ok  bool
	}
	all := make([]series, 0, len(states))
	for t, ok := range states {
		all = append(all, series{t.Spec.Host + metrics.LabelSep + t.String(), ok})
	}
	slices.SortFunc(all, func(a, b series) int {
		if a.ok != b.ok {
			return cmp.Compare(boolInt(a.ok), boolInt(b.ok))
		}
		return strings.Compare(a.key, b.key)
	})
	out := make(map[string]float64, min(len(all), limit))
	for _, s := range all[:min(len(all), limit)] {
		out[s.key] = float64(boolInt(s.ok))
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// probeErrorReason sorts a failed probe for skylb_health_probe_errors_total.
func probeErrorReason(err error) string {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case strings.HasPrefix(err.Error(), "status "):
		return "status"
	}
	return "other"
}
