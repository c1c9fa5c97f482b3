package skydns

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/dnsname"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	prefix = "/skydns"
	owner  = "default"
)

func TestPath(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		in     string
		want   string
	}{
		{name: "name", prefix: "/skydns", in: "web.example.org", want: "/skydns/org/example/web"},
		{name: "prefix with trailing slash", prefix: "/skydns/", in: "web.example.org", want: "/skydns/org/example/web"},
		{name: "deep prefix", prefix: "/dns/skydns", in: "a.b.example.org", want: "/dns/skydns/org/example/b/a"},
		{name: "single label", prefix: "/skydns", in: "org", want: "/skydns/org"},
		{name: "apex", prefix: "/skydns", in: ApexName("example.org"), want: "/skydns/org/example/dns/apex"},
		{name: "empty prefix", prefix: "", in: "web.example.org", want: "/org/example/web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Path(tt.prefix, tt.in); got != tt.want {
				t.Errorf("Path(%q, %q) = %q, want %q", tt.prefix, tt.in, got, tt.want)
			}
		})
	}
}

func TestApexName(t *testing.T) {
	if got, want := ApexName("example.org"), "apex.dns.example.org"; got != want {
		t.Errorf("ApexName(%q) = %q, want %q", "example.org", got, want)
	}
}

func TestHeldBy(t *testing.T) {
	for in, want := range map[string]string{
		"_http._tcp.web.example.org":      "web.example.org",
		"_sip._udp.shop.example.com":      "shop.example.com",
		"web.example.org":                 "web.example.org",
		"apex.dns.example.org":            "apex.dns.example.org",
		"10.2.0.192.in-addr.arpa":         "10.2.0.192.in-addr.arpa",
		"_http.web.example.org":           "_http.web.example.org", // one label: not an SRV name
		"_http._tcp":                      "_http._tcp",
		"_http._tcp.":                     "_http._tcp.",
		"_a._b._c.web.example.org":        "_c.web.example.org",
		"_http._tcp.www.shop.example.org": "www.shop.example.org",
	} {
		if got := HeldBy(in); got != want {
			t.Errorf("HeldBy(%q) = %q, want %q", in, got, want)
		}
	}
}

// hashOf computes the content hash of a key label independently of Label.
func hashOf(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])[:12]
}

func TestLabel(t *testing.T) {
	tests := []struct {
		name  string
		owner string
		r     Record
		want  string
	}{
		{name: "IPv4", owner: "default", r: Record{Name: "web.example.org", Host: "192.0.2.10"}, want: "default-" + hashOf("192.0.2.10")},
		{name: "IPv6", owner: "default", r: Record{Name: "web.example.org", Host: "2001:db8::1"}, want: "default-" + hashOf("2001:db8::1")},
		{name: "CNAME", owner: "default", r: Record{Name: "web.example.org", Host: "lb.example.net"}, want: "default-" + hashOf("lb.example.net")},
		{name: "port", owner: "default", r: Record{Name: "web.example.org", Host: "192.0.2.10", Port: 8080}, want: "default-" + hashOf("192.0.2.10\x008080")},
		{name: "other owner", owner: "cluster-b", r: Record{Name: "web.example.org", Host: "192.0.2.10"}, want: "cluster-b-" + hashOf("192.0.2.10")},
		{name: "TXT", owner: "default", r: Record{Name: "web.example.org", Text: "v=spf1 -all"}, want: "default-" + hashOf("\x00text\x00v=spf1 -all")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Label(tt.owner, tt.r)
			if got != tt.want {
				t.Errorf("Label(%q, %+v) = %q, want %q", tt.owner, tt.r, got, tt.want)
			}
			if !dnsname.IsLabel(got) {
				t.Errorf("Label(%q, %+v) = %q, want a valid DNS label", tt.owner, tt.r, got)
			}
			if again := Label(tt.owner, tt.r); again != got {
				t.Errorf("Label(%q, %+v) = %q then %q, want the same label", tt.owner, tt.r, got, again)
			}
		})
	}
}

func TestLabelDependsOnlyOnHostAndPort(t *testing.T) {
	base := Record{Name: "web.example.org", Host: "192.0.2.10", TTL: 30, Source: "service/default/web"}
	want := Label(owner, base)
	for _, r := range []Record{
		{Name: "other.example.org", Host: "192.0.2.10", TTL: 30, Source: "service/default/web"},
		{Name: "web.example.org", Host: "192.0.2.10", TTL: 3600, Source: "service/default/web"},
		{Name: "web.example.org", Host: "192.0.2.10", TTL: 30, Source: "ingress/other/web"},
	} {
		if got := Label(owner, r); got != want {
			t.Errorf("Label(%q, %+v) = %q, want %q (as for %+v)", owner, r, got, want, base)
		}
	}
}

func TestLabelDistinct(t *testing.T) {
	records := []Record{
		{Host: "192.0.2.10"},
		{Host: "192.0.2.11"},
		{Host: "192.0.2.10", Port: 80},
		{Host: "192.0.2.10", Port: 8080},
		{Host: "192.0.2.1008", Port: 0},
		{Host: "192.0.2.100", Port: 8},
		{Host: "2001:db8::1"},
		{Host: "lb.example.net"},
		{Host: ""},
		// Two texts at one name are two keys.
		{Text: "v=spf1 -all"},
		{Text: "google-site-verification=abc"},
		{Text: "192.0.2.10"},
		{Text: "80"},
	}
	seen := make(map[string]Record)
	for _, r := range records {
		for _, o := range []string{"default", "other"} {
			l := Label(o, r)
			if prev, ok := seen[l]; ok {
				t.Errorf("Label(%q, %+v) = %q, the label of %+v too; want distinct labels", o, r, l, prev)
			}
			seen[l] = r
		}
	}
}

func TestLabelExplicit(t *testing.T) {
	r := Record{Name: "ns.dns.example.org", Host: "192.0.2.53", TTL: 30, Label: "ns1"}
	for _, o := range []string{"default", "cluster-b"} {
		if got := Label(o, r); got != "ns1" {
			t.Errorf("Label(%q, %+v) = %q, want %q", o, r, got, "ns1")
		}
	}
	// The label replaces the owner and hash, whatever the host.
	r2 := r
	r2.Host = "2001:db8::53"
	if Key(prefix, owner, r) != Key(prefix, owner, r2) {
		t.Errorf("Key(%+v) = %q and Key(%+v) = %q, want the same key for the same label", r, Key(prefix, owner, r), r2, Key(prefix, owner, r2))
	}
	// CoreDNS serves the nameserver ns1.ns.dns.example.org from this key.
	if got, want := Key(prefix, owner, r), "/skydns/org/example/dns/ns/ns1"; got != want {
		t.Errorf("Key(%q, %q, %+v) = %q, want %q", prefix, owner, r, got, want)
	}
	// The label is not part of the value: CoreDNS must see only skylb's fields.
	if got, want := string(Encode(owner, r)), `{"host":"192.0.2.53","ttl":30,"owner":"default"}`; got != want {
		t.Errorf("Encode(%q, %+v) = %s, want %s", owner, r, got, want)
	}
}

func TestKeyAtName(t *testing.T) {
	r := Record{Name: "10.2.0.192.in-addr.arpa", Host: "web.example.org", TTL: 30}
	for _, o := range []string{"default", "cluster-b"} {
		if got, want := Key(prefix, o, r), "/skydns/arpa/in-addr/192/0/2/10"; got != want {
			t.Errorf("Key(%q, %q, %+v) = %q, want %q: CoreDNS reads a PTR from the reverse name's own key", prefix, o, r, got, want)
		}
	}
	r.Label = "x1"
	if got, want := Key(prefix, owner, r), "/skydns/arpa/in-addr/192/0/2/10"; got != want {
		t.Errorf("Key(%q, %q, %+v) = %q, want %q: a label has no place at a reverse name", prefix, owner, r, got, want)
	}
}

func TestKey(t *testing.T) {
	r := Record{Name: "web.default.example.org", Host: "192.0.2.10", TTL: 30}
	want := "/skydns/org/example/default/web/default-" + hashOf("192.0.2.10")
	for _, p := range []string{"/skydns", "/skydns/"} {
		if got := Key(p, owner, r); got != want {
			t.Errorf("Key(%q, %q, %+v) = %q, want %q", p, owner, r, got, want)
		}
	}
}

func TestType(t *testing.T) {
	tests := []struct {
		name string // stored name; web.example.org when empty
		host string
		port int
		text string
		want Type
	}{
		{host: "192.0.2.10", want: A},
		// CoreDNS's msg.Service.HostType: a text and a host that is not an
		// address is TXT; its A and AAAA queries skip a value without a host.
		{text: "v=spf1 -all", want: TXT},
		{host: "lb.example.net", text: "v=spf1 -all", want: TXT},
		{host: "192.0.2.10", text: "v=spf1 -all", want: A},
		{host: "web.example.org", text: "v=spf1 -all", want: TXT},
		// The apex guard: CoreDNS answers example.org from apex.dns.example.org
		// and skips a host that is the name queried.
		{name: "apex.dns.example.org", host: "example.org", want: None},
		{name: "apex.dns.example.org", host: "lb.example.net", want: CNAME},
		{name: "apex.dns.example.org", host: "192.0.2.10", want: A},
		{host: "web.example.org", want: None},
		{host: "WEB.example.org.", want: None},
		{host: "a.web.example.org", want: None},
		{host: "aweb.example.org", want: CNAME},
		{name: "_http._tcp.web.example.org", host: "web.example.org", port: 80, want: SRV},
		{host: "web.example.org", port: 80, want: SRV},
		{host: "0.0.0.0", want: A},
		{host: "2001:db8::1", want: AAAA},
		{host: "::1", want: AAAA},
		{host: "lb.example.net", want: CNAME},
		{host: "192.0.2.010", want: CNAME}, // leading zeros: not an address for CoreDNS either
		// CoreDNS answers a PTR query from the key at the reverse name itself.
		{name: "10.2.0.192.in-addr.arpa", host: "web.example.org", want: PTR},
		{name: "1.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", host: "web.example.org", want: PTR},
		{name: "10.2.0.192.in-addr.arpa", host: "192.0.2.10", want: A},
		{name: "2.0.192.in-addr.arpa", host: "web.example.org", want: CNAME},
		{host: "", want: CNAME},
		{
			// CoreDNS's msg.Service.HostType serves an IPv4-mapped IPv6 address as A
			// (net.IP.To4 is not nil); netip.Addr.Is4 is false for it.
			host: "::ffff:192.0.2.10", want: A,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.host+" "+tt.text, func(t *testing.T) {
			name := tt.name
			if name == "" {
				name = "web.example.org"
			}
			r := Record{Name: name, Host: tt.host, Port: tt.port, Text: tt.text, TTL: 30}
			if got := r.Type(); got != tt.want {
				t.Errorf("Record{Name: %q, Host: %q, Text: %q}.Type() = %s, want %s", r.Name, tt.host, tt.text, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	r := Record{Name: "web.example.org", Host: "2001:db8::1", TTL: 30}
	if got, want := r.String(), "web.example.org 30 AAAA 2001:db8::1"; got != want {
		t.Errorf("Record.String() = %q, want %q", got, want)
	}
	srv := Record{Name: "_http._tcp.web.example.org", Host: "web.example.org", Port: 80, TTL: 30}
	if got, want := srv.String(), "_http._tcp.web.example.org 30 SRV 80 web.example.org"; got != want {
		t.Errorf("Record.String() = %q, want %q", got, want)
	}
	txt := Record{Name: "web.example.org", Text: `v=spf1 "quoted" -all`, TTL: 30}
	if got, want := txt.String(), `web.example.org 30 TXT "v=spf1 \"quoted\" -all"`; got != want {
		t.Errorf("Record.String() = %q, want %q", got, want)
	}
}

func TestData(t *testing.T) {
	for _, tt := range []struct {
		r    Record
		want string
	}{
		{r: Record{Name: "web.example.org", Host: "192.0.2.10"}, want: "192.0.2.10"},
		{r: Record{Name: "web.example.org", Host: "lb.example.net"}, want: "lb.example.net"},
		{r: Record{Name: "web.example.org", Text: "v=spf1 -all"}, want: `"v=spf1 -all"`},
		{r: Record{Name: "web.example.org", Host: "192.0.2.10", Text: "x"}, want: "192.0.2.10"},
	} {
		if got := tt.r.Data(); got != tt.want {
			t.Errorf("%+v.Data() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestSplitKey(t *testing.T) {
	tests := []struct {
		name      string
		prefix    string
		key       string
		wantName  string
		wantLabel string
		wantOK    bool
	}{
		{name: "record", prefix: "/skydns", key: "/skydns/org/example/web/x1", wantName: "web.example.org", wantLabel: "x1", wantOK: true},
		{name: "prefix with trailing slash", prefix: "/skydns/", key: "/skydns/org/example/web/x1", wantName: "web.example.org", wantLabel: "x1", wantOK: true},
		{name: "single label name", prefix: "/skydns", key: "/skydns/org/x1", wantName: "org", wantLabel: "x1", wantOK: true},
		{name: "apex", prefix: "/skydns", key: "/skydns/org/example/dns/apex/default-0123456789ab", wantName: "apex.dns.example.org", wantLabel: "default-0123456789ab", wantOK: true},
		{name: "deep prefix", prefix: "/a/b", key: "/a/b/org/example/web/x1", wantName: "web.example.org", wantLabel: "x1", wantOK: true},
		{name: "PTR", prefix: "/skydns", key: "/skydns/arpa/in-addr/192/0/2/10", wantName: "10.2.0.192.in-addr.arpa", wantOK: true},
		{name: "PTR, IPv6", prefix: "/skydns", key: "/skydns/arpa/ip6/2/0/0/1/0/d/b/8/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/1/1", wantName: "1.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", wantOK: true},
		{name: "beneath a reverse name", prefix: "/skydns", key: "/skydns/arpa/in-addr/192/0/2/10/x1", wantName: "10.2.0.192.in-addr.arpa", wantLabel: "x1", wantOK: true},
		{name: "reverse zone's nameserver", prefix: "/skydns", key: "/skydns/arpa/in-addr/10/dns/ns/ns1", wantName: "ns.dns.10.in-addr.arpa", wantLabel: "ns1", wantOK: true},
		{name: "not an address", prefix: "/skydns", key: "/skydns/arpa/in-addr/192/0/2/010", wantName: "2.0.192.in-addr.arpa", wantLabel: "010", wantOK: true},

		{name: "outside prefix", prefix: "/skydns", key: "/other/org/example/web/x1"},
		{name: "prefix as part of a segment", prefix: "/skydns", key: "/skydnsx/org/example/web/x1"},
		{name: "prefix itself", prefix: "/skydns", key: "/skydns"},
		{name: "prefix and slash", prefix: "/skydns", key: "/skydns/"},
		{name: "no label", prefix: "/skydns", key: "/skydns/org"},
		{name: "no name", prefix: "/skydns", key: "/skydns//x1"},
		{name: "trailing slash", prefix: "/skydns", key: "/skydns/org/example/web/"},
		{name: "trailing slash, prefix with trailing slash", prefix: "/skydns/", key: "/skydns/org/example/web/"},
		{name: "prefix with trailing slash, no label", prefix: "/skydns/", key: "/skydns/org"},
		{name: "empty key", prefix: "/skydns", key: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, label, ok := SplitKey(tt.prefix, tt.key)
			if name != tt.wantName || label != tt.wantLabel || ok != tt.wantOK {
				t.Errorf("SplitKey(%q, %q) = %q, %q, %v; want %q, %q, %v",
					tt.prefix, tt.key, name, label, ok, tt.wantName, tt.wantLabel, tt.wantOK)
			}
		})
	}
}

func TestSplitKeyRoundTrip(t *testing.T) {
	for _, r := range goldenRecords {
		key := Key(prefix, owner, r)
		name, label, ok := SplitKey(prefix, key)
		if !ok || name != r.Name || label != Label(owner, r) {
			t.Errorf("SplitKey(%q, %q) = %q, %q, %v; want %q, %q, true", prefix, key, name, label, ok, r.Name, Label(owner, r))
		}
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{
			name: "A",
			r:    Record{Name: "web.example.org", Host: "192.0.2.10", TTL: 30, Source: "service/default/web"},
			want: `{"host":"192.0.2.10","ttl":30,"owner":"default","source":"service/default/web"}`,
		},
		{
			name: "port",
			r:    Record{Name: "web.example.org", Host: "192.0.2.10", Port: 8080, TTL: 30, Source: "service/default/web"},
			want: `{"host":"192.0.2.10","port":8080,"ttl":30,"owner":"default","source":"service/default/web"}`,
		},
		{
			name: "no source",
			r:    Record{Name: "web.example.org", Host: "lb.example.net", TTL: 300},
			want: `{"host":"lb.example.net","ttl":300,"owner":"default"}`,
		},
		{
			// CoreDNS reads the text for a TXT query, and its A and AAAA
			// queries skip a value whose host is empty.
			name: "TXT",
			r:    Record{Name: "web.example.org", Text: `v=spf1 "a" -all`, TTL: 300, Source: "dnsendpoint/shop/records"},
			want: `{"host":"","text":"v=spf1 \"a\" -all","ttl":300,"owner":"default","source":"dnsendpoint/shop/records"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Encode(owner, tt.r)); got != tt.want {
				t.Errorf("Encode(%q, %+v) = %s, want %s", owner, tt.r, got, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Value
		wantErr bool
	}{
		{name: "skylb value", in: `{"host":"192.0.2.10","ttl":30,"owner":"default","source":"service/default/web"}`, want: Value{Host: "192.0.2.10", TTL: 30, Owner: "default", Source: "service/default/web"}},
		{name: "CoreDNS value with other fields", in: `{"host":"192.0.2.10","port":53,"priority":10,"weight":5,"text":"x","ttl":60}`, want: Value{Host: "192.0.2.10", Port: 53, Text: "x", TTL: 60}},
		{name: "TXT", in: `{"host":"","text":"v=spf1 -all","ttl":300,"owner":"default"}`, want: Value{Text: "v=spf1 -all", TTL: 300, Owner: "default"}},
		{name: "empty object", in: `{}`, want: Value{}},
		{name: "not JSON", in: `192.0.2.10`, wantErr: true},
		{name: "array", in: `["192.0.2.10"]`, wantErr: true},
		{name: "string", in: `"192.0.2.10"`, wantErr: true},
		{name: "truncated", in: `{"host":"192.0.2.10"`, wantErr: true},
		{name: "trailing data", in: `{"host":"192.0.2.10"} x`, wantErr: true},
		{name: "wrong type", in: `{"host":10}`, wantErr: true},
		{name: "empty", in: ``, wantErr: true},
		{
			name: "null", in: `null`, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Errorf("Decode(%q) = %+v, <nil>; want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q) = %+v, %v; want %+v, <nil>", tt.in, got, err, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// goldenRecords are the records of testdata/records.golden.
var goldenRecords = []Record{
	{Name: "web.default.example.org", Host: "192.0.2.10", TTL: 30, Source: "service/default/web"},
	{Name: "web.default.example.org", Host: "192.0.2.11", TTL: 30, Source: "service/default/web"},
	{Name: "web.default.example.org", Host: "2001:db8::10", TTL: 30, Source: "service/default/web"},
	{Name: "web.example.org", Host: "192.0.2.10", TTL: 30, Source: "service/default/web"},
	{Name: "shop.example.com", Host: "lb-1234.elb.example.net", TTL: 300, Source: "ingress/shop/storefront"},
	{Name: "a.b.c.dev.example.org", Host: "198.51.100.7", TTL: 86400, Source: "service/team-a/api"},
	{Name: ApexName("example.org"), Host: "192.0.2.1", TTL: 60, Source: "ingress/web/root"},
	{Name: "xn--bcher-kva.example.org", Host: "203.0.113.5", TTL: 1, Source: "service/books/store"},
	{Name: "sip.example.org", Host: "192.0.2.20", Port: 5060, TTL: 30, Source: "service/voice/sip"},
	{Name: "odd.example.org", Host: "odd.example.net", TTL: 30, Source: `service/"quoted"/back\slash<&>`},
	{Name: "ns.dns.example.org", Host: "192.0.2.53", TTL: 30, Source: "nameserver/ns1", Label: "ns1"},
	{Name: "ns.dns.example.org", Host: "2001:db8::53", TTL: 30, Source: "nameserver/selector", Label: "ns2"},
	{Name: ApexName("example.com"), Host: "example.com", TTL: 30, Source: "apex-guard"},
	{Name: "10.2.0.192.in-addr.arpa", Host: "web.default.example.org", TTL: 30, Source: "service/default/web"},
	{Name: "0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", Host: "web.default.example.org", TTL: 30, Source: "service/default/web"},
	{Name: "ns.dns.2.0.192.in-addr.arpa", Host: "192.0.2.53", TTL: 30, Source: "nameserver/ns1", Label: "ns1"},
	{Name: "www.example.org", Text: "v=spf1 include:_spf.example.net -all", TTL: 300, Source: "dnsendpoint/shop/records"},
	{Name: "www.example.org", Text: "google-site-verification=abc", TTL: 300, Source: "dnsendpoint/shop/records"},
}

func TestGolden(t *testing.T) {
	var b bytes.Buffer
	for _, r := range goldenRecords {
		b.WriteString(Key(prefix, owner, r))
		b.WriteString(" = ")
		b.Write(Encode(owner, r))
		b.WriteByte('\n')
	}
	path := filepath.Join("testdata", "records.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("records differ from %s (-want +got):\n%s", path, diff)
	}
}

// allowedKeys are the JSON fields skylb writes; CoreDNS must see no other field of
// its msg.Service (mail, group, targetstrip, priority, ...).
var allowedKeys = []string{"host", "owner", "port", "source", "text", "ttl"}

func FuzzKeyRoundTrip(f *testing.F) {
	f.Add("web.default.example.org", "192.0.2.10", 0)
	f.Add("example.org", "2001:db8::1", 0)
	f.Add("apex.dns.example.org", "lb.example.net", 0)
	f.Add("a.b.c.d.e.f.example.org", "192.0.2.10", 8080)
	f.Add("Web.Example.Org.", "", -1)
	f.Add("x", "host/with/slashes", 53)
	f.Add("10.2.0.192.in-addr.arpa", "web.example.org", 0)
	f.Add("10.2.0.192.in-addr.arpa", "192.0.2.10", 80)
	f.Fuzz(func(t *testing.T, in, host string, port int) {
		name, err := dnsname.Parse(in)
		if err != nil {
			return // only names that Parse accepts are stored
		}
		r := Record{Name: name, Host: host, Port: port, TTL: 30}
		key := Key(prefix, owner, r)
		if !strings.HasPrefix(key, prefix+"/") {
			t.Errorf("Key(%q, %q, %+v) = %q, want it under %q", prefix, owner, r, key, prefix+"/")
		}
		gotName, gotLabel, ok := SplitKey(prefix, key)
		wantLabel := Label(owner, r)
		if !ok || gotName != name || gotLabel != wantLabel {
			t.Errorf("SplitKey(%q, %q) = %q, %q, %v; want %q, %q, true", prefix, key, gotName, gotLabel, ok, name, wantLabel)
		}
		if AtName(name) {
			// CoreDNS answers the PTR query of an address from this key alone.
			if gotLabel != "" || key != Path(prefix, name) {
				t.Errorf("Key(%q, %q, %+v) = %q, label %q; want %q, the name's own path", prefix, owner, r, key, gotLabel, Path(prefix, name))
			}
			return
		}
		if !dnsname.IsLabel(gotLabel) {
			t.Errorf("Label(%q, %+v) = %q, want a valid DNS label", owner, r, gotLabel)
		}
		if want := Path(prefix, name) + "/" + wantLabel; key != want {
			t.Errorf("Key(%q, %q, %+v) = %q, want %q", prefix, owner, r, key, want)
		}
	})
}

func FuzzEncodeDecode(f *testing.F) {
	f.Add("192.0.2.10", 0, uint32(30), "default", "service/default/web", "")
	f.Add("lb.example.net", 8080, uint32(0), "", "", "")
	f.Add(`", "text": "x`, -1, uint32(1<<32-1), "o\\", `{"text":"x","mail":true}`, "")
	f.Add(`\"`, 1, uint32(1), `"`, `\u0000`, "")
	f.Add("", 0, uint32(300), "default", "dnsendpoint/shop/records", `v=spf1 "a" -all`)
	f.Fuzz(func(t *testing.T, host string, port int, ttl uint32, own, src, text string) {
		r := Record{Name: "web.example.org", Host: host, Port: port, Text: text, TTL: ttl, Source: src}
		b := Encode(own, r)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%q, %+v)) = %+v, %v; want no error (JSON %s)", own, r, got, err, b)
		}
		if utf8.ValidString(host) && utf8.ValidString(own) && utf8.ValidString(src) && utf8.ValidString(text) {
			want := Value{Host: host, Port: port, Text: text, TTL: ttl, Owner: own, Source: src}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Decode(Encode(%q, %+v)) mismatch (-want +got):\n%s", own, r, diff)
			}
			if diff := cmp.Diff(r, got.Record(r.Name)); diff != "" {
				t.Errorf("Decode(Encode(%q, %+v)).Record() mismatch (-want +got):\n%s", own, r, diff)
			}
		} else if !utf8.ValidString(got.Host) || !utf8.ValidString(got.Owner) || !utf8.ValidString(got.Source) || !utf8.ValidString(got.Text) {
			// JSON strings are UTF-8: encoding/json replaces invalid bytes with U+FFFD.
			t.Errorf("Decode(Encode(%q, %+v)) = %+v, want valid UTF-8 strings", own, r, got)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatalf("Encode(%q, %+v) = %s, not a JSON object: %v", own, r, b, err)
		}
		if _, ok := fields["host"]; !ok {
			t.Errorf("Encode(%q, %+v) = %s, want a host field", own, r, b)
		}
		if _, ok := fields["port"]; ok != (port != 0) {
			t.Errorf("Encode(%q, %+v) = %s, want a port field only for a non-zero port", own, r, b)
		}
		if _, ok := fields["text"]; ok != (text != "") {
			t.Errorf("Encode(%q, %+v) = %s, want a text field only for a text", own, r, b)
		}
		for k := range fields {
			if !slices.Contains(allowedKeys, k) {
				t.Errorf("Encode(%q, %+v) = %s with field %q, want only %q", own, r, b, k, allowedKeys)
			}
		}
	})
}
