package arbitrate

import (
	"cmp"
	"slices"
)

// Claim is one cluster's claim on a stored name, as kept in etcd beside the
// records: clusters sharing an etcd decide with these which of them publishes
// a name.
type Claim struct {
	Owner  string // the cluster's owner id
	Shared bool   // the cluster's objects mark the name skylb.io/shared
	// Created is the etcd revision the claim was created at; 0 for a claim not
	// written yet, which ranks after every written one.
	Created int64
}

// Name decides whether owner may publish a name, given the claims of every
// cluster on it (owner's own among them or not) and whether owner's objects
// share it. The earliest claim holds the name. A later claim joins it when both
// are shared; otherwise it waits, so that it takes the name over when the
// earlier claims go. Name returns whether owner is granted the name and,
// when it is not, the owners that are.
func Name(owner string, shared bool, claims []Claim) (bool, []string) {
	ranked := make([]Claim, 0, len(claims)+1)
	for _, c := range claims {
		if c.Owner != owner {
			ranked = append(ranked, c)
		}
	}
	if len(ranked) == 0 {
		return true, nil
	}
	self := Claim{Owner: owner, Shared: shared}
	for _, c := range claims {
		if c.Owner == owner {
			self.Created = c.Created
		}
	}
	ranked = append(ranked, self)
	slices.SortFunc(ranked, compareClaims)
	first := ranked[0]
	if first.Owner == owner || first.Shared && shared {
		return true, nil
	}
	holders := []string{first.Owner}
	if first.Shared {
		for _, c := range ranked[1:] {
			if c.Shared && c.Owner != owner {
				holders = append(holders, c.Owner)
			}
		}
	}
	return false, holders
}

// compareClaims ranks written claims by age and unwritten ones last; owner ids
// break ties, which only unwritten claims can have.
func compareClaims(a, b Claim) int {
	ra, rb := a.Created, b.Created
	if ra == 0 {
		ra = 1<<63 - 1
	}
	if rb == 0 {
		rb = 1<<63 - 1
	}
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(a.Owner, b.Owner))
}
