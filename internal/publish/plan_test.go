package publish

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/skydns"
)

// plan decides one name from literals alone: what is wanted, the keys
// stored, what the claims decided, whether the name is held or gated.
func TestPlan(t *testing.T) {
	const owner = "test"
	const stored = "web.example.org"
	a := skydns.Record{Name: stored, Host: "192.0.2.1", TTL: 30, Source: "service/shop/web"}
	b := skydns.Record{Name: stored, Host: "192.0.2.2", TTL: 30, Source: "service/shop/web"}
	srv := skydns.Record{Name: "_http._tcp." + stored, Host: stored, Port: 80, TTL: 30, Source: "service/shop/web"}
	misfiled := skydns.Record{Name: "other.example.org", Host: "192.0.2.9", TTL: 30, Source: "service/shop/web"}
	base := skydns.Path("/skydns", stored)
	keyOf := func(r skydns.Record) string { return skydns.Key("/skydns", owner, r) }
	stored1 := func(r skydns.Record, lease int64) entry {
		return entry{key: keyOf(r)[len(base):], sum: digestOf(skydns.Encode(owner, r)), host: r.Host, modRev: 5, lease: lease}
	}
	granted := claimPlan{write: true}
	type result struct {
		Puts, Dels  []string
		ClaimPut    bool
		ClaimDel    bool
		Misfiled    int
		Again, Drop bool
		Lease       int64
	}
	tests := []struct {
		name string
		in   planInput
		want result
	}{{
		name: "a name nobody claims: its records, on the records' lease",
		in:   planInput{records: []skydns.Record{a, b}, claim: granted, gate: true, lease: 7, recordLease: 7},
		want: result{Puts: []string{keyOf(a), keyOf(b)}, Lease: 7},
	}, {
		name: "stored as wanted: nothing to write",
		in: planInput{records: []skydns.Record{a}, actual: []entry{stored1(a, 0)}, claimed: true,
			claim: granted, gate: true, lease: 7},
		want: result{},
	}, {
		name: "refused: this cluster's keys go, its claim says so",
		in: planInput{records: []skydns.Record{a}, actual: []entry{stored1(a, 0)}, claimed: true,
			claim: claimPlan{claimPut: []byte(`{"owner":"east"}`)}, gate: true, lease: 7},
		want: result{Dels: []string{keyOf(a)}, ClaimPut: true},
	}, {
		name: "held (a PTR record whose name is not granted): withdrawn",
		in:   planInput{records: []skydns.Record{a}, actual: []entry{stored1(a, 0)}, claim: granted, held: true, gate: true},
		want: result{Dels: []string{keyOf(a)}},
	}, {
		name: "a view whose default view does not answer the name: withdrawn",
		in:   planInput{records: []skydns.Record{a, b}, actual: []entry{stored1(a, 0)}, claim: granted},
		want: result{Dels: []string{keyOf(a)}},
	}, {
		name: "a key outside what the Publisher owns stays",
		in: planInput{records: []skydns.Record{b}, actual: []entry{func() entry { e := stored1(a, 0); e.outside = true; return e }()},
			claim: granted, gate: true},
		want: result{Puts: []string{keyOf(b)}},
	}, {
		name: "a record set at a name that does not hold it is left out",
		in:   planInput{records: []skydns.Record{a, misfiled}, claim: granted, gate: true},
		want: result{Puts: []string{keyOf(a)}, Misfiled: 1},
	}, {
		name: "the SRV keys beneath wait when they do not fit beside the name's",
		in:   planInput{records: []skydns.Record{a, b, srv}, claim: granted, gate: true, maxOps: 2},
		want: result{Puts: []string{keyOf(a), keyOf(b)}, Again: true},
	}, {
		name: "nothing wanted, stored or claimed: forgotten",
		in:   planInput{claim: granted, gate: true},
		want: result{Drop: true},
	}, {
		name: "nothing wanted or stored, but claimed: kept for the claims",
		in:   planInput{claimed: true, claim: claimPlan{write: true, claimDel: true}, gate: true},
		want: result{ClaimDel: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.stored, in.prefix, in.owner = stored, "/skydns", owner
			if in.maxOps == 0 {
				in.maxOps = 128
			}
			out := plan(in)
			got := result{Puts: nil, Dels: out.dels, ClaimPut: out.claimPut != nil, ClaimDel: out.claimDel,
				Misfiled: len(out.misfiled), Again: out.again, Drop: out.drop}
			for _, w := range out.puts {
				got.Puts = append(got.Puts, w.key)
			}
			if len(out.puts) > 0 {
				got.Lease = out.recordLease
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
