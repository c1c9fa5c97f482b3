package publish

import (
	"fmt"
	"testing"
)

// claimedNames returns a Publisher wanting 10,000 names claimed, as a cluster
// sharing an etcd does, with nothing of them in its view yet.
func claimedNames() *Publisher {
	p := New(nil, Config{Prefix: "/skydns", Owner: "bench", ClaimPrefix: "/skylb/claims", Log: quiet()})
	for i := range 10000 {
		name := fmt.Sprintf("svc-%04d.ns-%02d.example.org", i%100, i/100)
		p.Set(name, Want{Records: records(name, 1)})
	}
	return p
}

// BenchmarkDecideClaimed measures deciding and diffing every claimed name of
// a cold start: each is a new claim, with its conditions.
func BenchmarkDecideClaimed(b *testing.B) {
	p := claimedNames()
	b.ResetTimer()
	for range b.N {
		p.lock()
		for stored := range p.view.names {
			if _, ok := p.diffLocked(stored, false); !ok {
				b.Fatalf("no change for %s", stored)
			}
		}
		p.mu.Unlock()
	}
}

// BenchmarkResyncClaimed measures a full reconciliation of claimed names whose
// records and claims are all in etcd already: nothing to write.
func BenchmarkResyncClaimed(b *testing.B) {
	p := claimedNames()
	p.lock()
	for stored, n := range p.view.names {
		for _, w := range p.encodeWants(stored, n.records) {
			n.put(entry{key: p.relKey(stored, w.key), sum: digestOf(w.value), host: w.host, modRev: 1}, "")
		}
		p.putClaimLocked(stored, claimEntry{owner: "bench", value: p.codec.encode(false), created: 1, modRev: 1})
	}
	p.mu.Unlock()
	b.ResetTimer()
	for range b.N {
		p.lock()
		for stored := range p.view.names {
			if _, ok := p.diffLocked(stored, false); ok {
				b.Fatalf("a change for %s", stored)
			}
		}
		p.mu.Unlock()
	}
}
