package controller

import (
	"sync"
	"time"

	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// outcome is what a sync decided: the records to hand to the publisher, the
// Events to send, the targets to probe, the Service status to write and the
// objects to sync again later. The decision reads the listers and the
// controller's own bookkeeping; apply alone carries it out.
type outcome struct {
	records []wanted
	events  []event
	probes  []probe
	status  []status
	requeue []requeue
	// seq is the decision's place among the decisions of records (see
	// order); 0 when it decided no records.
	seq uint64
	// unchanged are, in the first full pass, the objects whose records
	// etcd held already as decided: their Published Event is not sent
	// again.
	unchanged map[string]bool
}

// wanted is what is wanted at one stored name, in the default view or in
// the view named.
type wanted struct {
	view   string
	stored string
	want   publish.Want
}

// event is an Event to send on an object: the object's publication, which
// is replaced when the object changes, never modified. Its reference is
// built as the Event is sent rather than with the decision: a first pass
// decides an Event for every object, and their references took 1.3 MB of
// the heap at 12,000 objects until the last was sent.
type event struct {
	pub                   *source.Publication
	kind, reason, message string
}

// probe is the health targets one object wants probed; none stops probing it.
type probe struct {
	source  string
	targets []health.Target
}

// status is an object whose status is to be written. What it is written is
// worked out by its kind's writer from the object and its publication as
// they are when it writes (serviceStatus for a Service), so that a status
// decided before a later change is never written after it.
type status struct {
	key skydns.ObjectKey
}

// requeue is an object to sync again after a while.
type requeue struct {
	key   skydns.ObjectKey
	after time.Duration
}

func (o *outcome) event(pub *source.Publication, kind, reason, message string) {
	o.events = append(o.events, event{pub: pub, kind: kind, reason: reason, message: message})
}

// apply carries out an outcome: records to the publisher, in the order they
// were decided, Events to the recorder unless another replica leads or this
// is a dry run, targets to the prober, status to the status queue while
// leading, and requeued keys to the queue.
func (c *Controller) apply(out outcome) {
	c.order.hand(out.seq, out.records, c.pub.Set)
	for _, p := range out.probes {
		c.health.prober.Want(p.source, p.targets)
	}
	for _, e := range out.events {
		c.event(e.pub, e.kind, e.reason, e.message)
	}
	if len(out.status) > 0 && c.cfg.Leading() {
		for _, s := range out.status {
			c.statuses.queue.Add(s.key)
		}
	}
	for _, r := range out.requeue {
		if r.after <= 0 {
			c.enqueue(r.key)
			continue
		}
		c.queue.AddAfter(r.key, r.after)
	}
}

// order hands decided records to the publisher in the order they were
// decided. Decisions are made under Controller.mu and applied after it is
// released, so two workers resolving the same group could otherwise hand
// their records over in the wrong order, the older last. Lock order:
// Controller.mu, then order.mu, then the publisher's inbox.
type order struct {
	mu       sync.Mutex
	next     uint64
	inFlight int // decisions made and not yet handed over
	// last holds, by stored name, the decision last handed over, while any
	// decision is in flight: one older than it is not handed over.
	last map[string]uint64
}

// begin numbers a decision of records; it is called with Controller.mu held,
// and the decision is handed over with hand.
func (o *order) begin() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	o.inFlight++
	return o.next
}

// hand gives the records of decision seq to set, but for the stored names a
// later decision has set already. Decision 0 (none) hands nothing.
func (o *order) hand(seq uint64, records []wanted, set func(view, stored string, w publish.Want)) {
	if seq == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// With no other decision in flight, none older can come after this one:
	// there is nothing to note (the first full pass hands over every name
	// at once).
	note := o.inFlight > 1
	if note && o.last == nil {
		o.last = make(map[string]uint64)
	}
	for _, r := range records {
		if o.last[r.stored] > seq {
			continue
		}
		if note {
			o.last[r.stored] = seq
		}
		set(r.view, r.stored, r.want)
	}
	if o.inFlight--; o.inFlight == 0 {
		// No older decision can come any more; a new map rather than a
		// cleared one, which would keep the room of every name noted.
		o.last = nil
	}
}
