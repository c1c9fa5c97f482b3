package publish

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// belowOf returns an index of names beneath ancestors as sorted lists.
func belowOf(index map[string]nameSet) map[string][]string {
	if index == nil {
		return nil
	}
	out := make(map[string][]string)
	for a, set := range index {
		out[a] = slices.Sorted(maps.Keys(set))
	}
	return out
}

func TestNestedIndexFollowsTheClaims(t *testing.T) {
	p := New(nil, Config{Prefix: "/skydns", Owner: "east", ClaimPrefix: "/skylb/claims", Log: quiet()})
	p.putClaimLocked("a.x.org", claimEntry{owner: "east", created: 2})
	p.putClaimLocked("x.org", claimEntry{owner: "east", created: 3})
	if p.below != nil || len(p.foreignBelow) != 0 {
		t.Fatalf("with only its own claims: below %v, foreign %v; want neither built", belowOf(p.below), belowOf(p.foreignBelow))
	}

	p.putClaimLocked("b.x.org", claimEntry{owner: "west", created: 4})
	p.putClaimLocked("b.x.org", claimEntry{owner: "east", created: 5})
	wantBelow := map[string][]string{"org": {"a.x.org", "b.x.org", "x.org"}, "x.org": {"a.x.org", "b.x.org"}}
	wantForeign := map[string][]string{"org": {"b.x.org"}, "x.org": {"b.x.org"}}
	if diff := cmp.Diff(wantBelow, belowOf(p.below)); diff != "" {
		t.Errorf("below after west's claim (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantForeign, belowOf(p.foreignBelow)); diff != "" {
		t.Errorf("foreign below after west's claim (-want +got):\n%s", diff)
	}

	// West leaving keeps east's claim on the name indexed.
	p.removeClaimLocked("b.x.org", "west")
	p.removeClaimLocked("a.x.org", "east")
	wantBelow = map[string][]string{"org": {"b.x.org", "x.org"}, "x.org": {"b.x.org"}}
	if diff := cmp.Diff(wantBelow, belowOf(p.below)); diff != "" {
		t.Errorf("below after removals (-want +got):\n%s", diff)
	}
	if len(p.foreignBelow) != 0 {
		t.Errorf("foreign below after west left = %v, want empty", belowOf(p.foreignBelow))
	}

	// A load indexes from scratch.
	p.reindexClaimsLocked()
	if p.below != nil {
		t.Errorf("below after a load without other clusters' claims = %v, want not built", belowOf(p.below))
	}
}
