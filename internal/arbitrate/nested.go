package arbitrate

import (
	"iter"
	"slices"
	"strings"
)

// NestedClaim is another cluster's claim on a name nested with the name
// decided: one of its strict ancestors or strict descendants.
type NestedClaim struct {
	Claim
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
	self := Claim{Owner: owner, Created: created}
	var holders []string
	for _, c := range nested {
		if c.Owner == owner || c.Joint || compareClaims(c.Claim, self) >= 0 {
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
	// Outside are the sources of records of this owner id, outside the
	// scope of the skylb deciding, that hold the name for another namespace.
	Outside []string
}

// Decide decides whether owner may publish a name: Name on the claims on
// the name itself, then Nested on the claims on names nested with it.
func Decide(owner string, shared bool, claims []Claim, nested []NestedClaim) Decision {
	granted, holders := Name(owner, shared, claims)
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
