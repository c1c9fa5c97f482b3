package arbitrate

import (
	"slices"
	"time"
)

// Policy says which of the clusters sharing a name answer it.
type Policy string

// The policies.
const (
	// Balanced: every cluster with a healthy address answers, their
	// addresses together.
	Balanced Policy = "balanced"
	// Failover: only the clusters of the most preferred priority that have
	// a healthy address answer.
	Failover Policy = "failover"
)

// DefaultPriority is the priority of a cluster whose objects name none.
// Lower is preferred, as with SRV priorities.
const DefaultPriority = 100

// Member is one cluster sharing a name, as its claim on the name says.
type Member struct {
	Owner    string
	Policy   Policy // the policy its objects ask for; "" counts as Balanced
	Priority int
	// Healthy says that at least one of its addresses for the name passes
	// its health checks (an address that is not checked passes); Since is
	// when Healthy last changed, on the member's own clock.
	Healthy bool
	Since   time.Time
	// Serving says that its records of the name are in etcd: it answers.
	Serving bool
}

// Sharing is what Share decided for one cluster on a shared name.
type Sharing struct {
	// Policy is the policy in force: the members' own when they agree,
	// Balanced when they do not (Disagree).
	Policy   Policy
	Disagree bool
	// Answer are the owners that answer by the policy, sorted: in Balanced
	// those with a healthy address, in Failover those of them with the most
	// preferred priority; every member when none is healthy (FailOpen).
	Answer   []string
	FailOpen bool
	// Serve says whether the deciding cluster's records belong in etcd. A
	// cluster answers when it is among Answer and not held down; a cluster
	// that serves and is not among Answer keeps serving until another one
	// of Answer serves, so that the name never goes without an answer while
	// the clusters hand it over (make before break).
	Serve bool
	// HeldUntil is set when the deciding cluster is among Answer but waits:
	// in Failover, a cluster that does not serve and became healthy less
	// than the hold-down ago takes the name back from a healthy cluster that
	// answers it only once the hold-down has passed since it became healthy,
	// so that a flapping backend does not flap the answers. Zero otherwise.
	HeldUntil time.Time
}

// Share decides whether owner serves a name that the members share. members
// hold owner's own state (its Serving as it is in etcd now) and every other
// cluster sharing the name; each cluster decides with its own view of the
// same claims and reaches the same Answer. Only owner's hold-down depends on
// the clock, owner's own: now and owner's Since.
func Share(owner string, members []Member, now time.Time, holdDown time.Duration) Sharing {
	var s Sharing
	s.Policy, s.Disagree = agreed(members)

	var answer []Member
	for _, m := range members {
		if m.Healthy {
			answer = append(answer, m)
		}
	}
	switch {
	case len(answer) == 0:
		answer, s.FailOpen = members, true
	case s.Policy == Failover:
		best := slices.MinFunc(answer, func(a, b Member) int { return a.Priority - b.Priority }).Priority
		answer = slices.DeleteFunc(slices.Clone(answer), func(m Member) bool { return m.Priority != best })
	}
	for _, m := range answer {
		s.Answer = append(s.Answer, m.Owner)
	}
	slices.Sort(s.Answer)

	i := slices.IndexFunc(members, func(m Member) bool { return m.Owner == owner })
	if i < 0 {
		return s
	}
	self := members[i]
	chosen := slices.Contains(s.Answer, owner)
	if chosen && s.Policy == Failover && !self.Serving && holdDown > 0 && self.Healthy {
		working := slices.ContainsFunc(members, func(m Member) bool { return m.Owner != owner && m.Healthy && m.Serving })
		if until := self.Since.Add(holdDown); working && now.Before(until) {
			s.HeldUntil, chosen = until, false
		}
	}
	replaced := slices.ContainsFunc(answer, func(m Member) bool { return m.Owner != owner && m.Serving })
	s.Serve = chosen || self.Serving && !replaced
	return s
}

// agreed returns the policy the members agree on, Balanced without members,
// and Balanced with disagree set when they name different ones.
func agreed(members []Member) (p Policy, disagree bool) {
	p = Balanced
	for i, m := range members {
		mp := m.Policy
		if mp == "" {
			mp = Balanced
		}
		switch {
		case i == 0:
			p = mp
		case mp != p:
			return Balanced, true
		}
	}
	return p, false
}
