package dnsname

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// label returns a valid label of n characters.
func label(n int) string { return strings.Repeat("a", n) }

// nameOfLength returns a valid name of exactly n characters (n >= 5) ending in ".org".
func nameOfLength(n int) string {
	var labels []string
	rest := n - len(".org")
	for rest > 0 {
		l := min(rest, MaxLabelLength)
		if rest-l == 1 {
			// A remainder of one character cannot hold a dot and a label.
			l--
		}
		labels = append(labels, label(l))
		rest -= l
		if rest > 0 {
			rest-- // the dot before the next label
		}
	}
	return strings.Join(labels, ".") + ".org"
}

func TestNameOfLength(t *testing.T) {
	for _, n := range []int{5, 6, 67, 68, 69, 253, 254} {
		if got := len(nameOfLength(n)); got != n {
			t.Errorf("len(nameOfLength(%d)) = %d, want %d", n, got, n)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "unchanged", in: "web.example.org", want: "web.example.org"},
		{name: "upper case", in: "Web.Example.ORG", want: "web.example.org"},
		{name: "trailing dot", in: "web.example.org.", want: "web.example.org"},
		{name: "only one trailing dot dropped", in: "web.example.org..", want: "web.example.org."},
		{name: "surrounding space", in: "  web.example.org.\t\n", want: "web.example.org"},
		{name: "empty", in: "", want: ""},
		{name: "root", in: ".", want: ""},
		{name: "inner space kept", in: "web .example.org", want: "web .example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr error // nil when the name is valid
	}{
		{name: "valid", in: "web.example.org", want: "web.example.org"},
		{name: "single label", in: "localhost", want: "localhost"},
		{name: "digits", in: "0.123.example.org", want: "0.123.example.org"},
		{name: "inner hyphens", in: "a-b--c.example.org", want: "a-b--c.example.org"},
		{name: "upper case", in: "WEB.Example.Org", want: "web.example.org"},
		{name: "trailing dot", in: "web.example.org.", want: "web.example.org"},
		{name: "surrounding space", in: " web.example.org ", want: "web.example.org"},
		{name: "punycode", in: "xn--bcher-kva.example.org", want: "xn--bcher-kva.example.org"},
		{name: "punycode upper case", in: "XN--BCHER-KVA.example.org", want: "xn--bcher-kva.example.org"},
		{name: "63-character label", in: label(63) + ".example.org", want: label(63) + ".example.org"},
		{name: "253-character name", in: nameOfLength(253), want: nameOfLength(253)},
		{name: "253-character name with trailing dot", in: nameOfLength(253) + ".", want: nameOfLength(253)},
		{name: "label any inside a word", in: "company.example.org", want: "company.example.org"},
		{name: "label with star inside", in: "a*b.example.org", wantErr: ErrLabel},

		{name: "empty", in: "", wantErr: ErrEmpty},
		{name: "only space", in: "   ", wantErr: ErrEmpty},
		{name: "root", in: ".", wantErr: ErrEmpty},
		{name: "64-character label", in: label(64) + ".example.org", wantErr: ErrLabel},
		{name: "254-character name", in: nameOfLength(254), wantErr: ErrTooLong},
		{name: "leading hyphen", in: "-web.example.org", wantErr: ErrLabel},
		{name: "trailing hyphen", in: "web-.example.org", wantErr: ErrLabel},
		{name: "only hyphen", in: "-.example.org", wantErr: ErrLabel},
		{name: "underscore", in: "_http._tcp.example.org", wantErr: ErrLabel},
		{name: "underscore inside", in: "my_web.example.org", wantErr: ErrLabel},
		{name: "empty label", in: "web..example.org", wantErr: ErrLabel},
		{name: "leading dot", in: ".web.example.org", wantErr: ErrLabel},
		{name: "two trailing dots", in: "web.example.org..", wantErr: ErrLabel},
		{name: "wildcard", in: "*.example.org", wantErr: ErrWildcard},
		{name: "wildcard inside", in: "a.*.example.org", wantErr: ErrWildcard},
		{name: "any", in: "any.example.org", wantErr: ErrWildcard},
		{name: "ANY upper case", in: "web.ANY.example.org", wantErr: ErrWildcard},
		{name: "unicode", in: "bücher.example.org", wantErr: ErrLabel},
		{name: "inner space", in: "my web.example.org", wantErr: ErrLabel},
		{name: "slash", in: "web/x.example.org", wantErr: ErrLabel},
		{name: "IP address is a name of digit labels", in: "192.0.2.1", want: "192.0.2.1"},
		{name: "IPv6 address", in: "2001:db8::1", wantErr: ErrLabel},
		{name: "invalid UTF-8", in: "web\xff.example.org", wantErr: ErrLabel},
		{
			// strings.ToLower maps KELVIN SIGN (U+212A) to ASCII "k" and LATIN CAPITAL
			// LETTER I WITH DOT ABOVE (U+0130) to ASCII "i", so names that are not
			// RFC 1123 host names are accepted and silently become other names.
			name: "non-ASCII letter lower-cased to ASCII", in: "\u212a8s.example.org", wantErr: ErrLabel,
		},
		{
			name: "dotted capital I lower-cased to ASCII", in: "\u0130ngress.example.org", wantErr: ErrLabel,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || got != "" {
					t.Errorf("Parse(%q) = %q, %v; want \"\", an error wrapping %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Parse(%q) = %q, %v; want %q, <nil>", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestIsLabel(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"a", true},
		{"web", true},
		{"a-b", true},
		{"0", true},
		{label(63), true},
		{"default-0123456789ab", true},
		{"", false},
		{label(64), false},
		{"-a", false},
		{"a-", false},
		{"a.b", false},
		{"A", false}, // labels are checked after normalisation
		{"a_b", false},
		{"*", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := IsLabel(tt.in); got != tt.want {
				t.Errorf("IsLabel(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestIsWithinRelated(t *testing.T) {
	tests := []struct {
		name        string
		a, b        string
		within      bool // IsWithin(a, b)
		withinOther bool // IsWithin(b, a)
	}{
		{name: "equal", a: "web.example.org", b: "web.example.org", within: true, withinOther: true},
		{name: "child", a: "a.web.example.org", b: "web.example.org", within: true},
		{name: "grandchild", a: "x.a.web.example.org", b: "web.example.org", within: true},
		{name: "parent", a: "example.org", b: "web.example.org", withinOther: true},
		{name: "siblings", a: "a.example.org", b: "b.example.org"},
		{name: "suffix without dot", a: "myweb.example.org", b: "web.example.org"},
		{name: "label prefix", a: "web.example.org", b: "eb.example.org"},
		{name: "different zones", a: "web.example.org", b: "web.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsWithin(tt.a, tt.b); got != tt.within {
				t.Errorf("IsWithin(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.within)
			}
			if got := IsWithin(tt.b, tt.a); got != tt.withinOther {
				t.Errorf("IsWithin(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.withinOther)
			}
			want := tt.within || tt.withinOther
			if got := Related(tt.a, tt.b); got != want {
				t.Errorf("Related(%q, %q) = %v, want %v", tt.a, tt.b, got, want)
			}
			if got := Related(tt.b, tt.a); got != want {
				t.Errorf("Related(%q, %q) = %v, want %v", tt.b, tt.a, got, want)
			}
		})
	}
}

func TestParseZones(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    Zones
		wantErr bool
	}{
		{name: "one", in: []string{"example.org"}, want: Zones{"example.org"}},
		{name: "normalised in order", in: []string{"Example.ORG.", "dev.example.org", " example.com "}, want: Zones{"example.org", "dev.example.org", "example.com"}},
		{name: "nil", in: nil, wantErr: true},
		{name: "empty list", in: []string{}, wantErr: true},
		{name: "empty zone", in: []string{"example.org", ""}, wantErr: true},
		{name: "duplicate", in: []string{"example.org", "example.com", "example.org"}, wantErr: true},
		{name: "duplicate after normalisation", in: []string{"example.org", "EXAMPLE.org."}, wantErr: true},
		{name: "invalid", in: []string{"exa_mple.org"}, wantErr: true},
		{name: "wildcard", in: []string{"*.example.org"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseZones(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseZones(%q) = %q, <nil>; want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseZones(%q) = %q, %v; want %q, <nil>", tt.in, got, err, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseZones(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestPlace(t *testing.T) {
	zones, err := ParseZones([]string{"example.org", "dev.example.org", "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       string
		want     Placed
		wantApex bool
		wantErr  error
	}{
		{name: "first zone", in: "web.example.org", want: Placed{Name: "web.example.org", Zone: "example.org"}},
		{name: "normalised", in: "WEB.Example.Org.", want: Placed{Name: "web.example.org", Zone: "example.org"}},
		{name: "deep name", in: "a.b.c.example.org", want: Placed{Name: "a.b.c.example.org", Zone: "example.org"}},
		{name: "other zone", in: "web.example.com", want: Placed{Name: "web.example.com", Zone: "example.com"}},
		{name: "nested zone wins", in: "web.dev.example.org", want: Placed{Name: "web.dev.example.org", Zone: "dev.example.org"}},
		{name: "deep in nested zone", in: "a.web.dev.example.org", want: Placed{Name: "a.web.dev.example.org", Zone: "dev.example.org"}},
		{name: "apex", in: "example.org", want: Placed{Name: "example.org", Zone: "example.org"}, wantApex: true},
		{name: "nested apex", in: "dev.example.org", want: Placed{Name: "dev.example.org", Zone: "dev.example.org"}, wantApex: true},
		{name: "sibling of nested zone", in: "devx.example.org", want: Placed{Name: "devx.example.org", Zone: "example.org"}},
		{name: "dnsx not reserved", in: "dnsx.example.org", want: Placed{Name: "dnsx.example.org", Zone: "example.org"}},
		{name: "xdns not reserved", in: "xdns.example.org", want: Placed{Name: "xdns.example.org", Zone: "example.org"}},
		{name: "dns deeper not reserved", in: "dns.web.example.org", want: Placed{Name: "dns.web.example.org", Zone: "example.org"}},
		{name: "dns of parent zone inside nested zone", in: "dns.dev.example.org", wantErr: ErrReserved},

		{name: "reserved dns", in: "dns.example.org", wantErr: ErrReserved},
		{name: "reserved ns", in: "ns1.dns.example.org", wantErr: ErrReserved},
		{name: "reserved apex name", in: "apex.dns.example.org", wantErr: ErrReserved},
		{name: "reserved upper case", in: "DNS.Example.Com.", wantErr: ErrReserved},
		{name: "reserved in nested zone", in: "x.dns.dev.example.org", wantErr: ErrReserved},
		{name: "outside", in: "web.example.net", wantErr: ErrOutsideZone},
		{name: "suffix without dot", in: "notexample.org", wantErr: ErrOutsideZone},
		{name: "parent of zone", in: "org", wantErr: ErrOutsideZone},
		{name: "invalid", in: "we_b.example.org", wantErr: ErrLabel},
		{name: "wildcard", in: "*.example.org", wantErr: ErrWildcard},
		{name: "empty", in: "", wantErr: ErrEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := zones.Place(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Place(%q) = %+v, %v; want an error wrapping %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Place(%q) = %+v, %v; want %+v, <nil>", tt.in, got, err, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Place(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if got.Apex() != tt.wantApex {
				t.Errorf("Place(%q).Apex() = %v, want %v", tt.in, got.Apex(), tt.wantApex)
			}
		})
	}
}

// TestPlaceZoneOrder checks that the most specific zone wins whatever the order of the zones.
func TestPlaceZoneOrder(t *testing.T) {
	for _, zs := range []Zones{{"example.org", "dev.example.org"}, {"dev.example.org", "example.org"}} {
		got, err := zs.Place("web.dev.example.org")
		want := Placed{Name: "web.dev.example.org", Zone: "dev.example.org"}
		if err != nil || got != want {
			t.Errorf("%q.Place(%q) = %+v, %v; want %+v, <nil>", zs, "web.dev.example.org", got, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"web.example.org", "WEB.Example.Org.", " web.example.org ", "*.example.org", "any.example.org",
		"xn--bcher-kva.example.org", "bücher.example.org", "a..b", ".", "", "-a.b", "a-.b", "_srv.example.org",
		nameOfLength(253), nameOfLength(254), label(64) + ".org", "\u212a8s.example.org",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Parse(in)
		if err != nil {
			if out != "" {
				t.Errorf("Parse(%q) = %q, %v; want \"\" with an error", in, out, err)
			}
			return
		}
		if again, err := Parse(out); err != nil || again != out {
			t.Errorf("Parse(%q) = %q, %v; want %q, <nil> (Parse(%q) = %q)", out, again, err, out, in, out)
		}
		if Normalize(out) != out {
			t.Errorf("Normalize(%q) = %q, want it unchanged", out, Normalize(out))
		}
		if out != strings.ToLower(out) || !utf8.ValidString(out) {
			t.Errorf("Parse(%q) = %q, want lower-case UTF-8", in, out)
		}
		if strings.HasSuffix(out, ".") {
			t.Errorf("Parse(%q) = %q, want no trailing dot", in, out)
		}
		if len(out) > MaxNameLength {
			t.Errorf("Parse(%q) = %q of %d characters, want at most %d", in, out, len(out), MaxNameLength)
		}
		for _, l := range strings.Split(out, ".") {
			if !IsLabel(l) {
				t.Errorf("Parse(%q) = %q with label %q, want every label valid", in, out, l)
			}
			if l == "*" || l == "any" {
				t.Errorf("Parse(%q) = %q with label %q, want no wildcard label", in, out, l)
			}
		}
	})
}
