package arbitrate

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNested(t *testing.T) {
	tests := []struct {
		name    string
		created int64
		nested  []NestedClaim
		want    []string
	}{
		{name: "nothing nested", created: 5},
		{
			name:    "an older nested claim keeps the name",
			created: 5,
			nested:  []NestedClaim{{Claim: Claim{Owner: "b", Created: 3}}},
			want:    []string{"b"},
		},
		{
			name:    "a younger nested claim does not",
			created: 5,
			nested:  []NestedClaim{{Claim: Claim{Owner: "b", Created: 7}}},
		},
		{
			name:   "a name without a written claim is younger than every written one",
			nested: []NestedClaim{{Claim: Claim{Owner: "b", Created: 7}}},
			want:   []string{"b"},
		},
		{
			name:    "nesting is not shared",
			created: 5,
			nested:  []NestedClaim{{Claim: Claim{Owner: "b", Created: 3, Shared: true}}},
			want:    []string{"b"},
		},
		{
			name:    "beneath a name both clusters share",
			created: 5,
			nested:  []NestedClaim{{Claim: Claim{Owner: "b", Created: 3, Shared: true}, Joint: true}},
		},
		{
			name:    "own claims never conflict",
			created: 5,
			nested:  []NestedClaim{{Claim: Claim{Owner: "a", Created: 3}}},
		},
		{
			name:    "each holder once, sorted",
			created: 9,
			nested: []NestedClaim{
				{Claim: Claim{Owner: "c", Created: 4}},
				{Claim: Claim{Owner: "b", Created: 3}},
				{Claim: Claim{Owner: "c", Created: 2}},
				{Claim: Claim{Owner: "d", Created: 10}},
			},
			want: []string{"b", "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Nested("a", tt.created, tt.nested)); diff != "" {
				t.Errorf("Nested() holders (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	older := NestedClaim{Claim: Claim{Owner: "c", Created: 2}}
	tests := []struct {
		name   string
		shared bool
		claims []Claim
		nested []NestedClaim
		want   Decision
	}{
		{name: "nothing claimed", want: Decision{Granted: true}},
		{name: "a new name beneath another cluster's", nested: []NestedClaim{older}, want: Decision{Nested: []string{"c"}}},
		{
			name:   "an older own claim holds against a younger nested one",
			claims: []Claim{{Owner: "a", Created: 5}},
			nested: []NestedClaim{{Claim: Claim{Owner: "c", Created: 6}}},
			want:   Decision{Granted: true},
		},
		{
			name:   "held, and nested by another",
			claims: []Claim{{Owner: "b", Created: 1}, {Owner: "a", Created: 5}},
			nested: []NestedClaim{older, {Claim: Claim{Owner: "b", Created: 3}}},
			want:   Decision{Holders: []string{"b"}, Nested: []string{"c"}},
		},
		{
			name:   "held, and nested by the same",
			claims: []Claim{{Owner: "b", Created: 1}, {Owner: "a", Created: 5}},
			nested: []NestedClaim{{Claim: Claim{Owner: "b", Created: 3}}},
			want:   Decision{Holders: []string{"b"}},
		},
		{
			name:   "a shared name joined, and nested beneath an older one",
			shared: true,
			claims: []Claim{{Owner: "b", Created: 1, Shared: true}, {Owner: "a", Created: 5}},
			nested: []NestedClaim{older},
			want:   Decision{Nested: []string{"c"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide("a", tt.shared, tt.claims, tt.nested)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAncestors(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{name: "a.x.example.org", want: []string{"x.example.org", "example.org", "org"}},
		{name: "org"},
		{name: "apex.dns.example.org", want: []string{"dns.example.org", "example.org", "org"}},
	} {
		if diff := cmp.Diff(tt.want, slices.Collect(Ancestors(tt.name))); diff != "" {
			t.Errorf("Ancestors(%q) (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestBeneath(t *testing.T) {
	for _, tt := range []struct {
		name, ancestor string
		want           bool
	}{
		{"a.x.example.org", "x.example.org", true},
		{"a.b.x.example.org", "x.example.org", true},
		{"ax.example.org", "x.example.org", false},
		{"x.example.org", "x.example.org", false},
		{"x.example.org", "a.x.example.org", false},
	} {
		if got := Beneath(tt.name, tt.ancestor); got != tt.want {
			t.Errorf("Beneath(%q, %q) = %v, want %v", tt.name, tt.ancestor, got, tt.want)
		}
	}
}
