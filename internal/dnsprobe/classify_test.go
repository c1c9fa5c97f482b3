package dnsprobe

import (
	"testing"

	"github.com/miekg/dns"
)

// reply returns a reply to the SOA query of zone with rcode, the
// authoritative flag aa and the answer records rrs.
func reply(zone string, rcode int, aa bool, rrs ...string) *dns.Msg {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r := new(dns.Msg)
	r.SetRcode(q, rcode)
	r.Authoritative = aa
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		r.Answer = append(r.Answer, rr)
	}
	return r
}

// soa is the SOA record CoreDNS's etcd plugin makes up for zone.
func soa(zone string) string {
	return dns.Fqdn(zone) + " 30 IN SOA ns.dns." + dns.Fqdn(zone) + " hostmaster." + dns.Fqdn(zone) + " 1767225600 7200 1800 86400 30"
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		zone string
		msg  *dns.Msg
		want Result
	}{
		{name: "the zone's SOA, authoritative", zone: "example.org", msg: reply("example.org", dns.RcodeSuccess, true, soa("example.org")),
			want: Result{Served, "its SOA"}},
		{name: "the zone given with its final dot", zone: "example.org.", msg: reply("example.org", dns.RcodeSuccess, true, soa("example.org")),
			want: Result{Served, "its SOA"}},
		{name: "the owner in other case", zone: "example.org", msg: reply("example.org", dns.RcodeSuccess, true, soa("Example.ORG")),
			want: Result{Served, "its SOA"}},
		{name: "a reverse zone", zone: "2.0.192.in-addr.arpa", msg: reply("2.0.192.in-addr.arpa", dns.RcodeSuccess, true, soa("2.0.192.in-addr.arpa")),
			want: Result{Served, "its SOA"}},
		{name: "the SOA among other records", zone: "example.org",
			msg:  reply("example.org", dns.RcodeSuccess, true, "example.org. 30 IN NS ns1.example.org.", soa("example.org")),
			want: Result{Served, "its SOA"}},

		{name: "REFUSED: no server block holds the zone", zone: "b.example.net", msg: reply("b.example.net", dns.RcodeRefused, false),
			want: Result{NotServed, "REFUSED"}},
		{name: "NOTAUTH", zone: "b.example.net", msg: reply("b.example.net", dns.RcodeNotAuth, false),
			want: Result{NotServed, "NOTAUTH"}},
		{name: "NXDOMAIN", zone: "b.example.net", msg: reply("b.example.net", dns.RcodeNameError, true),
			want: Result{NotServed, "NXDOMAIN"}},
		{name: "the SOA of the parent zone", zone: "lb.example.org", msg: reply("lb.example.org", dns.RcodeSuccess, true, soa("example.org")),
			want: Result{NotServed, "the SOA of example.org"}},
		{name: "the zone's SOA from a forwarder", zone: "example.org", msg: reply("example.org", dns.RcodeSuccess, false, soa("example.org")),
			want: Result{NotServed, "its SOA, not authoritative"}},
		{name: "NOERROR without an SOA", zone: "example.org", msg: reply("example.org", dns.RcodeSuccess, true),
			want: Result{NotServed, "NOERROR without its SOA"}},
		{name: "NOERROR with other records only", zone: "example.org", msg: reply("example.org", dns.RcodeSuccess, true, "example.org. 30 IN A 192.0.2.1"),
			want: Result{NotServed, "NOERROR without its SOA"}},

		{name: "SERVFAIL", zone: "example.org", msg: reply("example.org", dns.RcodeServerFailure, true),
			want: Result{Unknown, "SERVFAIL"}},
		{name: "FORMERR", zone: "example.org", msg: reply("example.org", dns.RcodeFormatError, false),
			want: Result{Unknown, "FORMERR"}},
		{name: "NOTIMP", zone: "example.org", msg: reply("example.org", dns.RcodeNotImplemented, false),
			want: Result{Unknown, "NOTIMP"}},
		{name: "an rcode without a name", zone: "example.org", msg: reply("example.org", 12, false),
			want: Result{Unknown, "rcode 12"}},
		{name: "no reply", zone: "example.org", msg: nil,
			want: Result{Unknown, "no reply"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.zone, tt.msg); got != tt.want {
				t.Errorf("Classify(%q) = %+v, want %+v", tt.zone, got, tt.want)
			}
		})
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Unknown: "unknown", Served: "served", NotServed: "not served", State(9): "unknown"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
}
