package dnsname

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseReverseZone(t *testing.T) {
	tests := []struct {
		in       string
		wantName string
		wantErr  string // part of the message
	}{
		{in: "192.0.2.0/24", wantName: "2.0.192.in-addr.arpa"},
		{in: "10.0.0.0/8", wantName: "10.in-addr.arpa"},
		{in: " 172.16.0.0/16 ", wantName: "16.172.in-addr.arpa"},
		{in: "2001:db8::/32", wantName: "8.b.d.0.1.0.0.2.ip6.arpa"},
		{in: "2001:db8:1::/48", wantName: "1.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"},
		{in: "2001:db8::/36", wantName: "0.8.b.d.0.1.0.0.2.ip6.arpa"},
		{in: "fc00::/8", wantName: "c.f.ip6.arpa"},
		{in: "f000::/4", wantName: "f.ip6.arpa"},
		{in: "2001:db8::10/124", wantName: "1.0.0." + strings.Repeat("0.", 20) + "8.b.d.0.1.0.0.2.ip6.arpa"},
		{in: "fd00::/4", wantErr: "did you mean f000::/4"},

		{in: "192.0.2.0/25", wantErr: "RFC 2317"},
		{in: "192.0.2.0/23", wantErr: "/8, /16 or /24"},
		{in: "192.0.2.5/32", wantErr: "/8, /16 or /24"},
		{in: "0.0.0.0/0", wantErr: "/8, /16 or /24"},
		{in: "2001:db8::/33", wantErr: "steps of 4"},
		{in: "2001:db8::1/128", wantErr: "steps of 4"},
		{in: "::/0", wantErr: "steps of 4"},
		{in: "192.0.2.1/24", wantErr: "did you mean 192.0.2.0/24"},
		{in: "::ffff:192.0.2.0/120", wantErr: "as IPv4"},
		{in: "192.0.2.0", wantErr: "not a CIDR"},
		{in: "2.0.192.in-addr.arpa", wantErr: "not a CIDR"},
		{in: "", wantErr: "not a CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseReverseZone(tt.in)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrReverseZone) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseReverseZone(%q) = %+v, %v; want an ErrReverseZone saying %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Name != tt.wantName || got.Prefix != netip.MustParsePrefix(strings.TrimSpace(tt.in)) {
				t.Errorf("ParseReverseZone(%q) = %+v, %v; want name %q", tt.in, got, err, tt.wantName)
			}
			if _, err := Parse(got.Name); err != nil {
				t.Errorf("ParseReverseZone(%q).Name = %q: %v; want a valid name", tt.in, got.Name, err)
			}
		})
	}
}

func TestParseReverseZones(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{name: "none", in: nil, want: []string{}},
		{name: "both families", in: []string{"192.0.2.0/24", "2001:db8::/32"}, want: []string{"2.0.192.in-addr.arpa", "8.b.d.0.1.0.0.2.ip6.arpa"}},
		{name: "disjoint", in: []string{"192.0.2.0/24", "198.51.100.0/24"}, want: []string{"2.0.192.in-addr.arpa", "100.51.198.in-addr.arpa"}},
		{name: "twice", in: []string{"192.0.2.0/24", "192.0.2.0/24"}, wantErr: true},
		{name: "nested", in: []string{"10.0.0.0/8", "10.1.0.0/16"}, wantErr: true},
		{name: "bad", in: []string{"192.0.2.0/24", "x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReverseZones(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseReverseZones(%q) = %+v, <nil>; want an error", tt.in, got)
				}
				return
			}
			names := []string{}
			for _, z := range got {
				names = append(names, z.Name)
			}
			if err != nil || strings.Join(names, " ") != strings.Join(tt.want, " ") {
				t.Errorf("ParseReverseZones(%q) = %q, %v; want %q", tt.in, names, err, tt.want)
			}
		})
	}
}

func TestReverseName(t *testing.T) {
	tests := []struct {
		addr string
		want string
	}{
		{addr: "192.0.2.10", want: "10.2.0.192.in-addr.arpa"},
		{addr: "0.0.0.0", want: "0.0.0.0.in-addr.arpa"},
		{addr: "::ffff:198.51.100.7", want: "7.100.51.198.in-addr.arpa"},
		{addr: "2001:db8::11", want: "1.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"},
		{addr: "2001:db8:abcd:ef01:2345:6789:abcd:ef0f", want: "f.0.f.e.d.c.b.a.9.8.7.6.5.4.3.2.1.0.f.e.d.c.b.a.8.b.d.0.1.0.0.2.ip6.arpa"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			got := ReverseName(a)
			if got != tt.want {
				t.Errorf("ReverseName(%s) = %q, want %q", tt.addr, got, tt.want)
			}
			if back, ok := ReverseAddr(got); !ok || back != a.Unmap() {
				t.Errorf("ReverseAddr(%q) = %v, %v; want %v, true", got, back, ok, a.Unmap())
			}
			if !IsReverse(got) {
				t.Errorf("IsReverse(%q) = false, want true", got)
			}
		})
	}
}

func TestReverseAddrRefuses(t *testing.T) {
	for _, name := range []string{
		"2.0.192.in-addr.arpa",
		"1.10.2.0.192.in-addr.arpa",
		"010.2.0.192.in-addr.arpa",
		"256.2.0.192.in-addr.arpa",
		"-1.2.0.192.in-addr.arpa",
		"a.2.0.192.in-addr.arpa",
		"apex.dns.0.10.in-addr.arpa",
		"ns1.ns.dns.10.in-addr.arpa",
		"10.2.0.192.in-addr.arpa.",
		"10.2.0.192.in-addr.arpa.example.org",
		"8.b.d.0.1.0.0.2.ip6.arpa",
		"1.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.B.D.0.1.0.0.2.ip6.arpa",
		"1.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.1.ip6.arpa",
		"11.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.0.ip6.arpa",
		"web.example.org",
		"in-addr.arpa",
		"",
	} {
		if a, ok := ReverseAddr(name); ok {
			t.Errorf("ReverseAddr(%q) = %v, true; want false", name, a)
		}
	}
}

func TestIsReverse(t *testing.T) {
	for name, want := range map[string]bool{
		"in-addr.arpa": true, "2.0.192.in-addr.arpa": true, "ip6.arpa": true, "8.b.d.0.1.0.0.2.ip6.arpa": true,
		"arpa": false, "example.org": false, "xin-addr.arpa": false, "in-addr.arpa.example.org": false,
	} {
		if got := IsReverse(name); got != want {
			t.Errorf("IsReverse(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzReverseAddr(f *testing.F) {
	f.Add("10.2.0.192.in-addr.arpa")
	f.Add("1.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa")
	f.Add("010.2.0.192.in-addr.arpa")
	f.Fuzz(func(t *testing.T, name string) {
		a, ok := ReverseAddr(name)
		if !ok {
			return
		}
		// Only the name ReverseName writes maps to an address: one key per address.
		if got := ReverseName(a); got != name {
			t.Errorf("ReverseAddr(%q) = %v, whose ReverseName is %q; want the same name", name, a, got)
		}
	})
}
