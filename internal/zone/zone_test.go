package zone

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestParseStatic(t *testing.T) {
	tests := []struct {
		in      string
		want    Static
		wantErr bool
	}{
		{in: "ns1=192.0.2.53", want: Static{Label: "ns1", Addr: netip.MustParseAddr("192.0.2.53")}},
		{in: " NS-A = 2001:db8::53 ", want: Static{Label: "ns-a", Addr: netip.MustParseAddr("2001:db8::53")}},
		{in: "192.0.2.53", want: Static{Addr: netip.MustParseAddr("192.0.2.53")}},
		{in: "::ffff:192.0.2.53", want: Static{Addr: netip.MustParseAddr("192.0.2.53")}},
		{in: "a=127.0.0.21", want: Static{Label: "a", Addr: netip.MustParseAddr("127.0.0.21")}},

		{in: "", wantErr: true},
		{in: "ns1=", wantErr: true},
		{in: "=192.0.2.53", wantErr: true},
		{in: "ns_1=192.0.2.53", wantErr: true},
		{in: "a.b=192.0.2.53", wantErr: true},
		{in: "any=192.0.2.53", wantErr: true},
		{in: "*=192.0.2.53", wantErr: true},
		{in: "ns1=dns.example.org", wantErr: true},
		{in: "ns1=192.0.2.53:53", wantErr: true},
		{in: "ns1=fe80::1%eth0", wantErr: true},
		{in: "ns1=0.0.0.0", wantErr: true},
		{in: "ns1=224.0.0.1", wantErr: true},
		{in: strings.Repeat("a", 64) + "=192.0.2.53", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseStatic(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseStatic(%q) = %+v, <nil>; want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseStatic(%q) = %+v, %v; want %+v, <nil>", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseStatics(t *testing.T) {
	zones := []string{"k8s.example.com"}
	if _, err := ParseStatics([]string{"ns1=192.0.2.1", "ns2=192.0.2.2", "192.0.2.3"}, zones); err != nil {
		t.Errorf("ParseStatics: %v, want no error", err)
	}
	for _, in := range [][]string{
		{"ns1=192.0.2.1", "ns1=192.0.2.2"},
		{"ns1=192.0.2.1", "192.0.2.1"},
		{"ns1=192.0.2.1", "bad"},
	} {
		if got, err := ParseStatics(in, zones); err == nil {
			t.Errorf("ParseStatics(%q) = %+v, <nil>; want an error", in, got)
		}
	}
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + ".example.org"
	if got, err := ParseStatics([]string{strings.Repeat("n", 63) + "=192.0.2.1"}, []string{long}); err == nil {
		t.Errorf("ParseStatics with a name over 253 characters = %+v, <nil>; want an error", got)
	}
}

func TestAssign(t *testing.T) {
	tests := []struct {
		name   string
		static []Static
		found  []netip.Addr
		want   []Nameserver
	}{
		{name: "none"},
		{
			name:   "labels from the flags",
			static: []Static{{Label: "b", Addr: netip.MustParseAddr("192.0.2.1")}, {Label: "a", Addr: netip.MustParseAddr("192.0.2.2")}},
			want: []Nameserver{
				{Label: "a", Addr: netip.MustParseAddr("192.0.2.2"), Source: "nameserver/a"},
				{Label: "b", Addr: netip.MustParseAddr("192.0.2.1"), Source: "nameserver/b"},
			},
		},
		{
			name:  "found, by sorted address, IPv4 first",
			found: addrs("192.0.2.12", "2001:db8::11", "192.0.2.11"),
			want: []Nameserver{
				{Label: "ns1", Addr: netip.MustParseAddr("192.0.2.11"), Source: SourceSelector},
				{Label: "ns2", Addr: netip.MustParseAddr("192.0.2.12"), Source: SourceSelector},
				{Label: "ns3", Addr: netip.MustParseAddr("2001:db8::11"), Source: SourceSelector},
			},
		},
		{
			name:   "unlabelled flags and found addresses share the numbering, skipping labels taken",
			static: []Static{{Label: "ns2", Addr: netip.MustParseAddr("198.51.100.1")}, {Addr: netip.MustParseAddr("192.0.2.20")}},
			found:  addrs("192.0.2.10", "192.0.2.30"),
			want: []Nameserver{
				{Label: "ns1", Addr: netip.MustParseAddr("192.0.2.10"), Source: SourceSelector},
				{Label: "ns2", Addr: netip.MustParseAddr("198.51.100.1"), Source: "nameserver/ns2"},
				{Label: "ns3", Addr: netip.MustParseAddr("192.0.2.20"), Source: "nameserver/ns3"},
				{Label: "ns4", Addr: netip.MustParseAddr("192.0.2.30"), Source: SourceSelector},
			},
		},
		{
			name:   "an address both given and found is kept once, as given",
			static: []Static{{Label: "main", Addr: netip.MustParseAddr("192.0.2.10")}},
			found:  addrs("192.0.2.10", "192.0.2.10", "::ffff:192.0.2.11"),
			want: []Nameserver{
				{Label: "ns1", Addr: netip.MustParseAddr("192.0.2.11"), Source: SourceSelector},
				{Label: "main", Addr: netip.MustParseAddr("192.0.2.10"), Source: "nameserver/main"},
			},
		},
		{
			name:  "ns10 after ns9",
			found: addrs("192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6", "192.0.2.7", "192.0.2.8", "192.0.2.9", "192.0.2.10"),
			want: func() []Nameserver {
				var out []Nameserver
				for i, a := range addrs("192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6", "192.0.2.7", "192.0.2.8", "192.0.2.9", "192.0.2.10") {
					out = append(out, Nameserver{Label: "ns" + string(rune('0'+i+1)), Addr: a, Source: SourceSelector})
				}
				out[9].Label = "ns10"
				return out
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Assign(tt.static, tt.found)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("Assign mismatch (-want +got):\n%s", diff)
			}
			for _, n := range got {
				if !dnsname.IsLabel(n.Label) {
					t.Errorf("label %q is not a DNS label", n.Label)
				}
			}
		})
	}
}

// TestAssignStable checks that the labels depend on the addresses only, not on
// the order they are found in.
func TestAssignStable(t *testing.T) {
	a := Assign(nil, addrs("192.0.2.3", "192.0.2.1", "192.0.2.2"))
	b := Assign(nil, addrs("192.0.2.2", "192.0.2.3", "192.0.2.1"))
	if diff := cmp.Diff(a, b, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("Assign depends on the order of the addresses (-first +second):\n%s", diff)
	}
}

func TestRecords(t *testing.T) {
	ns := Assign([]Static{{Label: "ns1", Addr: netip.MustParseAddr("192.0.2.53")}}, addrs("2001:db8::53"))
	apex := []skydns.Record{{Name: "apex.dns.example.com", Host: "192.0.2.80", TTL: 60, Source: "service/web/root"}}
	got := Records([]string{"example.org", "example.com"}, ns, 30, map[string][]skydns.Record{"apex.dns.example.com": apex})
	want := map[string][]skydns.Record{
		"ns.dns.example.org": {
			{Name: "ns.dns.example.org", Host: "192.0.2.53", TTL: 30, Source: "nameserver/ns1", Label: "ns1"},
			{Name: "ns.dns.example.org", Host: "2001:db8::53", TTL: 30, Source: SourceSelector, Label: "ns2"},
		},
		"ns.dns.example.com": {
			{Name: "ns.dns.example.com", Host: "192.0.2.53", TTL: 30, Source: "nameserver/ns1", Label: "ns1"},
			{Name: "ns.dns.example.com", Host: "2001:db8::53", TTL: 30, Source: SourceSelector, Label: "ns2"},
		},
		// No object publishes the apex of example.org: the guard, a CNAME of the apex to itself.
		"apex.dns.example.org": {{Name: "apex.dns.example.org", Host: "example.org", TTL: 30, Source: SourceGuard}},
		// An object publishes the apex of example.com: its records, no guard.
		"apex.dns.example.com": apex,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Records mismatch (-want +got):\n%s", diff)
	}
	for _, r := range got["ns.dns.example.org"] {
		if r.Type() == skydns.CNAME {
			t.Errorf("nameserver record %s is not an address: CoreDNS answers SERVFAIL for it", r)
		}
	}
	if g := got["apex.dns.example.org"][0]; g.Type() != skydns.None || g.Host != "example.org" {
		t.Errorf("guard %s, want a record to the zone itself, which CoreDNS serves as nothing", g)
	}
	// The nameserver keys are named by label, as CoreDNS wants them.
	if k := skydns.Key("/skydns", "default", got["ns.dns.example.org"][1]); k != "/skydns/org/example/dns/ns/ns2" {
		t.Errorf("nameserver key %q, want /skydns/org/example/dns/ns/ns2", k)
	}
}

func TestRecordsWithoutNameservers(t *testing.T) {
	got := Records([]string{"example.org"}, nil, 30, nil)
	if r, ok := got["ns.dns.example.org"]; !ok || r != nil {
		t.Errorf("Records without nameservers: ns.dns.example.org = %v, %v; want nil, true (nothing to publish there)", r, ok)
	}
	if r := got["apex.dns.example.org"]; len(r) != 1 || r[0].Source != SourceGuard {
		t.Errorf("Records without nameservers: apex = %v, want the guard", r)
	}
}

func TestApex(t *testing.T) {
	if got := Apex("example.org", nil, 30); len(got) != 1 || got[0] != Guard("example.org", 30) {
		t.Errorf("Apex with nothing granted = %v, want the guard", got)
	}
	granted := []skydns.Record{{Name: "apex.dns.example.org", Host: "lb.example.net", TTL: 30}}
	if got := Apex("example.org", granted, 30); !cmp.Equal(got, granted) {
		t.Errorf("Apex with a granted record = %v, want %v", got, granted)
	}
}

func TestWarning(t *testing.T) {
	if w := Warning("example.org", nil); !strings.Contains(w, "no nameserver") {
		t.Errorf("Warning with none = %q", w)
	}
	one := Assign(nil, addrs("192.0.2.1"))
	if w := Warning("example.org", one); !strings.Contains(w, "at least 2") {
		t.Errorf("Warning with one = %q", w)
	}
	if w := Warning("example.org", Assign(nil, addrs("192.0.2.1", "192.0.2.2"))); w != "" {
		t.Errorf("Warning with two = %q, want none", w)
	}
}

func TestPrintDelegation(t *testing.T) {
	ns := Assign(nil, addrs("192.0.2.11", "2001:db8::11"))
	var b strings.Builder
	if err := PrintDelegation(&b, []string{"k8s.example.com"}, ns); err != nil {
		t.Fatal(err)
	}
	want := `; Delegation of k8s.example.com: add to the parent zone example.com.
k8s.example.com.	IN	NS	ns1.ns.dns.k8s.example.com.
k8s.example.com.	IN	NS	ns2.ns.dns.k8s.example.com.
ns1.ns.dns.k8s.example.com.	IN	A	192.0.2.11
ns2.ns.dns.k8s.example.com.	IN	AAAA	2001:db8::11
;
; Or forward the zone to its nameservers (a conditional forwarder):
;   BIND (named.conf):
;     zone "k8s.example.com" { type forward; forward only; forwarders { 192.0.2.11; 2001:db8::11; }; };
;   Unbound (unbound.conf):
;     forward-zone:
;       name: "k8s.example.com"
;       forward-addr: 192.0.2.11
;       forward-addr: 2001:db8::11
;   Windows DNS (PowerShell):
;     Add-DnsServerConditionalForwarderZone -Name "k8s.example.com" -MasterServers 192.0.2.11,2001:db8::11
; The delegation in Windows DNS (PowerShell, on a server of example.com):
;     Add-DnsServerZoneDelegation -Name "example.com" -ChildZoneName "k8s" -NameServer "ns1.ns.dns.k8s.example.com" -IPAddress 192.0.2.11
;     Add-DnsServerZoneDelegation -Name "example.com" -ChildZoneName "k8s" -NameServer "ns2.ns.dns.k8s.example.com" -IPAddress 2001:db8::11
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("PrintDelegation mismatch (-want +got):\n%s", diff)
	}
	// Every line is a record or a comment: the output can go into a zone file as it is.
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if !strings.HasPrefix(line, ";") && len(strings.Split(line, "\t")) != 4 {
			t.Errorf("line %q is neither a comment nor a record", line)
		}
	}
}

func TestPrintDelegationWarnsAndFails(t *testing.T) {
	var b strings.Builder
	if err := PrintDelegation(&b, []string{"example.org"}, nil); err == nil {
		t.Errorf("PrintDelegation without nameservers: no error")
	}
	b.Reset()
	if err := PrintDelegation(&b, []string{"example.org", "example.com"}, Assign(nil, addrs("192.0.2.1"))); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "; WARNING: "); got != 2 {
		t.Errorf("PrintDelegation with one nameserver for two zones: %d warnings, want 2:\n%s", got, b.String())
	}
}

func TestParent(t *testing.T) {
	for in, want := range map[string]string{"k8s.example.com": "example.com", "example.com": "com", "lan": "."} {
		if got := Parent(in); got != want {
			t.Errorf("Parent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrintForwarders(t *testing.T) {
	var b strings.Builder
	if err := PrintForwarders(&b, []string{"k8s.example.com"}, addrs("192.0.2.11", "192.0.2.12"), 30053); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"; No nameserver answers the zones on port 53",
		`zone "k8s.example.com" { type forward; forward only; forwarders { 192.0.2.11 port 30053; 192.0.2.12 port 30053; }; };`,
		";       forward-addr: 192.0.2.11@30053\n;       forward-addr: 192.0.2.12@30053\n",
		";     server=/k8s.example.com/192.0.2.12#30053\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("PrintForwarders() lacks %q:\n%s", want, b.String())
		}
	}
	if err := PrintForwarders(&b, []string{"k8s.example.com"}, nil, 30053); !errors.Is(err, ErrNoNameservers) {
		t.Errorf("PrintForwarders() without addresses = %v, want ErrNoNameservers", err)
	}
}
