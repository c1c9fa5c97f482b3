package rank

import (
	"fmt"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// reverseZones are the test's reverse zones: 192.0.2.0/24 and 2001:db8::/32.
func reverseZones(t *testing.T) []dnsname.ReverseZone {
	t.Helper()
	zones, err := dnsname.ParseReverseZones([]string{"192.0.2.0/24", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	return zones
}

func ptr(addr, target string, ttl uint32, src string) skydns.Record {
	return skydns.Record{Name: rev(addr), Host: target, TTL: ttl, Source: src}
}

// rev is the reverse name of an address written as a string.
func rev(addr string) string {
	for _, z := range []string{"10", "11", "12", "13", "20", "21", "30"} {
		if addr == "192.0.2."+z {
			return z + ".2.0.192.in-addr.arpa"
		}
	}
	if addr == "2001:db8::11" {
		return "1.1.0.0." + strings.Repeat("0.", 20) + "8.b.d.0.1.0.0.2.ip6.arpa"
	}
	panic("no reverse name for " + addr + " in the test")
}

func TestReverse(t *testing.T) {
	tests := []struct {
		name        string
		pubs        []*source.Publication
		wantPTR     map[string][]skydns.Record
		wantFollows map[string]string
	}{
		{
			name: "an address in a zone, IPv4 and IPv6; one outside none",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), addrs("192.0.2.10", "2001:db8::11", "198.51.100.1"), ttl(30)),
			},
			wantPTR: map[string][]skydns.Record{
				rev("192.0.2.10"):   {ptr("192.0.2.10", "web.shop.example.org", 30, "service/shop/web")},
				rev("2001:db8::11"): {ptr("2001:db8::11", "web.shop.example.org", 30, "service/shop/web")},
			},
			wantFollows: map[string]string{rev("192.0.2.10"): "web.shop.example.org", rev("2001:db8::11"): "web.shop.example.org"},
		},
		{
			name: "one object: the name a person gave before the generated one",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), names("www.example.com", "shop.example.com"), addrs("192.0.2.10")),
			},
			wantPTR:     map[string][]skydns.Record{rev("192.0.2.10"): {ptr("192.0.2.10", "www.example.com", 300, "service/shop/web")}},
			wantFollows: map[string]string{rev("192.0.2.10"): "www.example.com"},
		},
		{
			name: "several objects share an address: the oldest's name",
			pubs: []*source.Publication{
				pub("service/b/api", 5, generated("api.b.example.org"), addrs("192.0.2.11", "192.0.2.12")),
				pub("service/a/web", 1, generated("web.a.example.org"), addrs("192.0.2.11")),
				pub("ingress/c/shop", 0, names("shop.example.com"), addrs("192.0.2.12")),
			},
			wantPTR: map[string][]skydns.Record{
				rev("192.0.2.11"): {ptr("192.0.2.11", "web.a.example.org", 300, "service/a/web")},
				rev("192.0.2.12"): {ptr("192.0.2.12", "shop.example.com", 300, "ingress/c/shop")},
			},
			wantFollows: map[string]string{rev("192.0.2.11"): "web.a.example.org", rev("192.0.2.12"): "shop.example.com"},
		},
		{
			name: "same age: namespace, then name, decide",
			pubs: []*source.Publication{
				pub("service/b/web", 0, generated("web.b.example.org"), addrs("192.0.2.11")),
				pub("service/a/z", 0, generated("z.a.example.org"), addrs("192.0.2.11")),
				pub("service/a/y", 0, generated("y.a.example.org"), addrs("192.0.2.11")),
			},
			wantPTR:     map[string][]skydns.Record{rev("192.0.2.11"): {ptr("192.0.2.11", "y.a.example.org", 300, "service/a/y")}},
			wantFollows: map[string]string{rev("192.0.2.11"): "y.a.example.org"},
		},
		{
			name: "a refused name gets no PTR record; the next name does",
			pubs: []*source.Publication{
				pub("service/a/web", 0, names("www.example.org"), addrs("192.0.2.10")),
				pub("service/b/web", 1, names("www.example.org"), addrs("192.0.2.20")),
			},
			wantPTR: map[string][]skydns.Record{
				rev("192.0.2.10"): {ptr("192.0.2.10", "www.example.org", 300, "service/a/web")},
			},
			wantFollows: map[string]string{rev("192.0.2.10"): "www.example.org"},
		},
		{
			name: "the apex: the zone is the target, its stored name followed",
			pubs: []*source.Publication{
				pub("ingress/a/root", 0, names("example.org"), addrs("192.0.2.30")),
			},
			wantPTR:     map[string][]skydns.Record{rev("192.0.2.30"): {ptr("192.0.2.30", "example.org", 300, "ingress/a/root")}},
			wantFollows: map[string]string{rev("192.0.2.30"): "apex.dns.example.org"},
		},
		{
			name: "a CNAME and SRV records give none",
			pubs: []*source.Publication{
				pub("service/a/db", 0, generated("db.a.example.org"), targets("db.example.net")),
				pub("service/a/web", 0, generated("web.a.example.org"), addrs("192.0.2.10"), ports(source.Port{Name: "http", Protocol: "tcp", Number: 80})),
			},
			wantPTR:     map[string][]skydns.Record{rev("192.0.2.10"): {ptr("192.0.2.10", "web.a.example.org", 300, "service/a/web")}},
			wantFollows: map[string]string{rev("192.0.2.10"): "web.a.example.org"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(0)
			x.SetReverseZones(reverseZones(t))
			for _, p := range tt.pubs {
				x.Update(p.Source, p)
			}
			for _, g := range x.Groups() {
				res := x.Resolve(g)
				for name := range res.Records {
					if dnsname.IsReverse(name) {
						t.Errorf("Resolve(%s) gave the records of %s, want PTR records from Reverse alone", g, name)
					}
				}
			}
			gotPTR, gotFollows := x.Reverse()
			if diff := gocmp.Diff(tt.wantPTR, gotPTR); diff != "" {
				t.Errorf("PTR records mismatch (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tt.wantFollows, gotFollows); diff != "" {
				t.Errorf("Follows mismatch (-want +got):\n%s", diff)
			}
			for name, recs := range gotPTR {
				for _, r := range recs {
					if r.Type() != skydns.PTR || skydns.Key("/skydns", "o", r) != skydns.Path("/skydns", name) {
						t.Errorf("record %+v: type %s, key %s; want a PTR at its reverse name", r, r.Type(), skydns.Key("/skydns", "o", r))
					}
				}
			}
		})
	}
}

// TestReverseFollowsChanges changes the objects one at a time and checks the
// PTR records each change hands over, as the controller would.
func TestReverseFollowsChanges(t *testing.T) {
	x := NewIndex(0)
	x.SetReverseZones(reverseZones(t))
	// update applies a publication (nil deletes src) and returns the PTR
	// records of the groups resolved.
	update := func(src string, p *source.Publication) map[string][]skydns.Record {
		for _, g := range x.Update(src, p) {
			x.Resolve(g)
		}
		got, _ := x.Reverse()
		return got
	}
	web := pub("service/a/web", 0, generated("web.a.example.org"), addrs("192.0.2.10", "192.0.2.11"))
	api := pub("service/b/api", 1, generated("api.b.example.org"), addrs("192.0.2.11"))
	steps := []struct {
		name string
		src  string
		pub  *source.Publication
		want map[string][]skydns.Record
	}{
		{name: "web publishes two addresses", src: web.Source, pub: web, want: map[string][]skydns.Record{
			rev("192.0.2.10"): {ptr("192.0.2.10", "web.a.example.org", 300, "service/a/web")},
			rev("192.0.2.11"): {ptr("192.0.2.11", "web.a.example.org", 300, "service/a/web")},
		}},
		{name: "a newer object shares an address: the PTR record stays, nothing handed over", src: api.Source, pub: api, want: map[string][]skydns.Record{}},
		{name: "web loses an address: the other name takes it", src: web.Source,
			pub: pub("service/a/web", 0, generated("web.a.example.org"), addrs("192.0.2.10")), want: map[string][]skydns.Record{
				rev("192.0.2.11"): {ptr("192.0.2.11", "api.b.example.org", 300, "service/b/api")},
			}},
		{name: "web's TTL changes: its PTR record follows", src: web.Source,
			pub: pub("service/a/web", 0, generated("web.a.example.org"), addrs("192.0.2.10"), ttl(60)), want: map[string][]skydns.Record{
				rev("192.0.2.10"): {ptr("192.0.2.10", "web.a.example.org", 60, "service/a/web")},
			}},
		{name: "web is deleted: its PTR record goes", src: web.Source, pub: nil, want: map[string][]skydns.Record{
			rev("192.0.2.10"): nil,
		}},
		{name: "api is deleted: nothing left", src: api.Source, pub: nil, want: map[string][]skydns.Record{
			rev("192.0.2.11"): nil,
		}},
	}
	for _, s := range steps {
		got := update(s.src, s.pub)
		if diff := gocmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: PTR records handed over mismatch (-want +got):\n%s", s.name, diff)
		}
	}
	if len(x.rev.byAddr) != 0 || len(x.rev.byName) != 0 {
		t.Errorf("after every object is gone the index holds %d addresses and %d names, want none", len(x.rev.byAddr), len(x.rev.byName))
	}
}

func TestReverseWithoutZones(t *testing.T) {
	x := NewIndex(0)
	p := pub("service/a/web", 0, generated("web.a.example.org"), addrs("192.0.2.10"))
	x.Update(p.Source, p)
	for _, g := range x.Groups() {
		x.Resolve(g)
	}
	if got, _ := x.Reverse(); len(got) != 0 {
		t.Errorf("Reverse() without reverse zones = %v, want none", got)
	}
}

// BenchmarkReverseSharedAddresses publishes b.N Services of as many
// namespaces that share three node addresses in a reverse zone (the nodes
// address source), deciding the PTR records after each, as a change does:
// an address shared by thousands of names costs the same as one.
func BenchmarkReverseSharedAddresses(b *testing.B) {
	zones, err := dnsname.ParseReverseZones([]string{"192.0.2.0/24"})
	if err != nil {
		b.Fatal(err)
	}
	x := NewIndex(0)
	x.SetReverseZones(zones)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ns := fmt.Sprintf("ns%d", i) // a group of its own, as Services of many namespaces have
		p := pub("service/"+ns+"/web", i%60, generated("web."+ns+".example.org"), addrs("192.0.2.11", "192.0.2.12", "192.0.2.13"))
		for _, g := range x.Update(p.Source, p) {
			x.Resolve(g)
		}
		x.Reverse()
	}
}
