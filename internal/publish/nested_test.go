package publish

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	if p.clusters.below != nil || len(p.clusters.foreignBelow) != 0 {
		t.Fatalf("with only its own claims: below %v, foreign %v; want neither built", belowOf(p.clusters.below), belowOf(p.clusters.foreignBelow))
	}

	p.putClaimLocked("b.x.org", claimEntry{owner: "west", created: 4})
	p.putClaimLocked("b.x.org", claimEntry{owner: "east", created: 5})
	wantBelow := map[string][]string{"org": {"a.x.org", "b.x.org", "x.org"}, "x.org": {"a.x.org", "b.x.org"}}
	wantForeign := map[string][]string{"org": {"b.x.org"}, "x.org": {"b.x.org"}}
	if diff := cmp.Diff(wantBelow, belowOf(p.clusters.below)); diff != "" {
		t.Errorf("below after west's claim (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantForeign, belowOf(p.clusters.foreignBelow)); diff != "" {
		t.Errorf("foreign below after west's claim (-want +got):\n%s", diff)
	}

	// West leaving keeps east's claim on the name indexed.
	p.removeClaimLocked("b.x.org", "west")
	p.removeClaimLocked("a.x.org", "east")
	wantBelow = map[string][]string{"org": {"b.x.org", "x.org"}, "x.org": {"b.x.org"}}
	if diff := cmp.Diff(wantBelow, belowOf(p.clusters.below)); diff != "" {
		t.Errorf("below after removals (-want +got):\n%s", diff)
	}
	if len(p.clusters.foreignBelow) != 0 {
		t.Errorf("foreign below after west left = %v, want empty", belowOf(p.clusters.foreignBelow))
	}

	// A load indexes from scratch.
	p.reindexClaimsLocked()
	if p.clusters.below != nil {
		t.Errorf("below after a load without other clusters' claims = %v, want not built", belowOf(p.clusters.below))
	}
}

// TestNameHeldForOtherClustersClaims checks that a name only other clusters
// claim is kept for their claims, is not marked for writing, and is dropped
// once the last of them goes.
func TestNameHeldForOtherClustersClaims(t *testing.T) {
	p := New(nil, Config{Prefix: "/skydns", Owner: "east", ClaimPrefix: "/skylb/claims", Log: quiet()})
	claim := func(typ mvccpb.Event_EventType, rev int64) []*clientv3.Event {
		return []*clientv3.Event{{Type: typ, Kv: &mvccpb.KeyValue{
			Key: []byte("/skylb/claims/w.x.org/west"), Value: []byte(`{"owner":"west"}`), CreateRevision: 2, ModRevision: rev,
		}}}
	}
	p.applyClaimsLocked(claim(mvccpb.PUT, 2), 2)
	if got := p.claimOfLocked("w.x.org", "west"); got == nil || got.created != 2 {
		t.Fatalf("west's claim = %+v, want created at 2", got)
	}
	if len(p.work.dirty) != 0 {
		t.Errorf("another cluster's claim marked %v, want nothing: this cluster has nothing to write", p.work.dirty)
	}
	p.markAllLocked()
	if len(p.work.dirty) != 0 {
		t.Errorf("a full reconciliation marked %v, want nothing", p.work.dirty)
	}

	p.applyClaimsLocked(claim(mvccpb.DELETE, 3), 3)
	if _, ok := p.work.dirty["w.x.org"]; !ok {
		t.Fatalf("the last claim's removal marked %v, want w.x.org", p.work.dirty)
	}
	if _, changed := p.diffLocked("w.x.org", true); changed {
		t.Error("the name has a change, want none")
	}
	if n := p.view.names["w.x.org"]; n != nil {
		t.Errorf("the name is kept with nothing left: %+v", n)
	}
}
