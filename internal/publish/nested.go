package publish

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/arbitrate"
)

// A name is also refused while another cluster holds a name nested with it by
// an older claim (arbitrate.Nested): CoreDNS would add the younger one's
// records to the answers of the older one's name, or the other way round.
//
// Deciding looks at the claims on the name's ancestors, one map lookup per
// label, and at the other clusters' claims beneath it through an index of
// ancestor -> descendants, so a decision costs the depth of the name and the
// foreign names beneath it, never the number of claims.
//
// A new claim is written with conditions that no claim was created on any of
// its ancestors since the claims were read, as for the name itself: a cluster
// cannot land beneath a name claimed at the same moment. Names beneath it
// cannot be checked that way (they are stored forward, so they share no key
// prefix), so a race with a descendant is settled by the watch: both clusters
// may publish for a moment, until each has read the other's claim; then the
// younger claim's cluster withdraws its records. Both decide on the claims'
// create revisions, which never change while the claims exist, so they agree
// and the outcome does not flap.

// nameSet is a set of stored names.
type nameSet map[string]struct{}

// indexClaimLocked records in the indexes of names beneath an ancestor that
// stored has claims (any) and claims of other clusters (foreign), or no longer
// has them. The index of all claimed names serves only to find this cluster's
// names beneath another cluster's claim, so a cluster alone in its etcd never
// builds it: it is built when the first claim of another cluster is seen.
func (p *Publisher) indexClaimLocked(stored string, hadAny, hadForeign bool) {
	list := p.claimsLocked(stored)
	hasAny, hasForeign := len(list) > 0, p.foreignIn(list)
	if hasForeign != hadForeign {
		updateBelow(p.clusters.foreignBelow, stored, hasForeign)
	}
	switch {
	case p.clusters.below == nil && hasForeign:
		p.buildBelowLocked()
	case p.clusters.below != nil && hasAny != hadAny:
		updateBelow(p.clusters.below, stored, hasAny)
	}
}

// updateBelow adds stored to, or removes it from, the set of every ancestor.
func updateBelow(index map[string]nameSet, stored string, add bool) {
	for a := range arbitrate.Ancestors(stored) {
		set := index[a]
		if add {
			if set == nil {
				set = make(nameSet)
				index[a] = set
			}
			set[stored] = struct{}{}
			continue
		}
		delete(set, stored)
		if len(set) == 0 {
			delete(index, a)
		}
	}
}

// reindexClaimsLocked builds the indexes of names beneath an ancestor from the
// claims, after they were loaded.
func (p *Publisher) reindexClaimsLocked() {
	p.clusters.below, p.clusters.foreignBelow = nil, make(map[string]nameSet)
	foreign := false
	for stored, n := range p.view.names {
		if p.foreignIn(n.claims) {
			updateBelow(p.clusters.foreignBelow, stored, true)
			foreign = true
		}
	}
	if foreign {
		p.buildBelowLocked()
	}
}

// buildBelowLocked indexes every claimed name beneath its ancestors.
func (p *Publisher) buildBelowLocked() {
	p.clusters.below = make(map[string]nameSet)
	for stored, n := range p.view.names {
		if len(n.claims) > 0 {
			updateBelow(p.clusters.below, stored, true)
		}
	}
}

// foreignIn reports whether a name's claims include another cluster's.
func (p *Publisher) foreignIn(list []claimEntry) bool {
	return len(list) > 1 || len(list) == 1 && list[0].owner != p.cfg.Owner
}

// nestedLocked returns the other clusters' claims on the names nested with
// stored, which this cluster wants as n.
func (p *Publisher) nestedLocked(stored string, n *name) []arbitrate.NestedClaim {
	var out []arbitrate.NestedClaim
	for a := range arbitrate.Ancestors(stored) {
		for _, e := range p.claimsLocked(a) {
			if e.owner != p.cfg.Owner {
				joint := e.shared && p.sharesLocked(a)
				out = append(out, arbitrate.NestedClaim{Claim: clusterClaim(e), Joint: joint})
			}
		}
	}
	for d := range p.clusters.foreignBelow[stored] {
		for _, e := range p.claimsLocked(d) {
			if e.owner != p.cfg.Owner {
				joint := n.shared && p.sharedByLocked(stored, e.owner)
				out = append(out, arbitrate.NestedClaim{Claim: clusterClaim(e), Joint: joint})
			}
		}
	}
	return out
}

// sharesLocked reports whether this cluster's objects publish stored and
// share it with other clusters.
func (p *Publisher) sharesLocked(stored string) bool {
	n := p.view.names[stored]
	return n != nil && n.records != nil && n.shared && !n.unclaimed
}

// sharedByLocked reports whether owner claims stored as shared.
func (p *Publisher) sharedByLocked(stored, owner string) bool {
	e := p.claimOfLocked(stored, owner)
	return e != nil && e.shared
}

// nestedCmpsLocked adds to cp the conditions under which the granted name
// stored may be written as far as its ancestors go: for a new claim, no claim
// created on an ancestor since the claims were read (left in cp.above, so
// that a batch asks about each ancestor once); for any, the older ancestor
// claims it joined beneath are unchanged. ownCreated is the revision of own,
// the name's own claim, as claimLocked ranks it.
func (p *Publisher) nestedCmpsLocked(cp *claimPlan, stored string, own *claimEntry, ownCreated int64) {
	if own == nil {
		cp.above = make([]above, 0, strings.Count(stored, "."))
	}
	for a := range arbitrate.Ancestors(stored) {
		if own == nil {
			if since, ok := p.sinceAboveLocked(a); ok {
				cp.above = append(cp.above, above{name: a, since: since})
			}
		}
		p.rankOlderLocked(cp, a, ownCreated)
	}
}

// above is the condition that no claim was created on an ancestor after
// revision since.
type above struct {
	name  string
	since int64
}

// sinceAboveLocked returns the revision after which no claim may have been
// created on the ancestor a for a new claim beneath it to be written. It is
// the revision the claims were read at, or this cluster's own claim on a when
// that is younger: the transaction that granted it made sure no other was
// created on a before it, and this cluster's own claim must not fail the
// condition. While this cluster's claim on a is still to be written, perhaps
// in a transaction running beside this one, a is not asked about (false);
// that claim's own condition guards a, and a name beneath a that another
// cluster wins withdraws through the watch.
func (p *Publisher) sinceAboveLocked(a string) (int64, bool) {
	if own := p.ownClaimLocked(a); own != nil {
		return max(p.clusters.claimsRev, own.created), true
	}
	if n := p.view.names[a]; n != nil && n.records != nil && !n.unclaimed {
		return 0, false
	}
	return p.clusters.claimsRev, true
}

// aboveCmps returns the conditions that no claim was created on the ancestors
// the changes ask about since the claims were read, one per ancestor.
func (p *Publisher) aboveCmps(batch []change) []clientv3.Cmp {
	since := make(map[string]int64)
	for _, c := range batch {
		for _, a := range c.above {
			if s, ok := since[a.name]; !ok || a.since < s {
				since[a.name] = a.since
			}
		}
	}
	out := make([]clientv3.Cmp, 0, len(since))
	for a, s := range since {
		out = append(out, clientv3.Compare(clientv3.CreateRevision(p.codec.nameDir(a)), "<", s+1).WithPrefix())
	}
	return out
}

// markNestedLocked marks this cluster's names nested with stored, whose
// claims by another cluster changed.
func (p *Publisher) markNestedLocked(stored string) {
	for a := range arbitrate.Ancestors(stored) {
		if n := p.view.names[a]; n != nil && !n.othersOnly(p.cfg.Owner) {
			p.markLocked(a)
		}
	}
	p.markBelowLocked(stored)
}

// markBelowLocked marks this cluster's names beneath stored.
func (p *Publisher) markBelowLocked(stored string) {
	for d := range p.clusters.below[stored] {
		if n := p.view.names[d]; n != nil && !n.othersOnly(p.cfg.Owner) {
			p.markLocked(d)
		}
	}
}

func clusterClaim(e claimEntry) arbitrate.Claim {
	return arbitrate.Claim{Owner: e.owner, Shared: e.shared, Created: e.created}
}
