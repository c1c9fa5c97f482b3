package publish

import (
	"slices"
	"time"

	"github.com/skylb/skylb/internal/arbitrate"
)

// The clusters that share a name decide together which of them answer it
// (arbitrate.Share). Each publishes what that takes in its claim on the name,
// beside "shared":
//
//	{"owner":"east","shared":true,"policy":"failover","priority":10,
//	 "healthy":true,"since":"2025-01-02T03:04:05Z","serving":true}
//
// policy and priority are those its objects ask for; healthy is its verdict
// on its addresses for the name (at least one passes its health checks, and
// the cluster may publish the name: no other cluster holds a name above or
// beneath it), since the time that verdict last changed, on its own clock;
// serving says
// that its records of the name are in etcd. A cluster writes serving in the
// transaction that writes or deletes its records, so the claims always say
// who answers. Each cluster decides from the same claims and reaches the same
// answer; a cluster stops serving only while another one that answers by the
// policy serves (make before break), and every transaction that writes a
// shared name's records or claim holds only while the other members' claims
// are unchanged since they were read, so two clusters deciding at the same
// moment on each other's claims cannot both commit: the second is refused,
// reads the first one's claim from its watch and decides again.
//
// A claim written by a version of skylb that publishes no verdict counts as
// healthy and serving, as that version always serves.

// shareState is how this cluster takes part in a shared name.
type shareState struct {
	policy   arbitrate.Policy
	priority int
	healthy  bool
	// since is when healthy last changed here; the claim's own since is
	// kept while the claim says the same (see memberLocked).
	since time.Time
}

// setShareLocked records how this cluster takes part in the shared name n
// as w asks, and reports whether that changed. since moves when the verdict
// does.
func setShareLocked(n *name, w Want, now time.Time) bool {
	if !w.Shared || w.Unclaimed {
		changed := n.share != nil
		n.share = nil
		return changed
	}
	s := shareState{policy: w.Policy, priority: w.Priority, healthy: !w.Unhealthy}
	if s.policy == "" {
		s.policy = arbitrate.Balanced
	}
	if n.share == nil || n.share.healthy != s.healthy {
		s.since = now.UTC().Truncate(time.Second)
	} else {
		s.since = n.share.since
	}
	changed := n.share == nil || *n.share != s
	n.share = &s
	return changed
}

// memberLocked returns this cluster as a member sharing stored: its state,
// and serving as its claim says. A cluster refused the name (another cluster
// holds a name above or beneath it) cannot answer it, and says it is not
// healthy, so that the others do not wait for it. The verdict's since is the
// claim's while the claim holds the same verdict, so that a restart rewrites
// nothing and the hold-down counts from the verdict the other clusters saw.
func (p *Publisher) memberLocked(n *name, own *claimEntry, refused bool) arbitrate.Member {
	m := arbitrate.Member{
		Owner: p.cfg.Owner, Policy: n.share.policy, Priority: n.share.priority,
		Healthy: n.share.healthy && !refused, Since: n.share.since,
	}
	if m.Healthy != n.share.healthy {
		m.Since = time.Now().UTC().Truncate(time.Second)
	}
	if own != nil && own.share != nil {
		m.Serving = own.share.Serving
		if own.share.Healthy == m.Healthy && !own.share.Since.IsZero() {
			m.Since = own.share.Since
		}
	}
	return m
}

// shareLocked decides whether this cluster serves the shared name n, stored
// at stored, among the other clusters' shared claims on it, and adds to cp
// the condition that their claims are unchanged, and whether it starts or
// stops serving. It returns the member this cluster is, with Serving as
// decided.
func (p *Publisher) shareLocked(n *name, stored string, cp *claimPlan, own *claimEntry) arbitrate.Member {
	self := p.memberLocked(n, own, false)
	members := []arbitrate.Member{self}
	for _, e := range n.claims {
		if e.owner == p.cfg.Owner || e.share == nil {
			continue
		}
		members = append(members, *e.share)
		if e.created != 0 {
			cp.rank(stored, e)
		}
	}
	s := arbitrate.Share(p.cfg.Owner, members, time.Now(), p.cfg.FailbackHoldDown)
	p.holdLocked(stored, s.HeldUntil)
	p.tellShareLocked(stored, s)
	self.Serving = s.Serve
	if own != nil {
		cp.handover = handover(own.share, &self)
	}
	return self
}

// holdLocked has the name decided again once its hold-down ends; a zero
// time cancels that.
func (p *Publisher) holdLocked(stored string, until time.Time) {
	t, ok := p.clusters.holds[stored]
	switch {
	case ok && t.until.Equal(until):
		return
	case ok:
		t.timer.Stop()
		delete(p.clusters.holds, stored)
	}
	if until.IsZero() {
		return
	}
	timer := time.AfterFunc(time.Until(until), func() {
		p.send(message{kind: msgHoldEnd, stored: stored, at: until})
	})
	p.clusters.holds[stored] = hold{until: until, timer: timer}
}

// holdEndedLocked marks stored once its hold-down, until until, ended.
func (p *Publisher) holdEndedLocked(stored string, until time.Time) {
	if h, ok := p.clusters.holds[stored]; ok && h.until.Equal(until) {
		delete(p.clusters.holds, stored)
	}
	if n := p.view.names[stored]; n != nil && !n.othersOnly(p.cfg.Owner) {
		p.markLocked(stored)
	}
}

// hold is a name waiting for its hold-down to end.
type hold struct {
	until time.Time
	timer *time.Timer
}

// tellShareLocked remembers the sharing decided for a name and tells it
// (Config.Verdicts) when it changed, or when it is the first and this cluster does not
// serve or the clusters disagree.
func (p *Publisher) tellShareLocked(stored string, s arbitrate.Sharing) {
	old, had := p.clusters.sharings[stored]
	if had && sameSharing(old, s) {
		return
	}
	if had && !old.Serve {
		p.count.standby.Add(-1)
	}
	if !s.Serve {
		p.count.standby.Add(1)
	}
	p.clusters.sharings[stored] = s
	p.answeredLocked(stored, had && !old.Serve)
	if had || !s.Serve || s.Disagree {
		v := Verdict{Stored: stored, Share: &s}
		if had {
			v.Was = &old
		}
		p.tellVerdictLocked(v)
	}
}

// forgetShareLocked drops what was decided on a name that is no longer
// shared, or no longer claimed.
func (p *Publisher) forgetShareLocked(stored string) {
	old, had := p.clusters.sharings[stored]
	if !had {
		return
	}
	if !old.Serve {
		p.count.standby.Add(-1)
		p.answeredLocked(stored, true)
	}
	delete(p.clusters.sharings, stored)
	p.holdLocked(stored, time.Time{})
}

func sameSharing(a, b arbitrate.Sharing) bool {
	return a.Policy == b.Policy && a.Disagree == b.Disagree && a.FailOpen == b.FailOpen && a.Serve == b.Serve &&
		a.HeldUntil.Equal(b.HeldUntil) && slices.Equal(a.Answer, b.Answer)
}

// handover returns how a change of this cluster's claim from before to
// after changes its serving a shared name it claimed before: 1 when it
// starts, -1 when it stops, 0 otherwise.
func handover(before, after *arbitrate.Member) int8 {
	switch {
	case before == nil || after == nil || before.Serving == after.Serving:
		return 0
	case after.Serving:
		return 1
	}
	return -1
}
