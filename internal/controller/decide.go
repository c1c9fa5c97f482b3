package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// loadedWait bounds how long the first full pass waits for the publisher's
// view of etcd (see Publisher.Loaded): etcd down at start delays it by that
// much, and its Events are then all sent.
const loadedWait = 2 * time.Second

// inputs are what a decision is made on: the keys of the objects, read fresh
// from the caches, and of the zones (zoneKey), whose nameservers are computed
// again; and the changes told by the prober and the publisher, whose Events
// say what changed.
type inputs struct {
	keys     []skydns.ObjectKey
	health   []health.Change
	verdicts []publish.Verdict
}

// decide is the one decision pipeline, of every change: one key from the work
// queue, every object in a full pass, a health change or the publisher's
// verdicts. For each object, its publication (from the caches), its health
// targets, its place in the index and its Service status; then, under mu,
// once for all of them, the records of the groups of names they touch, the
// PTR records, the zones' records, and the Events of the objects whose
// problems, names, health or claims changed. It reads the listers and updates
// the controller's bookkeeping; the caller applies the outcome, without mu.
// loaded are the digests of the records etcd held at start, by object, in the
// first pass (see Publisher.Loaded), nil in the others. Lock order
// everywhere: mu, then order.mu (see order), then the publisher's inbox (Set
// only sends: it never waits for a flush).
func (c *Controller) decide(in inputs, loaded map[string]uint64) (outcome, error) {
	keys := in.keys
	// About one probe and one Event for each object.
	out := outcome{
		events: make([]event, 0, len(keys)),
		probes: make([]probe, 0, len(keys)),
	}
	var zones *zoneInputs
	groups := make(map[string]time.Time) // group -> the earliest change observed in it
	// The stored names the objects publish, in each view, and the reverse
	// names of their addresses: one record of what is wanted each (a name's
	// SRV records are set with it).
	names := 0
	touched := make(map[string]bool, len(keys)) // by source
	for _, key := range keys {
		if key == zoneKey {
			zones = c.zoneInputs()
			continue
		}
		start := time.Now()
		src := key.String()
		touched[src] = true
		observed := c.observed.take(key)
		pub, obj, k, err := c.publication(key)
		if err != nil {
			return outcome{}, fmt.Errorf("sync %s: %w", key, err)
		}
		if pub != nil {
			names += len(pub.Names) * (1 + len(c.cfg.Source.Views))
			if len(c.cfg.ReverseZones) > 0 {
				names += len(pub.Addresses)
			}
		}
		c.checkHealth(&out, src, pub)
		c.mu.Lock()
		for _, g := range c.book.index.Update(src, pub) {
			if t, ok := groups[g]; !ok || t.IsZero() || !observed.IsZero() && observed.Before(t) {
				groups[g] = observed
			}
		}
		c.mu.Unlock()
		if obj != nil && k.statusOf != nil {
			k.statusOf(c, &out, obj, pub)
		}
		if c.cfg.ObserveReconcile != nil {
			c.cfg.ObserveReconcile(time.Since(start))
		}
	}
	// Room for every name at once: grown group by group, the slice would be
	// copied a dozen times over on a cold start. Counting each SRV name as
	// well, as when SRV records were set apart, made room for 32,000 at
	// 12,000 objects, 2.7 MB of 136-byte records left empty until the pass
	// was handed over.
	out.records = slices.Grow(out.records, names)
	if zones != nil {
		// Logged once mu is released.
		defer c.logZones(zones)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out.seq = c.order.begin()
	for _, ch := range in.health {
		c.healthLocked(&out, ch)
	}
	for _, v := range in.verdicts {
		if v.Share != nil {
			c.clusterShareLocked(&out, v.Stored, *v.Share, v.Was)
		} else {
			c.clusterClaimLocked(&out, v.Stored, *v.Claim)
		}
	}
	order := make([]string, 0, len(groups))
	for g := range groups {
		order = append(order, g)
	}
	slices.Sort(order)
	var earliest time.Time
	for _, g := range order {
		c.resolveLocked(&out, g, groups[g], touched)
		if t := groups[g]; !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	c.reverseLocked(&out, earliest)
	if zones != nil {
		c.zonesLocked(&out, zones)
	}
	if loaded != nil {
		out.unchanged = unchanged(loaded, out.records)
	}
	// What is told holds an entry for nearly every object: at a first pass
	// the maps are sized once rather than grown table by table.
	c.book.tellings.sizeFor(len(touched))
	if len(c.book.endpoints) == 0 {
		c.book.endpoints = make(map[string]endpointWatch, len(touched))
	}
	for s := range touched {
		c.reportLocked(&out, s)
	}
	return out, nil
}

// unchanged returns the objects whose records are those etcd held when the
// publisher loaded its view: loaded are their digests then (see
// publish.Publisher.Loaded), records what is wanted now, for every name.
func unchanged(loaded map[string]uint64, records []wanted) map[string]bool {
	now := make(map[string]uint64, len(loaded))
	for _, w := range records {
		for _, r := range w.want.Records {
			if _, ok := loaded[r.Source]; ok {
				now[r.Source] += r.Digest()
			}
		}
	}
	out := make(map[string]bool, len(now))
	for src, sum := range now {
		if loaded[src] == sum {
			out[src] = true
		}
	}
	return out
}

// sync decides what the current state of one object means (see decide).
func (c *Controller) sync(_ context.Context, key skydns.ObjectKey) (outcome, error) {
	return c.decide(inputs{keys: []skydns.ObjectKey{key}}, nil)
}

// publication reads an object from the caches and computes what it publishes;
// nil when the object is gone or publishes nothing. It also returns the
// object when its status follows its publication (see objectKind), and the
// entry of its kind.
func (c *Controller) publication(key skydns.ObjectKey) (*source.Publication, any, *objectKind, error) {
	k := c.kindOf(key.Kind)
	if k == nil {
		return nil, nil, nil, fmt.Errorf("kind %q not published: %w", key.Kind, errPermanent)
	}
	obj, exists, err := k.indexer.GetByKey(cache.NewObjectName(key.Namespace, key.Name).String())
	if err != nil || !exists {
		return nil, nil, k, err
	}
	pub, status, err := k.publication(c, obj)
	return pub, status, k, err
}

// resolveLocked resolves one group, adds its records to out and adds to
// touched the sources whose problems or published names may have changed.
func (c *Controller) resolveLocked(out *outcome, g string, observed time.Time, touched map[string]bool) {
	res := c.book.index.Resolve(g)
	out.records = slices.Grow(out.records, len(res.Records))
	for stored, records := range res.Records {
		w := publish.Want{Records: records, Shared: res.Shared[stored], Observed: observed}
		if cl, ok := res.Clusters[stored]; ok {
			w.Policy, w.Priority, w.Unhealthy = cl.Policy, cl.Priority, !cl.Healthy
		}
		c.setLocked(out, "", stored, w)
	}
	// The views: the same names, with their own addresses, and the apex
	// guard. The PTR records are the default view's alone.
	for _, v := range slices.Sorted(maps.Keys(res.Views)) {
		for stored, records := range res.Views[v] {
			c.setLocked(out, v, stored, publish.Want{Records: records, Observed: observed})
		}
	}
	c.book.tellings.resolved(g, res.Problems, res.Granted, touched)
}

// reverseLocked adds to out the PTR records whose choice the groups resolved
// since the last call changed.
func (c *Controller) reverseLocked(out *outcome, observed time.Time) {
	records, follows := c.book.index.Reverse()
	for name, recs := range records {
		out.records = append(out.records, wanted{stored: name, want: publish.Want{Records: recs, Follows: follows[name], Observed: observed}})
	}
}

// tellPublishedLocked adds to out a Normal Event when the names or addresses an
// object publishes change, so that kubectl describe shows what skylb did with it.
func (c *Controller) tellPublishedLocked(out *outcome, src string, pub *source.Publication) {
	names := c.book.tellings.names(src, c.book.index.GroupsOf(src))
	if len(names) == 0 {
		c.book.tellings.forgetPublished(src)
		return
	}
	slices.Sort(names)
	var addrs []string
	for _, a := range pub.Addresses {
		addrs = append(addrs, a.String())
	}
	if len(addrs) == 0 && len(pub.Targets) > 0 {
		addrs = []string{"CNAME " + pub.Targets[0]}
	}
	what := "no addresses yet"
	switch {
	case len(addrs) > 0:
		what = strings.Join(addrs, ", ")
	case slices.ContainsFunc(pub.Problems, func(p source.Problem) bool { return p.Reason == source.ReasonAddressRefused }):
		what = "no addresses: every address was refused (see AddressRefused)"
	case slices.ContainsFunc(pub.Problems, func(p source.Problem) bool { return p.Reason == source.ReasonInvalidExternalName }):
		what = "no CNAME: spec.externalName is not a host name (see InvalidExternalName)"
	}
	msg := "published " + strings.Join(names, ", ") + ": " + what
	if !c.book.tellings.published(src, msg) {
		return
	}
	if out.unchanged[src] {
		// Told by the skylb that published it, before this one started.
		return
	}
	out.event(pub, corev1.EventTypeNormal, "Published", msg)
}

// reportLocked adds to out a Warning Event for each problem of an object not
// told before.
func (c *Controller) reportLocked(out *outcome, src string) {
	pub := c.book.index.Publication(src)
	if pub == nil {
		c.book.tellings.forget(src)
		delete(c.book.endpoints, src)
		return
	}
	c.tellPublishedLocked(out, src, pub)
	current := c.holdNoEndpointsLocked(out, src, pub, slices.Clone(pub.Problems))
	current = append(current, c.book.tellings.problems(src, c.book.index.GroupsOf(src))...)
	for _, p := range c.book.tellings.report(src, current) {
		out.event(pub, corev1.EventTypeWarning, p.Reason, p.Message)
		c.cfg.Log.WithFields(logrus.Fields{"object": src, "reason": p.Reason}).Warn(p.Message)
	}
}
