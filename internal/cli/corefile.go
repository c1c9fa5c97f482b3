package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skylb/skylb/internal/corefile"
	"github.com/skylb/skylb/internal/dnsname"
)

// corefileFlags are the flags of skylb run that skylb corefile reads: the
// zones CoreDNS serves are skylb's.
var corefileFlags = []string{"zone", "reverse-zone"}

// corefileOwnFlags defines skylb corefile's own flags.
func corefileOwnFlags(fs *pflag.FlagSet, o *options) {
	fs.StringVar(&o.corefile.in, "in", "", "the Corefile to read, with {$SKYLB_ZONE} and {$SKYLB_REVERSE_ZONE} (required)")
	fs.StringVar(&o.corefile.out, "out", "", "where to write the Corefile CoreDNS reads (its -conf); - for standard output (required)")
}

// deprecatedZoneVars are the Corefile's variables of the zones before they
// were skylb's own settings, read for one release when SKYLB_ZONE and
// SKYLB_REVERSE_ZONE are not set.
var deprecatedZoneVars = []string{"SKYLB_DNS_ZONE", "SKYLB_DNS_REVERSE_ZONE_IPV4", "SKYLB_DNS_REVERSE_ZONE_IPV6"}

// writeCorefile runs "skylb corefile": it writes --in to --out with the
// zones in place of their variables (corefile.Render).
func writeCorefile(o *options, stdout, stderr io.Writer) int {
	if o.corefile.in == "" || o.corefile.out == "" {
		return usageError(stderr, "corefile", fmt.Errorf("--in and --out: both are required"))
	}
	o.deprecatedZones(stderr)
	zones, err := dnsname.ParseZones(o.zones)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(fmt.Errorf("--zone: %w", err), o.fromEnv))
		return 2
	}
	reverse, err := dnsname.ParseReverseZones(o.reverseZones)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(fmt.Errorf("--reverse-zone: %w", err), o.fromEnv))
		return 2
	}
	template, err := os.ReadFile(o.corefile.in)
	if err != nil {
		fmt.Fprintln(stderr, "skylb: --in:", err)
		return 2
	}
	if !strings.Contains(string(template), corefile.ZoneVar) {
		fmt.Fprintf(stderr, "skylb: --in: %s has no %s: CoreDNS would serve none of --zone\n", o.corefile.in, corefile.ZoneVar)
		return 2
	}
	names := dnsname.WithReverse(nil, reverse)
	dir, err := filepath.Abs(filepath.Dir(o.corefile.in))
	if err != nil {
		fmt.Fprintln(stderr, "skylb: --in:", err)
		return 2
	}
	out := corefile.Render(string(template), dir, zones, names)
	if o.corefile.out == "-" {
		_, err = io.WriteString(stdout, out)
	} else {
		err = os.WriteFile(o.corefile.out, []byte(out), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "skylb: --out:", err)
		return 1
	}
	return 0
}

// deprecatedZones takes the zones from the Corefile's former variables,
// each when its new one is not set (--zone, --reverse-zone), and says so.
func (o *options) deprecatedZones(stderr io.Writer) {
	if z := strings.TrimSpace(o.env["SKYLB_DNS_ZONE"]); z != "" && len(o.zones) == 0 {
		o.zones = []string{z}
		o.fromEnv["zone"] = "SKYLB_DNS_ZONE"
		fmt.Fprintln(stderr, "skylb: SKYLB_DNS_ZONE is deprecated: set SKYLB_ZONE, skylb's own setting, to the same zones")
	}
	if o.flags.Changed("reverse-zone") {
		return
	}
	for _, name := range deprecatedZoneVars[1:] {
		if z := strings.TrimSpace(o.env[name]); z != "" {
			o.reverseZones = append(o.reverseZones, z)
			o.fromEnv["reverse-zone"] = name
			fmt.Fprintf(stderr, "skylb: %s is deprecated: set SKYLB_REVERSE_ZONE, skylb's own setting, to the reverse zones as CIDRs\n", name)
		}
	}
}
