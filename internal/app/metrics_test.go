package app

import (
	"maps"
	"net/netip"
	"testing"

	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/metrics"
)

func TestAddressSeries(t *testing.T) {
	target := func(host, addr string) health.Target {
		return health.Target{Addr: netip.MustParseAddr(addr), Port: 80, Spec: health.Spec{Kind: health.TCP, Host: host}}
	}
	key := func(tg health.Target) string { return tg.Spec.Host + metrics.LabelSep + tg.String() }
	a1, a2 := target("a.example.org", "192.0.2.1"), target("a.example.org", "192.0.2.2")
	b1, b2 := target("b.example.org", "192.0.2.3"), target("b.example.org", "192.0.2.4")
	states := map[health.Target]bool{a1: true, a2: true, b1: false, b2: true}
	for _, tc := range []struct {
		name  string
		limit int
		want  map[string]float64
	}{
		{"under the limit: all", 10, map[string]float64{key(a1): 1, key(a2): 1, key(b1): 0, key(b2): 1}},
		{"at the limit: the failing one first, then by name", 2, map[string]float64{key(b1): 0, key(a1): 1}},
		{"one", 1, map[string]float64{key(b1): 0}},
		{"none", 0, map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := addressSeries(states, tc.limit); !maps.Equal(got, tc.want) {
				t.Errorf("addressSeries(limit %d) = %v, want %v", tc.limit, got, tc.want)
			}
		})
	}
}
