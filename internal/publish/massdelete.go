package publish

import (
	"slices"

	"github.com/sirupsen/logrus"
)

// mayDeleteTooManyLocked reports whether a flush of the names marked (by a
// change, or by a full reconciliation) could delete more than MaxDeleteRatio
// of skylb's records: only then are its changes decided all at once, for
// holdMassDeletionLocked to count their deletions. It also returns the number
// of records skylb owns, which that compares the deletions with.
func (p *Publisher) mayDeleteTooManyLocked(marked map[string]bool) (owned int, may bool) {
	full := false
	for _, event := range marked {
		full = full || !event
	}
	if !full {
		return 0, false
	}
	owned, bound := p.ownedLocked(marked)
	if owned <= minOwnedForRatio || float64(bound) <= p.cfg.MaxDeleteRatio*float64(owned) {
		// Not even deleting every key of the names a full reconciliation
		// marked could exceed the ratio; a cold start owns nothing yet.
		p.count.held.Store(0)
		return owned, false
	}
	return owned, true
}

// ownedLocked returns the number of records skylb owns, and how many of them
// are of names a full reconciliation marked.
func (p *Publisher) ownedLocked(marked map[string]bool) (owned, bound int) {
	for stored, n := range p.view.names {
		event, ok := marked[stored]
		for _, e := range n.actual {
			if !e.deleted && !e.outside {
				owned++
				if ok && !event {
					bound++
				}
			}
		}
	}
	return owned, bound
}

// holdMassDeletionLocked drops the deletions of a full reconciliation when they
// exceed MaxDeleteRatio of skylb's records: an empty listing or a mistaken RBAC
// change must not empty the zone. Writes go ahead; the next full
// reconciliation looks again. owned is the number of records skylb owns.
func (p *Publisher) holdMassDeletionLocked(changes []change, owned int) []change {
	deletes := 0
	for _, c := range changes {
		if !c.event {
			deletes += len(c.dels)
		}
	}
	if deletes == 0 || owned <= minOwnedForRatio || float64(deletes) <= p.cfg.MaxDeleteRatio*float64(owned) {
		p.count.held.Store(0)
		return changes
	}
	p.count.held.Store(int64(deletes))
	p.cfg.Log.WithFields(logrus.Fields{"deletes": deletes, "owned": owned, "max_delete_ratio": p.cfg.MaxDeleteRatio}).
		Error("full reconciliation would delete too many records; holding the deletions (run once with a higher --max-delete-ratio to allow them)")
	kept := changes[:0]
	for _, c := range changes {
		if !c.event && (len(c.dels) > 0 || c.claimDel) {
			c.dels, c.removed, c.claimDel = nil, nil, false
			c.guards = slices.DeleteFunc(c.guards, func(g keyCond) bool {
				return !slices.ContainsFunc(c.puts, func(w want) bool { return w.key == g.key })
			})
			if ops, _ := c.counts(); ops == 0 {
				continue
			}
		}
		kept = append(kept, c)
	}
	return kept
}
