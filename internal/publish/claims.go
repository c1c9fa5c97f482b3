package publish

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/arbitrate"
)

// clusterState is what a Publisher knows of the clusters sharing the etcd:
// their claims, the decisions on this cluster's, and who answers each shared
// name (see share.go).
type clusterState struct {
	claimsRev int64 // revision the claims are current at (the claims are in the names: name.claims)
	// below and foreignBelow index the claimed names beneath each ancestor:
	// all of them (nil until another cluster's claim is seen), and those
	// claimed by another cluster (see nested.go).
	below, foreignBelow map[string]nameSet
	verdicts            map[string]arbitrate.Decision // stored name -> last decision on its claim, unless a grant (name.granted)
	// told are the decisions made since the flush began, told
	// (Config.Verdicts) once its transactions are committed.
	told []Verdict
	// sharings are the last decisions on the shared names, and holds the
	// names waiting for their failback hold-down to end.
	sharings map[string]arbitrate.Sharing
	holds    map[string]hold
	// answered are the names whose Answers may have changed, not yet told
	// to the views (see Group).
	answered []string
}

// Clusters that share an etcd decide which of them publishes a name with
// claims, one key per cluster and stored name:
//
//	<ClaimPrefix>/<stored name>/<owner>  {"owner":"<owner>","shared":true}
//
// A cluster writes its claim in the transaction that first writes the name's
// records, and deletes it in the one that removes them; with RecordExpiry the
// claim carries the lease and the records it holds none: when it expires, the
// other clusters delete them (see sweep.go). arbitrate.Name decides from the
// claims: the earliest holds the name, later shared claims join a shared one,
// the others wait. arbitrate.Nested then refuses a name nested with another
// cluster's older claim (see nested.go). Every transaction that writes records
// of a name carries conditions that fail it when the claims it was decided on
// have changed:
//
//   - a new claim: no claim on the name or on one of its ancestors was
//     created after the claims were read, so two clusters claiming at once
//     cannot both win;
//   - any grant: the claims ranked before this cluster's, on the name and on
//     its ancestors, are unchanged, so a shared name its first holder makes
//     exclusive is not written.
//
// A refused transaction is retried once the watch has delivered the change,
// and is then decided again.

// claimEntry is one claim in the view.
type claimEntry struct {
	owner   string
	value   []byte
	shared  bool
	created int64 // etcd create revision; 0 for a dry run's
	modRev  int64
	lease   int64
	// share is the owner's part in answering a shared name (see share.go);
	// nil for a claim that is not shared.
	share *arbitrate.Member
}

// putClaimLocked records a claim in the view, replacing the owner's previous one.
func (p *Publisher) putClaimLocked(stored string, e claimEntry) {
	n := p.view.names[stored]
	if n == nil {
		n = newName(stored)
		p.view.names[stored] = n
	}
	i, found := slices.BinarySearchFunc(n.claims, e.owner, cmpOwner)
	if found {
		n.claims[i] = e
		return
	}
	hadAny, hadForeign := len(n.claims) > 0, p.foreignIn(n.claims)
	n.claims = slices.Insert(n.claims, i, e)
	p.indexClaimLocked(stored, hadAny, hadForeign)
}

// claimsLocked returns the claims on stored, sorted by owner.
func (p *Publisher) claimsLocked(stored string) []claimEntry {
	if n := p.view.names[stored]; n != nil {
		return n.claims
	}
	return nil
}

// removeClaimLocked drops owner's claim on stored from the view.
func (p *Publisher) removeClaimLocked(stored, owner string) {
	n := p.view.names[stored]
	if n == nil {
		return
	}
	i, found := slices.BinarySearchFunc(n.claims, owner, cmpOwner)
	if !found {
		return
	}
	hadForeign := p.foreignIn(n.claims)
	n.claims = slices.Delete(n.claims, i, i+1)
	if len(n.claims) == 0 {
		n.claims = nil
	}
	p.indexClaimLocked(stored, true, hadForeign)
}

// ownClaimLocked returns this cluster's claim on stored, or nil.
func (p *Publisher) ownClaimLocked(stored string) *claimEntry {
	return p.claimOfLocked(stored, p.cfg.Owner)
}

// claimOfLocked returns owner's claim on stored, or nil.
func (p *Publisher) claimOfLocked(stored, owner string) *claimEntry {
	if n := p.view.names[stored]; n != nil {
		return n.claimOf(owner)
	}
	return nil
}

func cmpOwner(e claimEntry, owner string) int { return strings.Compare(e.owner, owner) }

// claimPlan is what the claims decided for one name (claimLocked): whether
// this cluster writes the name's records, what keeps its claim as decided,
// and the conditions under which the transaction holds.
type claimPlan struct {
	// write says that the records may be written: nothing is claimed, or
	// the claim is granted and, on a shared name, this cluster serves it.
	write    bool
	claimPut []byte // the value of this cluster's claim, when written
	claimDel bool   // this cluster's claim is deleted
	// claimsRev, when not 0, is the revision of the claims the name was
	// decided on: the change holds only if no claim on the name was created
	// since. ranked are the claims that must be unchanged: those ranked
	// before this cluster's on the name, and older ones on its ancestors.
	claimsRev int64
	ranked    []rankedClaim
	above     []above // ancestors on which no claim may have been created (see nested.go)
	// handover is 1 when the change has this cluster start serving a shared
	// name it claimed before, -1 when it stops, 0 otherwise (see share.go).
	handover int8
}

// rankedClaim is another cluster's claim a change was decided on, on the
// name itself or on one of its ancestors.
type rankedClaim struct {
	name, owner string
	modRev      int64
}

// rank adds the condition that the claim e on stored is unchanged, once.
func (cp *claimPlan) rank(stored string, e claimEntry) {
	if !slices.ContainsFunc(cp.ranked, func(r rankedClaim) bool { return r.name == stored && r.owner == e.owner }) {
		cp.ranked = append(cp.ranked, rankedClaim{name: stored, owner: e.owner, modRev: e.modRev})
	}
}

// claimLocked decides this cluster's claim on the name n stored at stored,
// whose keys carry lease, records the decision (tellLocked, and the
// sharing's) and returns what it takes. A name held (see atname.go) is
// claimed as one whose records nobody wants.
func (p *Publisher) claimLocked(n *name, stored string, lease int64, held bool) claimPlan {
	if !p.codec.claiming() {
		return claimPlan{write: true}
	}
	own := p.ownClaimLocked(stored)
	if n.records == nil || n.unclaimed || held {
		p.tellLocked(stored, nil)
		p.forgetShareLocked(stored)
		// Records outside what this Publisher owns keep the name claimed.
		return claimPlan{write: true, claimDel: own != nil && !n.holdsOutside()}
	}
	claims := make([]arbitrate.Claim, 0, len(n.claims))
	for _, e := range n.claims {
		claims = append(claims, clusterClaim(e))
	}
	d := arbitrate.Decide(p.cfg.Owner, n.shared, claims, p.nestedLocked(stored, n))
	p.tellLocked(stored, &d)

	var (
		cp    claimPlan
		value []byte
	)
	serve := d.Granted
	switch {
	case n.share == nil:
		p.forgetShareLocked(stored)
		value = p.codec.encode(n.shared)
	case d.Granted:
		self := p.shareLocked(n, stored, &cp, own)
		serve = self.Serving
		value = p.codec.encodeShared(self)
	default:
		// Refused: it serves nothing, and says so.
		p.forgetShareLocked(stored)
		self := p.memberLocked(n, own, true)
		self.Serving = false
		value = p.codec.encodeShared(self)
	}
	if own == nil || !bytes.Equal(own.value, value) || own.lease != lease {
		cp.claimPut = value
	}
	if !d.Granted {
		return cp
	}
	if own == nil {
		// Nobody may have claimed the name since the claims were read.
		cp.claimsRev = p.clusters.claimsRev
	}
	ownCreated := int64(1<<63 - 1)
	if own != nil && own.created != 0 {
		ownCreated = own.created
	}
	p.rankOlderLocked(&cp, stored, ownCreated)
	p.nestedCmpsLocked(&cp, stored, own, ownCreated)
	cp.write = serve
	return cp
}

// rankOlderLocked adds to cp the other clusters' written claims on stored
// that are older than this cluster's (created at ownCreated): the change
// holds only while they are unchanged.
func (p *Publisher) rankOlderLocked(cp *claimPlan, stored string, ownCreated int64) {
	for _, e := range p.claimsLocked(stored) {
		if e.owner != p.cfg.Owner && e.created != 0 && e.created < ownCreated {
			cp.rank(stored, e)
		}
	}
}

// tellLocked remembers the decision on a name (nil: no longer claimed) and
// tells it (Config.Verdicts) when it changed. A grant is remembered in the name
// (name.granted), a refusal in verdicts with its holders: almost every name
// of a cluster is granted, and a map entry for each took 5 MiB of the heap at
// 32,000 names.
func (p *Publisher) tellLocked(stored string, d *arbitrate.Decision) {
	n := p.view.names[stored]
	old, had := p.verdictLocked(stored)
	if d == nil {
		if had {
			p.answeredLocked(stored, !old.Granted)
			p.follow.requeue(stored)
			delete(p.clusters.verdicts, stored)
			if n != nil {
				n.granted = false
			}
			if !old.Granted {
				p.count.refused.Add(-1)
			}
		}
		return
	}
	if !had || old.Granted != d.Granted {
		p.follow.requeue(stored)
	}
	if had && old.Granted == d.Granted && slices.Equal(old.Holders, d.Holders) && slices.Equal(old.Nested, d.Nested) &&
		slices.Equal(old.Outside, d.Outside) {
		return
	}
	if had && !old.Granted {
		p.count.refused.Add(-1)
	}
	if !d.Granted {
		p.count.refused.Add(1)
	}
	defer p.answeredLocked(stored, had && !old.Granted)
	if d.Granted && n != nil {
		delete(p.clusters.verdicts, stored)
		n.granted = true
	} else {
		p.clusters.verdicts[stored] = *d
		if n != nil {
			n.granted = false
		}
	}
	if had || !d.Granted {
		p.tellVerdictLocked(Verdict{Stored: stored, Claim: new(*d)})
	}
}

// verdictLocked returns the last decision on a name's claim, and false when
// none was made or it is no longer claimed.
func (p *Publisher) verdictLocked(stored string) (arbitrate.Decision, bool) {
	if n := p.view.names[stored]; n != nil && n.granted {
		return arbitrate.Decision{Granted: true}, true
	}
	d, ok := p.clusters.verdicts[stored]
	return d, ok
}

// tellVerdictLocked queues v, told at the end of the flush.
func (p *Publisher) tellVerdictLocked(v Verdict) {
	if p.cfg.Verdicts != nil {
		p.clusters.told = append(p.clusters.told, v)
	}
}

// loadClaims lists the claims at revision rev.
func (p *Publisher) loadClaims(ctx context.Context, rev int64) (map[string][]claimEntry, error) {
	claims := make(map[string][]claimEntry)
	_, err := p.listAt(ctx, p.codec.dir, rev, func(kv *mvccpb.KeyValue) {
		stored, owner, ok := p.codec.split(string(kv.Key))
		if !ok {
			return
		}
		// Keys come in order, so the owners of a name are sorted.
		claims[stored] = append(claims[stored], p.codec.fromKV(owner, kv))
	})
	return claims, err
}

// applyClaims hands the claims' watched events, up to revision rev, to the
// writer.
func (p *Publisher) applyClaims(events []*clientv3.Event, rev int64) {
	p.send(message{kind: msgClaims, events: events, rev: rev})
}

// applyClaimsLocked records watched changes of claims in the view and marks
// the names they concern.
func (p *Publisher) applyClaimsLocked(events []*clientv3.Event, rev int64) {
	for _, ev := range events {
		stored, owner, ok := p.codec.split(string(ev.Kv.Key))
		if !ok {
			continue
		}
		if owner == p.cfg.Owner {
			if own := p.ownClaimLocked(stored); own != nil && ev.Kv.ModRevision <= own.modRev {
				continue // a write of this Publisher's, already in the view
			}
		}
		if ev.Type == mvccpb.PUT {
			p.putClaimLocked(stored, p.codec.fromKV(owner, ev.Kv))
		} else {
			// Another cluster's leased claim gone: the records it held
			// may be left behind (sweep.go).
			if e := p.claimOfLocked(stored, owner); e != nil && e.lease != 0 && owner != p.cfg.Owner && p.work.active && !p.cfg.DryRun {
				p.sweeper.add(stored, owner)
			}
			p.removeClaimLocked(stored, owner)
		}
		// A name held only for other clusters' claims is marked once the
		// last of them goes, and dropped.
		if n := p.view.names[stored]; n != nil && (owner == p.cfg.Owner || !n.othersOnly(p.cfg.Owner)) && !p.work.sending.echo(ev) {
			p.markLocked(stored)
		}
		if owner != p.cfg.Owner {
			p.markNestedLocked(stored)
		}
	}
	p.clusters.claimsRev = max(p.clusters.claimsRev, rev)
}
