package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/rank"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// Publisher receives the records the controller wants published, in the
// default view and in each view of Config.Source.Views; *publish.Group is one.
type Publisher interface {
	// Set replaces what is wanted at one stored name of a view, "" for
	// the default view.
	Set(view, stored string, w publish.Want)
	// Complete says every wanted name has been Set.
	Complete()
	// Resync compares everything with etcd once more.
	Resync()
	// Loaded returns, once, the sum of the digests of the records of each
	// object that etcd held when the view was loaded, waiting for the view
	// until ctx ends; nil when it did not come, or was taken.
	Loaded(ctx context.Context) map[string]uint64
	// WaitIdle waits until everything Set has been written, or ctx ends.
	WaitIdle(ctx context.Context) error
}

// Config configures a Controller.
type Config struct {
	Source source.Config
	// Scope narrows what is published: the namespaces and kinds watched,
	// and the labels and classes of the objects published.
	Scope          scope.Scope
	ResyncInterval time.Duration // full reconciliation period; 0 disables
	Workers        int
	// Leading reports whether this replica may write Service status and emit
	// Events; nil means always. Followers keep everything else current.
	Leading func() bool
	// DryRun logs status writes and Events instead of making them.
	DryRun bool
	// NoEndpointsGrace is how long a new object may wait for its first
	// endpoints before its NoEndpoints Warning is sent; 0 sends it at once.
	// An object that had endpoints and lost them is warned about at once.
	NoEndpointsGrace time.Duration
	// ObserveReconcile, when set, is told how long the decision took to
	// compute each object's publication (see decide).
	ObserveReconcile func(time.Duration)
	// HealthWorkers bounds the health probes running at once.
	HealthWorkers int
	// ObserveProbe, when set, is told the outcome of every health probe.
	ObserveProbe func(health.Result)
	// Zone, when set, has the controller keep the records of the zones
	// themselves: their nameservers and the apex guard.
	Zone *ZoneConfig
	// ReverseZones are the reverse zones where the published addresses get
	// PTR records (see package rank); none publishes none.
	ReverseZones []dnsname.ReverseZone
	// GatewayAPI publishes Gateways, HTTPRoutes, GRPCRoutes and TLSRoutes
	// once discovery says their CRDs are served, asked again every
	// GatewayPoll (a minute when 0), as for every kind of a CRD.
	GatewayAPI bool
	// DNSEndpoint publishes external-dns's DNSEndpoints once discovery says
	// their CRD is served, as for the Gateway API.
	DNSEndpoint bool
	GatewayPoll time.Duration
	// CRDs, when set, watches the metadata of CustomResourceDefinitions,
	// so that the CRDs of the kinds published installed later are picked
	// up within seconds rather than at the next GatewayPoll.
	CRDs metadata.Interface
	// Verdicts, when set, are the default view's publisher's decisions on
	// the names other clusters sharing the etcd claim: the controller tells
	// the objects publishing them with Events.
	Verdicts *publish.Verdicts
	// NodesChanged, when set, is signalled (never blocking) after a Node is
	// added or deleted, or its labels, pod CIDRs or addresses change; Nodes
	// gives them.
	NodesChanged chan<- struct{}
	Log          logrus.FieldLogger
}

// Controller turns the objects of every kind published (kindsOf) into
// records.
type Controller struct {
	cfg      Config
	pub      Publisher
	recorder record.EventRecorder
	kube     API

	// caches are what the decisions read: the informers, their listers and
	// the builder of publications over them.
	caches caches
	queue  workqueue.TypedRateLimitingInterface[skydns.ObjectKey]
	// statuses are the Service statuses to write (see statusOf).
	statuses statusWork

	// mu guards the bookkeeping of decisions (book) and the zone records.
	mu   sync.Mutex
	book bookkeeping
	// phase is how far the controller has come: caches synced, first
	// full pass done.
	phase phases

	// order hands the records decided under mu to the publisher in order.
	order order

	// observed holds when each queued change was first seen, which the
	// publisher measures propagation from.
	observed observations

	health healthChoices

	zone *zoneState // nil without Config.Zone

	// late starts the informers of the kinds of CRDs as they are served;
	// nil when no such kind is published.
	late *discovery
}

// caches are the informers the controller reads, their listers, and the
// builder that computes publications from them. They are set up by New and
// read without a lock.
type caches struct {
	builder   *source.Builder
	informers coreInformers
	services  corelisters.ServiceLister
	nodes     corelisters.NodeLister
	kinds     []*objectKind // the kinds published, with their informers
	// synced report, one per event handler, that the informer's cache has
	// synced and the handler has been given every object of the initial
	// list, which it does not queue: the first full pass covers them.
	synced []cache.InformerSynced
}

// statusWork holds the objects whose status is to be written, and counts
// the writes.
type statusWork struct {
	queue  workqueue.TypedRateLimitingInterface[skydns.ObjectKey]
	writes atomic.Int64
}

// bookkeeping is what the decisions keep between them, under Controller.mu:
// the ranking index, what was resolved and told from it, and the endpoints
// that decide when NoEndpoints is told.
type bookkeeping struct {
	index    *rank.Index
	tellings tellings
	// endpoints holds, by source, what decides when NoEndpoints is told.
	endpoints map[string]endpointWatch
}

// phases are how far the controller has come, each set once.
type phases struct {
	// started is set when the first full pass begins: the events of the
	// caches filling up before it are covered by that pass and not queued.
	started atomic.Bool
	// cachesSynced is set once the caches have synced, as the first full
	// pass starts: changes from then on are followed one by one.
	cachesSynced atomic.Bool
	// ready is set once the caches have synced and the first full pass is done.
	ready atomic.Bool
}

// API is what the controller reads from and writes to the Kubernetes API;
// *kubeclient.Client is one.
type API interface {
	// ListWatch lists and watches resource r in namespace, every namespace
	// when it is "".
	ListWatch(r schema.GroupVersionResource, namespace string) cache.ListerWatcher
	// Patch patches an object, or its subresource when one is given.
	Patch(ctx context.Context, r schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, subresource ...string) error
	// ServedResources returns the resources served in group version gv.
	ServedResources(ctx context.Context, gv schema.GroupVersion) (map[string]bool, error)
}

// New returns a Controller reading from kube and writing to pub. Events go to recorder.
func New(cfg Config, kube API, pub Publisher, recorder record.EventRecorder) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.Leading == nil {
		cfg.Leading = func() bool { return true }
	}
	strip := transform(cfg.Zone, cfg.Scope, cfg.Source.Views)
	sc := cfg.Scope
	svcNS := serviceNamespaces(sc, cfg.Source.IngressService)
	f := informerMaker{api: kube, transform: strip}
	gatewayAPI := cfg.GatewayAPI && sc.GatewayAPI()
	// Services, their EndpointSlices and the Nodes give the addresses of
	// Services, of the ingress controller's and of the Gateways', and the
	// nameservers found by the selector; a scope that needs none of them
	// reads none.
	var svcs, slices_, nodes, ings informerSet
	if sc.Kind(source.KindService) || sc.Kind(source.KindIngress) && cfg.Source.IngressService != "" || gatewayAPI ||
		cfg.Zone != nil && cfg.Zone.NameserverSelector != nil {
		svcs = f.of(kubeclient.Services, &corev1.Service{}, svcNS)
		slices_ = f.of(kubeclient.EndpointSlices, &discoveryv1.EndpointSlice{}, svcNS)
		nodes = f.of(kubeclient.Nodes, &corev1.Node{}, nil)
	}
	if sc.Kind(source.KindIngress) {
		ings = f.of(kubeclient.Ingresses, &networkingv1.Ingress{}, sc.Namespaces)
	}
	kinds := kindsOf(cfg, f, svcs, ings)
	listers := source.Listers{
		EndpointSlices: discoverylisters.NewEndpointSliceLister(slices_.indexer()),
		Nodes:          corelisters.NewNodeLister(nodes.indexer()),
		Services:       corelisters.NewServiceLister(svcs.indexer()),
		PortUsers:      portUsers(svcs.indexer()),
	}
	if gw := findKind(kinds, source.KindGateway); gw != nil {
		listers.Gateways = gatewayLister(gw.indexer, sc)
	}
	c := &Controller{
		cfg:      cfg,
		late:     newDiscovery(kube, cfg.CRDs, cfg.GatewayPoll, kinds),
		pub:      pub,
		recorder: recorder,
		kube:     kube,
		caches: caches{
			builder:   source.NewBuilder(cfg.Source, listers),
			informers: coreInformers{services: svcs, slices: slices_, nodes: nodes, ingresses: ings},
			services:  listers.Services,
			nodes:     listers.Nodes,
			kinds:     kinds,
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[skydns.ObjectKey](),
			workqueue.TypedRateLimitingQueueConfig[skydns.ObjectKey]{Name: "skylb"}),
		statuses: statusWork{queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[skydns.ObjectKey](),
			workqueue.TypedRateLimitingQueueConfig[skydns.ObjectKey]{Name: "skylb-status"})},
		book: bookkeeping{
			index:     newIndex(cfg),
			tellings:  newTellings(),
			endpoints: make(map[string]endpointWatch),
		},
	}
	if err := svcs.addIndexers(cache.Indexers{byPort: c.portIndex}); err != nil {
		panic(fmt.Sprintf("add the Services' port index: %v", err))
	}
	c.health.prober = health.NewProber(cfg.HealthWorkers, c.healthChanged, cfg.ObserveProbe)
	for _, k := range c.caches.kinds {
		if err := k.informers.addIndexers(k.indexers); err != nil {
			panic(fmt.Sprintf("add the %s indexes: %v", k.kind, err))
		}
		synced := c.handle(k)
		// The informers of a CRD's kind run once it is served (see
		// discovery), and are waited for then.
		if k.served == nil {
			c.caches.synced = append(c.caches.synced, synced)
		}
	}
	c.handleSlices(slices_)
	c.handleNodes(nodes)
	// The reverse zones get their nameservers and apex guard too, so that
	// they can be delegated like the others.
	if c.zone = newZoneState(cfg.Zone, dnsname.WithReverse(cfg.Source.Zones, cfg.ReverseZones)); c.zone != nil {
		c.handleNameservers(svcs, slices_, nodes)
	}
	return c
}

// newIndex returns the ranking index of cfg.
func newIndex(cfg Config) *rank.Index {
	x := rank.NewIndex(cfg.Source.MaxAddresses, source.ViewNames(cfg.Source.Views)...)
	x.SetReverseZones(cfg.ReverseZones)
	return x
}

// Ready reports whether the caches have synced and the first full pass is done.
func (c *Controller) Ready() bool { return c.phase.ready.Load() }

// Nodes returns the cached Nodes, stripped as the informer keeps them (their
// labels, spec, addresses and conditions). They are shared: never change them.
func (c *Controller) Nodes() []*corev1.Node {
	nodes, _ := c.caches.nodes.List(labels.Everything())
	return nodes
}

// WaitIdle waits until the records the controller handed over, in every
// view, are written, or ctx ends.
func (c *Controller) WaitIdle(ctx context.Context) error {
	if err := c.pub.WaitIdle(ctx); err != nil {
		return err
	}
	return c.cfg.Verdicts.Wait(ctx)
}

// Run starts the informers, waits for their caches, publishes everything once and
// then follows changes until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.statuses.queue.ShutDown()

	defer c.runInformers(ctx)()
	synced := append(slices.Clone(c.caches.synced), c.startServedAtStart(ctx)...)
	c.cfg.Log.Info("waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("informer caches did not sync")
	}
	start := time.Now()
	c.phase.cachesSynced.Store(true)
	n, err := c.syncAll(ctx)
	if err != nil {
		return err
	}
	c.pub.Complete()
	c.cfg.Log.WithFields(logrus.Fields{"objects": n, "took": time.Since(start).Round(time.Millisecond)}).
		Info("caches synced; desired records computed")

	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.runWorker, time.Second)
		}()
	}
	// The status the first pass found wrong is written before skylb calls
	// itself ready, as --once expects; changes are followed meanwhile.
	c.drainStatus(ctx)
	c.phase.ready.Store(true)
	for range statusWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.runStatusWorker, time.Second)
		}()
	}
	if c.cfg.Verdicts != nil {
		wg.Go(func() { c.runVerdicts(ctx) })
	}
	if c.late != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.runDiscovery(ctx)
		}()
	}
	if c.cfg.ResyncInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// JitterUntil runs its function at once; the first full pass
			// has just done what a resync would do.
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait.Jitter(c.cfg.ResyncInterval, 0.1)):
			}
			wait.JitterUntilWithContext(ctx, c.resync, c.cfg.ResyncInterval, 0.1, false)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.statuses.queue.ShutDown()
	wg.Wait()
	if c.late != nil {
		c.late.running.Wait()
	}
	return nil
}

// syncAll computes the publication of every object in the caches, with the
// zones' records, and forgets objects that are gone. It stores every
// publication first and then resolves each group once: resolving a group
// after each of its objects, as a change does, would cost the square of a
// group's size.
func (c *Controller) syncAll(ctx context.Context) (int, error) {
	// An event from now on may come after the pass has read its object: it is
	// queued. An event handled before has its object in the caches already.
	first := !c.phase.started.Swap(true)
	keys := c.cachedKeys()
	var loaded map[string]uint64
	if first {
		// The first pass tells what changed while no skylb ran: for that
		// it waits a little for the view of etcd, which usually came first.
		lctx, cancel := context.WithTimeout(ctx, loadedWait)
		loaded = c.pub.Loaded(lctx)
		cancel()
	}
	in := inputs{keys: keys}
	if c.zone != nil {
		in.keys = append(slices.Clip(keys), zoneKey)
	}
	out, err := c.decide(in, loaded)
	if err != nil {
		return 0, err
	}
	c.apply(out)
	return len(keys), nil
}

// cachedKeys returns the keys of every cached object and every object the
// index still holds, sorted.
func (c *Controller) cachedKeys() []skydns.ObjectKey {
	var keys []skydns.ObjectKey
	for _, k := range c.caches.kinds {
		keys = append(keys, k.cachedKeys()...)
	}
	c.mu.Lock()
	keys = append(keys, c.book.index.Keys()...)
	c.mu.Unlock()
	slices.SortFunc(keys, compareKeys)
	return slices.Compact(keys)
}

// compareKeys orders keys by kind, namespace and name.
func compareKeys(a, b skydns.ObjectKey) int {
	return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// Resync enqueues every object and asks the publisher to compare everything
// again; a new leader calls it to write the status its predecessor left.
func (c *Controller) Resync(ctx context.Context) { c.resync(ctx) }

// Conflicts returns the number of hostname claims currently refused.
func (c *Controller) Conflicts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.book.tellings.hostnameConflicts()
}

// StatusWrites returns the number of Service status updates written.
func (c *Controller) StatusWrites() int64 { return c.statuses.writes.Load() }

// QueueLen returns the number of objects waiting to be synced.
func (c *Controller) QueueLen() int { return c.queue.Len() }

// resync enqueues every object and asks the publisher to compare everything again.
func (c *Controller) resync(context.Context) {
	for _, k := range c.cachedKeys() {
		c.queue.Add(k)
	}
	c.pub.Resync()
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem handles one key. A transient error requeues the key with
// backoff; a permanent one is logged and the key forgotten.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	out, err := c.sync(ctx, key)
	if err == nil {
		c.apply(out)
	}
	switch {
	case err == nil:
		c.queue.Forget(key)
	case isPermanent(err):
		c.cfg.Log.WithError(err).WithField("object", key.String()).Error("giving up on object")
		c.queue.Forget(key)
	default:
		c.cfg.Log.WithError(err).WithField("object", key.String()).Warn("sync failed; will retry")
		c.queue.AddRateLimited(key)
	}
	return true
}

// errPermanent marks errors that retrying cannot fix.
var errPermanent = errors.New("permanent")

func isPermanent(err error) bool { return errors.Is(err, errPermanent) }

// FailOpen returns the number of objects publishing all their addresses
// because none passes its health check.
func (c *Controller) FailOpen() int { return c.health.failingOpen() }

// event records an Event on the object of pub, unless another replica leads
// or this is a dry run.
func (c *Controller) event(pub *source.Publication, kind, reason, message string) {
	if c.cfg.DryRun || !c.cfg.Leading() {
		return
	}
	ref, ok := pub.Ref()
	if !ok {
		c.cfg.Log.WithField("object", pub.Source).Error("no Event for an object of an unknown kind")
		return
	}
	c.recorder.Event(ref, kind, reason, message)
}
