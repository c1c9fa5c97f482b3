package controller

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/internal/zone"
)

// ZoneConfig configures the records skylb keeps for each zone itself: the
// zone's nameservers and the apex guard (see package zone).
type ZoneConfig struct {
	// Nameservers are the DNS servers of the zones given on the command line.
	Nameservers []zone.Static
	// NameserverSelector selects the Services of the zones' DNS server: the
	// nodes running their ready endpoints are nameservers too. Nil selects none.
	NameserverSelector labels.Selector
}

// zoneKey is the key under which a change of the nameservers' sources is
// remembered as observed; it is no object's, having no namespace.
var zoneKey = skydns.ObjectKey{Kind: "zone", Name: "nameservers"}

// zoneState is what the controller keeps for the zone records, guarded by
// Controller.mu.
type zoneState struct {
	cfg      ZoneConfig
	zones    []string
	apexZone map[string]string                     // apex stored name -> its zone
	granted  map[string]map[string][]skydns.Record // view ("" the default) -> apex stored name -> records the claim index granted there
	ns       []zone.Nameserver                     // nameservers published
	refused  []netip.Addr                          // addresses found but refused by the filter
	synced   bool                                  // the nameservers were computed once
}

func newZoneState(cfg *ZoneConfig, zones []string) *zoneState {
	if cfg == nil {
		return nil
	}
	z := &zoneState{
		cfg:      *cfg,
		zones:    zones,
		apexZone: make(map[string]string, len(zones)),
		granted:  make(map[string]map[string][]skydns.Record),
	}
	for _, zn := range zones {
		z.apexZone[skydns.ApexName(zn)] = zn
	}
	return z
}

// setLocked adds to out the records of a stored name in a view ("" the
// default one). The apex of a zone gets the guard when no object publishes
// records there, in every view; every cluster keeps its own guard, so it is
// not claimed.
func (c *Controller) setLocked(out *outcome, view, stored string, w publish.Want) {
	if z := c.zone; z != nil {
		if zn, ok := z.apexZone[stored]; ok {
			if len(w.Records) == 0 {
				delete(z.granted[view], stored)
				w.Unclaimed = true
			} else {
				if z.granted[view] == nil {
					z.granted[view] = make(map[string][]skydns.Record)
				}
				z.granted[view][stored] = w.Records
			}
			w.Records = zone.Apex(zn, w.Records, c.cfg.Source.TTL)
		}
	}
	out.records = append(out.records, wanted{view: view, stored: stored, want: w})
}

// Nameservers returns the number of nameservers published for each zone; nil
// when skylb keeps no zone records.
func (c *Controller) Nameservers() map[string]int {
	if c.zone == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.zone.zones))
	for _, zn := range c.zone.zones {
		out[zn] = len(c.zone.ns)
	}
	return out
}

// wakeZones queues the zones, whose nameservers are computed again.
func (c *Controller) wakeZones() { c.enqueue(zoneKey) }

// handleNameservers wakes the nameserver computation when a Service the
// selector selects, one of its EndpointSlices or a Node changes.
func (c *Controller) handleNameservers(svcs, slices_, nodes informerSet) {
	sel := c.zone.cfg.NameserverSelector
	if sel == nil {
		return
	}
	selected := func(objs ...any) bool {
		for _, obj := range objs {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			switch o := obj.(type) {
			case *corev1.Service:
				if sel.Matches(labels.Set(o.Labels)) {
					return true
				}
			case *discoveryv1.EndpointSlice:
				name := o.Labels[discoveryv1.LabelServiceName]
				if name == "" {
					continue
				}
				// The EndpointSlice controller copies the Service's labels to
				// its slices; the Service itself may be gone already.
				if sel.Matches(labels.Set(o.Labels)) {
					return true
				}
				if svc, err := c.caches.services.Services(o.Namespace).Get(name); err == nil && sel.Matches(labels.Set(svc.Labels)) {
					return true
				}
			}
		}
		return false
	}
	onChange := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.wakeIf(selected(obj)) },
		UpdateFunc: func(oldObj, newObj any) { c.wakeIf(selected(oldObj, newObj)) },
		DeleteFunc: func(obj any) { c.wakeIf(selected(obj)) },
	}
	for _, inf := range []informerSet{svcs, slices_} {
		if _, err := inf.addEventHandler(onChange); err != nil {
			panic(fmt.Sprintf("add nameserver event handler: %v", err))
		}
	}
	types := c.cfg.Source.NodeAddressTypes
	if _, err := nodes.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.wakeZones() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			c.wakeIf(!ok1 || !ok2 || source.NodeUsable(o) != source.NodeUsable(n) ||
				!slices.Equal(source.NodeAddresses(o, types), source.NodeAddresses(n, types)))
		},
		DeleteFunc: func(any) { c.wakeZones() },
	}); err != nil {
		panic(fmt.Sprintf("add nameserver Node event handler: %v", err))
	}
}

func (c *Controller) wakeIf(b bool) {
	if b {
		c.wakeZones()
	}
}

// zoneInputs is what the zones' records are decided from: the nameservers,
// and the addresses refused by the filter.
type zoneInputs struct {
	observed time.Time
	ns       []zone.Nameserver
	refused  []netip.Addr
	// changed and refusedChanged say, once decided, what to log.
	changed, refusedChanged bool
}

// zoneInputs computes the nameservers from the caches, for decide.
func (c *Controller) zoneInputs() *zoneInputs {
	z := c.zone
	if z == nil {
		return nil
	}
	in := &zoneInputs{observed: c.observed.take(zoneKey)}
	var found []netip.Addr
	if z.cfg.NameserverSelector != nil {
		found, in.refused = c.caches.builder.NameserverAddresses(z.cfg.NameserverSelector)
	}
	in.ns = zone.Assign(z.cfg.Nameservers, found)
	return in
}

// zonesLocked adds to out the records of every zone, its nameservers and its
// apex, in every view. It is called by decide, under mu.
func (c *Controller) zonesLocked(out *outcome, in *zoneInputs) {
	z := c.zone
	in.changed = !z.synced || !slices.Equal(in.ns, z.ns)
	in.refusedChanged = !slices.Equal(in.refused, z.refused)
	z.ns, z.refused, z.synced = in.ns, in.refused, true
	// The zones' records are the same in every view but for what the
	// view's objects publish at the apex.
	for _, view := range append([]string{""}, source.ViewNames(c.cfg.Source.Views)...) {
		granted := z.granted[view]
		for stored, records := range zone.Records(z.zones, in.ns, c.cfg.Source.TTL, granted) {
			_, apex := z.apexZone[stored]
			out.records = append(out.records, wanted{view: view, stored: stored, want: publish.Want{
				Records: records, Unclaimed: apex && len(granted[stored]) == 0, Observed: in.observed,
			}})
		}
	}
}

// logZones logs what a decision of the zones changed: the nameservers, with
// a warning for a zone with fewer than two, and the addresses refused.
func (c *Controller) logZones(in *zoneInputs) {
	if in.refusedChanged && len(in.refused) > 0 {
		var s []string
		for _, a := range in.refused {
			s = append(s, a.String())
		}
		c.cfg.Log.WithField("addresses", strings.Join(s, ",")).
			Warn("nameserver addresses found by --nameserver-selector are not published: they are denied by --denied-cidrs or not in --allowed-cidrs")
	}
	if !in.changed {
		return
	}
	var list []string
	for _, n := range in.ns {
		list = append(list, n.Label+"="+n.Addr.String())
	}
	c.cfg.Log.WithFields(logrus.Fields{"zones": c.zone.zones, "nameservers": list}).Info("nameservers of the zones")
	for _, zn := range c.zone.zones {
		if msg := zone.Warning(zn, in.ns); msg != "" {
			c.cfg.Log.WithField("zone", zn).Warn(msg)
		}
	}
}
