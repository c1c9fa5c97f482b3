package corefile

import (
	"path/filepath"
	"regexp"
	"strings"
)

// The variables of the shipped Corefile's zones, which Render replaces:
// skylb's own settings, SKYLB_ZONE and SKYLB_REVERSE_ZONE, read in CoreDNS's
// pod from the same kind of config.env as skylb's.
const (
	ZoneVar        = "{$SKYLB_ZONE}"
	ReverseZoneVar = "{$SKYLB_REVERSE_ZONE}"
)

// snippet matches the definition of a snippet, "(name) {".
var snippet = regexp.MustCompile(`(?m)^\s*\(([^)\s]+)\)\s*\{`)

// Render returns the Corefile template with the zones in place of ZoneVar
// and the reverse zones' names in place of ReverseZoneVar, separated by
// spaces: CoreDNS replaces a {$VAR} by one word, so that a list of zones in
// one variable would be one zone of a name that does not exist. Every other
// {$VAR} is left for CoreDNS. The files the template imports by a relative
// path are named from dir, the template's directory, so that the Corefile
// written elsewhere imports the same files.
func Render(template, dir string, zones, reverse []string) string {
	out := strings.ReplaceAll(template, ZoneVar, strings.Join(zones, " "))
	out = strings.ReplaceAll(out, ReverseZoneVar, strings.Join(reverse, " "))
	snippets := map[string]bool{}
	for _, m := range snippet.FindAllStringSubmatch(template, -1) {
		snippets[m[1]] = true
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		fields := strings.Fields(l)
		if len(fields) != 2 || fields[0] != "import" || snippets[fields[1]] || filepath.IsAbs(fields[1]) {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		lines[i] = indent + "import " + filepath.Join(dir, fields[1])
	}
	return strings.Join(lines, "\n")
}
