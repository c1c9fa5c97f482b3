package publish

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// changeOf returns a change of name with puts key writes and conditions on
// ranked older claims, asking about the ancestors.
func changeOf(name string, puts, ranked int, ancestors ...string) change {
	c := change{name: name, keyChange: keyChange{puts: make([]want, puts)}, claimPlan: claimPlan{ranked: make([]rankedClaim, ranked)}}
	for _, a := range ancestors {
		c.above = append(c.above, above{name: a})
	}
	return c
}

func TestBatches(t *testing.T) {
	tests := []struct {
		name    string
		changes []change
		maxOps  int
		want    [][]string // the names of each batch
	}{
		{name: "nothing to commit", maxOps: 128},
		{
			name:    "changes within the limit share one transaction",
			changes: []change{changeOf("a.org", 1, 0), changeOf("b.org", 2, 0), changeOf("c.org", 3, 0)},
			maxOps:  128,
			want:    [][]string{{"a.org", "b.org", "c.org"}},
		},
		{
			name:    "operations split the changes, in their order",
			changes: []change{changeOf("a.org", 50, 0), changeOf("b.org", 50, 0), changeOf("c.org", 50, 0)},
			maxOps:  128,
			want:    [][]string{{"a.org", "b.org"}, {"c.org"}},
		},
		{
			name:    "a transaction holds exactly the limit",
			changes: []change{changeOf("a.org", 64, 0), changeOf("b.org", 64, 0), changeOf("c.org", 1, 0)},
			maxOps:  128,
			want:    [][]string{{"a.org", "b.org"}, {"c.org"}},
		},
		{
			name:    "a change larger than the limit goes alone",
			changes: []change{changeOf("a.org", 1, 0), changeOf("b.org", 200, 0), changeOf("c.org", 1, 0)},
			maxOps:  128,
			want:    [][]string{{"a.org"}, {"b.org"}, {"c.org"}},
		},
		{
			name: "a claim's write is an operation and its creation check a condition",
			changes: []change{
				{name: "a.org", claimPlan: claimPlan{claimPut: []byte("{}"), claimsRev: 9}},
				{name: "b.org", claimPlan: claimPlan{claimDel: true}, keyChange: keyChange{puts: make([]want, 3)}},
				{name: "c.org", claimPlan: claimPlan{claimPut: []byte("{}")}},
				{name: "d.org", claimPlan: claimPlan{claimsRev: 9}, keyChange: keyChange{puts: make([]want, 1)}},
				{name: "e.org", claimPlan: claimPlan{claimsRev: 9}, keyChange: keyChange{puts: make([]want, 1)}},
			},
			// a.org and b.org make 5 operations, a.org's condition
			// and the guard's 5 conditions; so do c.org and d.org.
			maxOps: guardCmps + 1,
			want:   [][]string{{"a.org", "b.org"}, {"c.org", "d.org"}, {"e.org"}},
		},
		{
			name:    "the guard's conditions are kept room for",
			changes: []change{changeOf("a.org", 1, 60), changeOf("b.org", 1, 60), changeOf("c.org", 1, 4)},
			maxOps:  128,
			want:    [][]string{{"a.org", "b.org", "c.org"}},
		},
		{
			name:    "conditions split the changes once the guard's are counted",
			changes: []change{changeOf("a.org", 1, 60), changeOf("b.org", 1, 60), changeOf("c.org", 1, 5)},
			maxOps:  128,
			want:    [][]string{{"a.org", "b.org"}, {"c.org"}},
		},
		{
			name: "an ancestor is asked about once per transaction",
			changes: []change{
				changeOf("a.x.org", 1, 0, "x.org", "org"),
				changeOf("b.x.org", 1, 0, "x.org", "org"),
				changeOf("c.x.org", 1, 0, "x.org", "org"),
				changeOf("d.x.org", 1, 0, "x.org", "org"),
			},
			// guardCmps + 2 ancestors, and 4 operations.
			maxOps: guardCmps + 2,
			want:   [][]string{{"a.x.org", "b.x.org", "c.x.org", "d.x.org"}},
		},
		{
			name: "each transaction asks about its ancestors again",
			changes: []change{
				changeOf("a.x.org", 1, 0, "x.org", "org"),
				changeOf("b.y.org", 1, 0, "y.org", "org"),
				changeOf("c.y.org", 1, 0, "y.org", "org"),
			},
			// a.x.org takes guardCmps + 2; b.y.org adds y.org only and
			// does not fit; c.y.org joins b.y.org, whose org and y.org
			// are asked about again.
			maxOps: guardCmps + 2,
			want:   [][]string{{"a.x.org"}, {"b.y.org", "c.y.org"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]string
			for _, b := range batches(tt.changes, tt.maxOps) {
				if len(b) == 0 {
					t.Fatalf("batches(%d changes, %d) made an empty batch", len(tt.changes), tt.maxOps)
				}
				var names []string
				for _, c := range b {
					names = append(names, c.name)
				}
				got = append(got, names)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("batches(%d changes, %d) names (-want +got):\n%s", len(tt.changes), tt.maxOps, d)
			}
		})
	}
}

// batches splits changes, in their order, into the transactions a batcher
// fills with them, as a flush does.
func batches(changes []change, maxOps int) [][]change {
	var out [][]change
	b := newBatcher(maxOps)
	for _, c := range changes {
		if !b.add(c) {
			out = append(out, b.take())
			b.add(c)
		}
	}
	if len(b.batch) > 0 {
		out = append(out, b.take())
	}
	return out
}
