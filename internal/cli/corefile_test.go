package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCorefileCommand(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "Corefile"), filepath.Join(dir, "Corefile.out")
	if err := os.WriteFile(in, []byte("import *.view\n{$SKYLB_ZONE} {$SKYLB_REVERSE_ZONE} {\n\tbind {$SKYLB_DNS_BIND}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		env        map[string]string
		wantCode   int
		wantKeys   string // the rendered server block's first line
		wantStderr string
	}{
		{name: "skylb's zones", env: map[string]string{"SKYLB_ZONE": "a.example.org,b.example.org", "SKYLB_REVERSE_ZONE": "192.0.2.0/24,2001:db8::/32"},
			wantKeys: "a.example.org b.example.org 2.0.192.in-addr.arpa 8.b.d.0.1.0.0.2.ip6.arpa {"},
		{name: "the former variables", env: map[string]string{"SKYLB_DNS_ZONE": "example.org", "SKYLB_DNS_REVERSE_ZONE_IPV4": "192.0.2.0/24", "SKYLB_DNS_REVERSE_ZONE_IPV6": ""},
			wantKeys: "example.org 2.0.192.in-addr.arpa {", wantStderr: "skylb: SKYLB_DNS_ZONE is deprecated: set SKYLB_ZONE"},
		{name: "the new zone, the former reverse zone", env: map[string]string{"SKYLB_ZONE": "example.org", "SKYLB_DNS_REVERSE_ZONE_IPV4": "192.0.2.0/24"},
			wantKeys: "example.org 2.0.192.in-addr.arpa {", wantStderr: "skylb: SKYLB_DNS_REVERSE_ZONE_IPV4 is deprecated: set SKYLB_REVERSE_ZONE"},
		{name: "a malformed zone", env: map[string]string{"SKYLB_ZONE": "a.example.org,bad_zone!"}, wantCode: 2, wantStderr: "(from SKYLB_ZONE)"},
		{name: "no zone", env: nil, wantCode: 2, wantStderr: "skylb: --zone: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(out)
			var stdout, stderr strings.Builder
			code := Run([]string{"corefile", "--in=" + in, "--out=" + out}, &stdout, &stderr, env(tt.env))
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Fatalf("skylb corefile = %d, stderr %q; want %d and %q", code, stderr.String(), tt.wantCode, tt.wantStderr)
			}
			if tt.wantCode != 0 {
				return
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if want := "import " + filepath.Join(dir, "*.view") + "\n" + tt.wantKeys + "\n"; !strings.HasPrefix(string(b), want) {
				t.Errorf("skylb corefile wrote\n%s\nwant it to begin\n%s", b, want)
			}
		})
	}
}
