package arbitrate

import (
	"slices"
	"testing"
)

func TestName(t *testing.T) {
	tests := []struct {
		name    string
		shared  bool
		claims  []Claim
		granted bool
		holders []string
	}{
		{name: "no claims", granted: true},
		{name: "only its own", claims: []Claim{{Owner: "a", Created: 5}}, granted: true},
		{
			name:    "an earlier exclusive claim holds it",
			claims:  []Claim{{Owner: "b", Created: 3}},
			holders: []string{"b"},
		},
		{
			name:    "an earlier exclusive claim holds it even when this one is shared",
			shared:  true,
			claims:  []Claim{{Owner: "b", Created: 3}, {Owner: "a", Created: 4, Shared: true}},
			holders: []string{"b"},
		},
		{
			name:    "an earlier shared claim is not joined by an exclusive one",
			claims:  []Claim{{Owner: "b", Created: 3, Shared: true}},
			holders: []string{"b"},
		},
		{
			name:    "shared by both",
			shared:  true,
			claims:  []Claim{{Owner: "b", Created: 3, Shared: true}},
			granted: true,
		},
		{
			name:    "its own earlier claim holds it against a later shared one",
			claims:  []Claim{{Owner: "a", Created: 2}, {Owner: "b", Created: 3, Shared: true}},
			granted: true,
		},
		{
			name:   "a waiting exclusive claim does not block a shared one",
			shared: true,
			claims: []Claim{
				{Owner: "b", Created: 2, Shared: true}, {Owner: "c", Created: 3}, {Owner: "a", Created: 4, Shared: true},
			},
			granted: true,
		},
		{
			name: "the holders of a shared name",
			claims: []Claim{
				{Owner: "b", Created: 2, Shared: true}, {Owner: "c", Created: 3}, {Owner: "d", Created: 4, Shared: true},
			},
			holders: []string{"b", "d"},
		},
		{
			name:    "a claim not written yet ranks last",
			claims:  []Claim{{Owner: "a"}, {Owner: "b", Created: 9}},
			holders: []string{"b"},
		},
		{
			name:    "its own written claim keeps its rank when it changes to shared",
			shared:  true,
			claims:  []Claim{{Owner: "a", Created: 2}, {Owner: "b", Created: 3}},
			granted: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			granted, holders := Name("a", tt.shared, tt.claims)
			if granted != tt.granted || !slices.Equal(holders, tt.holders) {
				t.Errorf("Name() = %v, %v; want %v, %v", granted, holders, tt.granted, tt.holders)
			}
		})
	}
}
