package claim

import (
	"iter"
	"slices"
	"strings"
)

// CoreDNS answers a name with every record stored beneath it, so a cluster
// publishing a.x.example.org adds its addresses to the answers for
// x.example.org. Between clusters sharing an etcd, a name is therefore refused
// while another cluster holds a name nested with it (a strict ancestor or a
// strict descendant) by an older claim: the same rule by age as for one name,
// with no sharing, since skylb.io/shared merges identical names only. The one
// exception is a name beneath a name both clusters share: its records join
// answers that hold both clusters' addresses already, as the SRV records of a
// shared Service do. Same-cluster nesting is the in-cluster rules' concern
// (see Index), never this one's.

// NestedClaim is another cluster's claim on a name nested with the name
// decided: one of its strict ancestors or strict descendants.
type NestedClaim struct {
	ClusterClaim
	// Joint is set when the upper name of the two is shared by both
	// clusters: the other cluster's claim on it is shared, and so are the
	// deciding cluster's objects publishing it.
	Joint bool
}

// Nested returns the owners whose claims on names nested with a name keep
// owner from publishing it, sorted; none when owner may. created is the
// revision of owner's own claim on the name, 0 when it is not written yet. A
// nested claim keeps the name when it is not joint and older than owner's
// claim; a claim not written yet is younger than every written one, so a new
// name never lands beneath or above another cluster's.
func Nested(owner string, created int64, nested []NestedClaim) []string {
	self := ClusterClaim{Owner: owner, Created: created}
	var holders []string
	for _, c := range nested {
		if c.Owner == owner || c.Joint || compareClaims(c.ClusterClaim, self) >= 0 {
			continue
		}
		if !slices.Contains(holders, c.Owner) {
			holders = append(holders, c.Owner)
		}
	}
	slices.Sort(holders)
	return holders
}

// Decision is what Decide decided on a name.
type Decision struct {
	Granted bool
	// Holders are the owners holding the name itself, Nested the others
	// holding a name nested with it; both are empty when the name is granted.
	Holders, Nested []string
}

// Decide decides whether owner may publish a name: Arbitrate on the claims on
// the name itself, then Nested on the claims on names nested with it.
func Decide(owner string, shared bool, claims []ClusterClaim, nested []NestedClaim) Decision {
	granted, holders := Arbitrate(owner, shared, claims)
	var created int64
	for _, c := range claims {
		if c.Owner == owner {
			created = c.Created
		}
	}
	d := Decision{Holders: holders}
	if len(nested) > 0 {
		d.Nested = slices.DeleteFunc(Nested(owner, created, nested), func(o string) bool { return slices.Contains(holders, o) })
		if len(d.Nested) == 0 {
			d.Nested = nil
		}
	}
	d.Granted = granted && len(d.Nested) == 0
	return d
}

// Ancestors yields the strict ancestors of a name, nearest first:
// a.x.example.org yields x.example.org, example.org and org.
func Ancestors(name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for rest := name; ; {
			i := strings.IndexByte(rest, '.')
			if i < 0 {
				return
			}
			rest = rest[i+1:]
			if rest == "" || !yield(rest) {
				return
			}
		}
	}
}

// Beneath reports whether name lies strictly beneath ancestor:
// a.x.example.org is beneath x.example.org, ax.example.org is not.
func Beneath(name, ancestor string) bool {
	return len(name) > len(ancestor)+1 && strings.HasSuffix(name, ancestor) && name[len(name)-len(ancestor)-1] == '.'
}
