package corefile

import (
	"os"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	template := `(answers) {
	errors
}
import *.view
import /etc/extra.conf
{$SKYLB_ZONE} {$SKYLB_REVERSE_ZONE} {
	bind {$SKYLB_DNS_BIND}
	import answers
}
`
	tests := []struct {
		name           string
		zones, reverse []string
		wantKeys       string
	}{
		{name: "one zone", zones: []string{"example.org"}, wantKeys: "example.org  {"},
		{name: "two zones and two reverse zones", zones: []string{"a.example.org", "b.example.org"},
			reverse:  []string{"2.0.192.in-addr.arpa", "8.b.d.0.1.0.0.2.ip6.arpa"},
			wantKeys: "a.example.org b.example.org 2.0.192.in-addr.arpa 8.b.d.0.1.0.0.2.ip6.arpa {"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render(template, "/etc/coredns/conf", tt.zones, tt.reverse)
			for _, want := range []string{
				"\n" + tt.wantKeys + "\n",
				"\nimport /etc/coredns/conf/*.view\n", // a file beside the template
				"\nimport /etc/extra.conf\n",          // already absolute
				"\n\timport answers\n",                // a snippet
				"bind {$SKYLB_DNS_BIND}",              // left for CoreDNS
			} {
				if !strings.Contains(got, want) {
					t.Errorf("Render() lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

// The shipped Corefile has the zones' variables Render replaces.
func TestShippedCorefileHasTheZones(t *testing.T) {
	b, err := os.ReadFile("../../coredns/Corefile")
	if err != nil {
		t.Fatal(err)
	}
	got := Render(string(b), "/etc/coredns/conf", []string{"a.example.org", "b.example.org"}, nil)
	if !strings.Contains(got, "\na.example.org b.example.org  {\n") || strings.Contains(got, "SKYLB_ZONE}") {
		t.Errorf("the shipped Corefile rendered has no server block of both zones:\n%s", got)
	}
}
