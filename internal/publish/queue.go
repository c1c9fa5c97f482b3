package publish

import (
	"slices"
	"time"
)

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

// takeDirtyLocked starts a flush: it takes the dirty names.
func (p *Publisher) takeDirtyLocked() *queue {
	q := &queue{marked: p.work.dirty, since: p.work.since, again: make(map[string]bool)}
	// New maps rather than cleared ones: a cleared map keeps the room of
	// every name a cold start or a full reconciliation marked.
	p.work.dirty, p.work.since = make(map[string]bool), make(map[string]time.Time)
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
	q.names = p.followersLastLocked(q.names)
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
			for _, f := range p.follow.refollow {
				if _, ok := q.marked[f]; !ok && !q.again[f] {
					q.again[f] = true
					q.names = append(q.names, f)
				}
			}
			p.follow.refollow = p.follow.refollow[:0]
			if len(q.names) == 0 {
				return change{}, false
			}
		}
		stored := q.names[0]
		q.names = q.names[1:]
		if _, asked := q.marked[stored]; !asked && p.cfg.Gate != nil {
			// A follower queued again, whose Gate was not asked: at the
			// next flush.
			p.markAgainLocked(stored, false, time.Time{})
			continue
		}
		if c, ok := p.diffLocked(stored, q.marked[stored]); ok {
			c.observed = q.since[stored]
			if c.claimFirst(p.txnOps()) {
				p.markAgainLocked(stored, c.event, c.observed)
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
	for _, stored := range append(q.names, p.follow.refollow...) {
		p.markAgainLocked(stored, q.marked[stored], q.since[stored])
	}
	p.follow.refollow = p.follow.refollow[:0]
	q.names, q.ahead, q.next = nil, nil, nil
}
