package publish

import (
	"slices"
	"sync"
	"time"
)

// work is the queue of dirty names: what a Publisher has left to write, and
// whether it writes. A name is marked dirty by whatever may change what it
// needs (a Set, a watched change, a claim, a lease, a full reconciliation);
// a flush takes the dirty names whole and decides each from what the table
// holds then, so a name marked twice is written once, as it is last.
type work struct {
	dirty    map[string]bool      // name -> marked by a change (true) or by a full reconciliation (false)
	since    map[string]time.Time // dirty name -> when its change was observed
	active   bool                 // it writes (see Config.Inactive)
	flushing bool                 // a flush is under way
	asked    bool                 // something was marked since the last flush (poke), which then syncs even with nothing dirty
	done     *sync.Cond           // signalled when a flush ends, and when messages were received
	wake     chan struct{}        // starts a flush
	sending  underWay             // the keys the transactions under way write (echo.go)
	closed   map[string]bool      // for a view, the names of the flush under way its Gate does not answer (gate.go)
}

// mark marks a name changed by an object or by someone editing etcd, and
// wakes the flush loop.
func (w *work) mark(stored string) {
	w.dirty[stored] = true
	w.poke()
}

// markFull marks a name for a full reconciliation, unless it is marked.
func (w *work) markFull(stored string) {
	if _, ok := w.dirty[stored]; !ok {
		w.dirty[stored] = false
	}
}

// markAgain marks a name a flush did not write dirty again: by a change
// (event) seen at observed, or by a full reconciliation.
func (w *work) markAgain(stored string, event bool, observed time.Time) {
	if _, ok := w.dirty[stored]; !ok {
		w.dirty[stored] = event
	}
	if _, ok := w.since[stored]; !ok && !observed.IsZero() {
		w.since[stored] = observed
	}
}

// observed keeps at, when it is earlier, as when the change behind stored
// was seen.
func (w *work) observed(stored string, at time.Time) {
	if t, ok := w.since[stored]; !at.IsZero() && (!ok || at.Before(t)) {
		w.since[stored] = at
	}
}

// idle reports whether nothing is left to write and no flush is under way.
func (w *work) idle() bool { return len(w.dirty) == 0 && !w.flushing }

// poke wakes the flush loop without blocking, to write what is marked.
func (w *work) poke() {
	w.asked = true
	w.wakeUp()
}

// wakeUp wakes the flush loop without blocking: to receive what was sent,
// or to retry.
func (w *work) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// queue is what a flush has left to decide. A flush decides each
// transaction's changes as a slot of the MaxTxnsInFlight transactions frees
// up, not all of them at first: a cold start changes every name, and the
// changes of 32,000 names (their keys, values and conditions) took 18 MiB of
// the heap until the last transaction was committed. The first transaction
// also leaves before the last name is compared.
type queue struct {
	names  []string             // to decide, in order
	marked map[string]bool      // the names marked dirty when the flush began: by a change (true) or by a full reconciliation
	since  map[string]time.Time // when the Kubernetes change behind a marked name was seen
	again  map[string]bool      // names queued again because the decision on the name they follow changed (see atname.go)
	ahead  []change             // changes decided ahead, when holding mass deletions needed all of them
	next   *change              // decided, and left out of the full batch before
}

// take starts a flush: it takes the dirty names.
func (w *work) take() *queue {
	q := &queue{marked: w.dirty, since: w.since, again: make(map[string]bool)}
	// New maps rather than cleared ones: a cleared map keeps the room of
	// every name a cold start or a full reconciliation marked.
	w.dirty, w.since = make(map[string]bool), make(map[string]time.Time)
	return q
}

// orderLocked puts the names of q in the order they are decided, and
// decides them all at once only when the deletions of a full reconciliation
// could exceed MaxDeleteRatio (see holdMassDeletionLocked).
func (q *queue) orderLocked(p *Publisher) {
	q.names = make([]string, 0, len(q.marked))
	for stored := range q.marked {
		q.names = append(q.names, stored)
	}
	slices.SortFunc(q.names, compareFromRight)
	// Names that follow another are decided after it (see atname.go), and
	// again when the decision on the name they follow changes.
	q.names = p.follow.last(q.names)
	if owned, may := p.mayDeleteTooManyLocked(q.marked); may {
		var all []change
		for c, ok := q.popLocked(p); ok; c, ok = q.popLocked(p) {
			all = append(all, c)
		}
		q.ahead = p.holdMassDeletionLocked(all, owned)
	}
}

// popLocked returns the next change to write, deciding names until one needs
// a change; false when none is left.
func (q *queue) popLocked(p *Publisher) (change, bool) {
	if q.next != nil {
		c := *q.next
		q.next = nil
		return c, true
	}
	if len(q.ahead) > 0 {
		c := q.ahead[0]
		q.ahead = q.ahead[1:]
		return c, true
	}
	for {
		if len(q.names) == 0 {
			for _, f := range p.follow.takeRequeued() {
				if _, ok := q.marked[f]; !ok && !q.again[f] {
					q.again[f] = true
					q.names = append(q.names, f)
				}
			}
			if len(q.names) == 0 {
				return change{}, false
			}
		}
		stored := q.names[0]
		q.names = q.names[1:]
		if _, asked := q.marked[stored]; !asked && p.cfg.Gate != nil {
			// A follower queued again, whose Gate was not asked: at the
			// next flush.
			p.work.markAgain(stored, false, time.Time{})
			continue
		}
		if c, ok := p.diffLocked(stored, q.marked[stored]); ok {
			c.observed = q.since[stored]
			if c.claimFirst(p.txnOps()) {
				p.work.markAgain(stored, c.event, c.observed)
			}
			return c, true
		}
	}
}

// claimFirst leaves of c only its claim when the claim and the records would
// not fit in one transaction of maxOps operations (every address of a name
// replaced as its claim changes), and reports whether it did: the claim is
// written first, alone, and the records by the next flush, where the claim
// is as wanted.
func (c *change) claimFirst(maxOps int) bool {
	keys := len(c.puts) + len(c.dels)
	if c.claimPut == nil || keys == 0 || keys+1 <= maxOps {
		return false
	}
	c.keyChange = keyChange{}
	return true
}

// fillLocked returns the next transaction's changes, empty when none is
// left.
func (q *queue) fillLocked(p *Publisher, b *batcher) []change {
	for {
		c, ok := q.popLocked(p)
		if !ok {
			break
		}
		if !b.add(c) {
			q.next = &c
			break
		}
	}
	return b.take()
}

// requeueLocked marks what the queue has left dirty again, as it was, after
// a failed transaction stopped the flush.
func (q *queue) requeueLocked(p *Publisher) {
	var left []change
	if q.next != nil {
		left = append(left, *q.next)
	}
	p.requeueLocked(append(left, q.ahead...))
	for _, stored := range append(q.names, p.follow.takeRequeued()...) {
		p.work.markAgain(stored, q.marked[stored], q.since[stored])
	}
	q.names, q.ahead, q.next = nil, nil, nil
}
