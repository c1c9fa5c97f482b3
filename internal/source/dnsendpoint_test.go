package source

import (
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skylb/skylb/internal/externaldns"
	"github.com/skylb/skylb/internal/skydns"
)

func dnsEndpoint(ns string, endpoints ...externaldns.Endpoint) *externaldns.DNSEndpoint {
	return &externaldns.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "records", UID: types.UID("uid-records"), Generation: 3, CreationTimestamp: metav1.NewTime(testCreated)},
		Spec:       externaldns.DNSEndpointSpec{Endpoints: endpoints},
	}
}

func endpoint(name, typ string, ttl int64, targets ...string) externaldns.Endpoint {
	return externaldns.Endpoint{DNSName: name, RecordType: typ, RecordTTL: ttl, Targets: targets}
}

func endpointPub(ns string, p Publication) *Publication {
	p.Key = skydns.ObjectKey{Kind: KindDNSEndpoint, Namespace: ns, Name: "records"}
	p.Source = p.Key.String()
	p.Created, p.Generation = testCreated, 3
	if p.TTL == 0 {
		p.TTL = testConfig.TTL
	}
	return &p
}

func TestDNSEndpoint(t *testing.T) {
	tests := []struct {
		name   string
		denied []netip.Prefix
		in     *externaldns.DNSEndpoint
		want   *Publication
	}{
		{
			name: "each name answers its own endpoints",
			in: dnsEndpoint("shop",
				endpoint("www.example.org", "A", 60, "192.0.2.2", "192.0.2.1"),
				endpoint("www.example.org", "AAAA", 0, "2001:db8::1"),
				endpoint("api.example.org.", "a", 0, "192.0.2.9"),
				endpoint("shop.example.com", "CNAME", 0, "www.example.org"),
			),
			want: endpointPub("shop", Publication{
				Names: []Name{host("www.example.org", "example.org"), host("api.example.org", "example.org"), host("shop.example.com", "example.com")},
				Answers: map[string]Answer{
					"www.example.org":  {Addresses: addrs("192.0.2.1", "192.0.2.2", "2001:db8::1"), TTL: 60},
					"api.example.org":  {Addresses: addrs("192.0.2.9"), TTL: 300},
					"shop.example.com": {Targets: []string{"www.example.org"}, TTL: 300},
				},
				Addresses: addrs("192.0.2.1", "192.0.2.2", "192.0.2.9", "2001:db8::1"),
				Targets:   []string{"www.example.org"},
			}),
		},
		{
			name: "NS, SRV and MX are refused, naming the endpoint",
			in: dnsEndpoint("shop",
				endpoint("sub.example.org", "NS", 0, "ns1.example.net"),
				endpoint("_sip._udp.example.org", "SRV", 0, "10 5 5060 sip.example.org"),
				endpoint("www.example.org", "MX", 0, "10 mail.example.org"),
			),
			want: endpointPub("shop", Publication{Answers: map[string]Answer{}, Problems: []Problem{
				problem(ReasonRecordTypeRefused, "spec.endpoints[0] (sub.example.org NS) is not published: skylb publishes records of type A, AAAA, CNAME, TXT only"),
				problem(ReasonRecordTypeRefused, "spec.endpoints[1] (_sip._udp.example.org SRV)"),
				problem(ReasonRecordTypeRefused, "spec.endpoints[2] (www.example.org MX)"),
			}}),
		},
		{
			// external-dns writes a text in double quotes; one pair is dropped.
			name: "TXT endpoints answer their texts beside the name's other records",
			in: dnsEndpoint("shop",
				endpoint("www.example.org", "A", 60, "192.0.2.1"),
				endpoint("www.example.org", "TXT", 3600, `"v=spf1 -all"`, "google-site-verification=abc", "v=spf1 -all"),
				endpoint("verify.example.org", "txt", 0, `"say "hi""`, `"`, `""x""`),
			),
			want: endpointPub("shop", Publication{
				Names: []Name{host("www.example.org", "example.org"), host("verify.example.org", "example.org")},
				Answers: map[string]Answer{
					"www.example.org":    {Addresses: addrs("192.0.2.1"), Texts: []string{"google-site-verification=abc", "v=spf1 -all"}, TTL: 60},
					"verify.example.org": {Texts: []string{`"`, `"x"`, `say "hi"`}, TTL: 300},
				},
				Addresses: addrs("192.0.2.1"),
			}),
		},
		{
			name: "a TXT endpoint's empty and overlong texts are told",
			in: dnsEndpoint("shop",
				endpoint("t.example.org", "TXT", 0, `""`, "", strings.Repeat("x", MaxTextLength+1), `"`+strings.Repeat("y", MaxTextLength)+`"`),
			),
			want: endpointPub("shop", Publication{
				Names:   []Name{host("t.example.org", "example.org")},
				Answers: map[string]Answer{"t.example.org": {Texts: []string{strings.Repeat("y", MaxTextLength)}, TTL: 300}},
				Problems: []Problem{
					problem(ReasonInvalidAddress, `spec.endpoints[0] (t.example.org TXT): target "\"\"": a TXT record's text must not be empty`),
					problem(ReasonInvalidAddress, `target "": a TXT record's text must not be empty`),
					problem(ReasonInvalidAddress, "a TXT record's text is 4097 bytes, more than the 4096 allowed"),
				},
			}),
		},
		{
			name: "the apex is refused even in a namespace of --apex-namespaces",
			in:   dnsEndpoint("shop", endpoint("example.org", "A", 0, "192.0.2.1")),
			want: endpointPub("shop", Publication{Answers: map[string]Answer{}, Problems: []Problem{
				problem(ReasonApexRefused, "spec.endpoints[0] (example.org A) is not published: it is the apex of zone example.org"),
			}}),
		},
		{
			name: "targets of the wrong family, bad names, TTLs and names outside the zones are told",
			in: dnsEndpoint("shop",
				endpoint("www.example.org", "A", 0, "2001:db8::1", "192.0.2.1"),
				endpoint("www.example.org", "AAAA", 0, "192.0.2.2"),
				endpoint("alias.example.org", "CNAME", 0, "not a name"),
				endpoint("ttl.example.org", "A", 999999, "192.0.2.3"),
				endpoint("www.example.net", "A", 0, "192.0.2.4"),
			),
			want: endpointPub("shop", Publication{
				Names: []Name{host("www.example.org", "example.org"), host("alias.example.org", "example.org"), host("ttl.example.org", "example.org")},
				Answers: map[string]Answer{
					"www.example.org":   {Addresses: addrs("192.0.2.1"), TTL: 300},
					"alias.example.org": {TTL: 300},
					"ttl.example.org":   {Addresses: addrs("192.0.2.3"), TTL: 300},
				},
				Addresses: addrs("192.0.2.1", "192.0.2.3"),
				Problems: []Problem{
					problem(ReasonInvalidAddress, `spec.endpoints[0] (www.example.org A): target "2001:db8::1" is not an IPv4 address`),
					problem(ReasonInvalidAddress, `target "192.0.2.2" is not an IPv6 address`),
					problem(ReasonInvalidAddress, `spec.endpoints[2] (alias.example.org CNAME): target "not a name"`),
					problem(ReasonInvalidTTL, "recordTTL 999999 is outside"),
					problem(ReasonInvalidHostname, "spec.endpoints[4] (www.example.net A) is not published"),
				},
			}),
		},
		{
			name:   "the CIDR filter applies to every name",
			denied: DefaultDeniedCIDRs,
			in: dnsEndpoint("shop",
				endpoint("a.example.org", "A", 0, "127.0.0.1", "192.0.2.1"),
				endpoint("b.example.org", "A", 0, "127.0.0.1"),
			),
			want: endpointPub("shop", Publication{
				Names: []Name{host("a.example.org", "example.org"), host("b.example.org", "example.org")},
				Answers: map[string]Answer{
					"a.example.org": {Addresses: addrs("192.0.2.1"), TTL: 300},
					"b.example.org": {TTL: 300},
				},
				Addresses: addrs("192.0.2.1"),
				Problems:  []Problem{problem(ReasonAddressRefused, "addresses 127.0.0.1 are not published")},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig
			cfg.Filter.Denied = tt.denied
			got := NewBuilder(cfg, Listers{}).DNSEndpoint(tt.in)
			if diff := diffPub(tt.want, got); diff != "" {
				t.Errorf("DNSEndpoint() mismatch (-want +got):\n%s", diff)
			}
			checkProblemMessages(t, tt.want, got)
			if ref, ok := got.Ref(); !ok || ref.Kind != "DNSEndpoint" || ref.APIVersion != "externaldns.k8s.io/v1alpha1" || ref.Name != "records" {
				t.Errorf("Ref() = %+v, %v; want the DNSEndpoint shop/records", ref, ok)
			}
		})
	}
}

// TestAnswerOf: a name of a DNSEndpoint answers its own endpoints; a name of
// another kind, the publication's addresses.
func TestAnswerOf(t *testing.T) {
	p := &Publication{Addresses: addrs("192.0.2.1"), Targets: []string{"lb.example.net"}, TTL: 30,
		Answers: map[string]Answer{"www.example.org": {Addresses: addrs("192.0.2.9"), TTL: 60}}}
	if got := p.AnswerOf("www.example.org"); got.TTL != 60 || len(got.Addresses) != 1 || got.Addresses[0] != netip.MustParseAddr("192.0.2.9") || got.Targets != nil {
		t.Errorf("AnswerOf(www.example.org) = %+v, want its own answer", got)
	}
	if got := p.AnswerOf("other.example.org"); got.TTL != 30 || len(got.Addresses) != 1 || got.Targets[0] != "lb.example.net" {
		t.Errorf("AnswerOf(other.example.org) = %+v, want the publication's", got)
	}
}
