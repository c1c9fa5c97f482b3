package cli

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runArgs runs the command line with an empty environment and returns its
// exit code and output.
func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errs strings.Builder
	code = Run(args, &out, &errs, env(nil))
	return code, out.String(), errs.String()
}

// listedFlags returns the long flags a help lists.
func listedFlags(help string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // lines or parts of lines the output has
		wantStderr []string
	}{
		{name: "help", args: []string{"help"}, wantStdout: []string{"Commands:", "  records ", "  delegation ", "  version ", "--zone", "SKYLB_<FLAG>"}},
		{name: "--help, as before the commands", args: []string{"--help"}, wantStdout: []string{"Commands:", "--zone", "SKYLB_<FLAG>"}},
		{name: "-h", args: []string{"-h"}, wantStdout: []string{"Commands:"}},
		{name: "help of a command", args: []string{"help", "records"}, wantStdout: []string{"Usage:\n  skylb records [flags]", "-o, --output", "SKYLB_<FLAG>"}},
		{name: "a command's --help", args: []string{"delegation", "--help"}, wantStdout: []string{"Usage:\n  skylb delegation [flags]", "--nameserver-selector"}},
		{name: "version", args: []string{"version"}, wantStdout: []string{"skylb ", "commit: ", "go: go1."}},
		{name: "--version, with the Deployment's other flags", args: []string{"--zone=$(SKYLB_ZONE)", "--leader-elect=true", "--version"}, wantStdout: []string{"skylb ", "commit: "}},
		{name: "a misspelt command", args: []string{"recrods"}, wantCode: 2,
			wantStderr: []string{`skylb: unknown command "recrods"`, "Usage: skylb [run|check|records|delegation|coredns-reloader|corefile|version|help] [flags]"}},
		{name: "help of an unknown command", args: []string{"help", "recrods"}, wantCode: 2, wantStderr: []string{`skylb: unknown command "recrods"`, "Usage: skylb ["}},
		{name: "help of two commands", args: []string{"help", "records", "version"}, wantCode: 2, wantStderr: []string{`unexpected argument "version"`}},
		{name: "a stray argument after the flags", args: []string{"--zone=example.org", "records"}, wantCode: 2,
			wantStderr: []string{`skylb: unexpected argument "records"`, "Usage: skylb run [flags]"}},
		{name: "a stray argument to version", args: []string{"version", "now"}, wantCode: 2, wantStderr: []string{`skylb: unexpected argument "now"`, "Usage: skylb version\n"}},
		{name: "a flag records does not read", args: []string{"records", "--zone=example.org"}, wantCode: 2,
			wantStderr: []string{"skylb: unknown flag: --zone", "Usage: skylb records [flags]", "skylb help records"}},
		{name: "records -o of no format", args: []string{"records", "-o", "xml"}, wantCode: 2, wantStderr: []string{`--output: "xml" is none of table, json and yaml`}},
		{name: "run without a zone", args: []string{"run"}, wantCode: 2, wantStderr: []string{"skylb: --zone: "}},
		{name: "help --help", args: []string{"help", "--help"}, wantStdout: []string{"Usage:\n  skylb help [command]"}},
		{name: "a misspelt flag", args: []string{"--zon=example.org"}, wantCode: 2, wantStderr: []string{"skylb: unknown flag: --zon; did you mean --zone?", "Usage: skylb run [flags]"}},
		{name: "a malformed number", args: []string{"--zone=example.org", "--ttl=thirty"}, wantCode: 2, wantStderr: []string{`skylb: --ttl: "thirty" is not a whole number`}},
		{name: "check: valid", args: []string{"check", "--zone=a.example.org,b.example.org", "--etcd-endpoints=http://127.0.0.1:2379"},
			wantStdout: []string{"The settings are valid", "  zone                         a.example.org,b.example.org  (--zone)"}},
		{name: "check: a CIDR out of range", args: []string{"check", "--zone=example.org", "--allowed-cidrs=10.0.0.0/33"}, wantCode: 2,
			wantStderr: []string{`skylb: --allowed-cidrs: "10.0.0.0/33" is not a network: the length 33 is not a number from 0 to 32`}},
		{name: "check: a share above 1", args: []string{"check", "--zone=example.org", "--max-delete-ratio=2"}, wantCode: 2,
			wantStderr: []string{"skylb: --max-delete-ratio: 2 is not a share greater than 0 and at most 1"}},
		{name: "check: a port out of range", args: []string{"check", "--zone=example.org", "--http-address=:99999"}, wantCode: 2,
			wantStderr: []string{`skylb: --http-address: ":99999" is not HOST:PORT with a port from 0 to 65535`}},
		{name: "check: a log level of none", args: []string{"check", "--zone=example.org", "--log-level=loud"}, wantCode: 2,
			wantStderr: []string{`skylb: --log-level: "loud" is none of debug, info, warn and error`}},
		{name: "records: a missing certificate names its flag", args: []string{"records", "--etcd-ca-file=/nonexistent/ca.crt", "--etcd-cert-file=/nonexistent/tls.crt", "--etcd-key-file=/nonexistent/tls.key"},
			wantCode: 2, wantStderr: []string{"skylb: --etcd-ca-file: /nonexistent/ca.crt: no such file or directory"}},
		{name: "delegation from the old flag", args: []string{"--print-delegation", "--zone=k8s.example.com", "--nameserver=192.0.2.11", "--nameserver=192.0.2.12"},
			wantStdout: []string{"k8s.example.com.\tIN\tNS\tns1.ns.dns.k8s.example.com."}},
		{name: "delegation", args: []string{"delegation", "--zone=k8s.example.com", "--nameserver=192.0.2.11", "--nameserver=192.0.2.12"},
			wantStdout: []string{"k8s.example.com.\tIN\tNS\tns1.ns.dns.k8s.example.com.", "ns2.ns.dns.k8s.example.com.\tIN\tA\t192.0.2.12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(tt.args...)
			if code != tt.wantCode {
				t.Errorf("Run(%q) = %d, want %d; stderr:\n%s", tt.args, code, tt.wantCode, stderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("Run(%q) stdout lacks %q:\n%s", tt.args, want, stdout)
				}
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("Run(%q) stderr lacks %q:\n%s", tt.args, want, stderr)
				}
			}
			if tt.wantCode != 0 && stdout != "" {
				t.Errorf("Run(%q) failed and printed on stdout:\n%s", tt.args, stdout)
			}
			if tt.wantCode == 0 && len(tt.wantStderr) == 0 && stderr != "" {
				t.Errorf("Run(%q) printed on stderr:\n%s", tt.args, stderr)
			}
		})
	}
}

// TestCommandHelpListsItsOwnFlags: each command's help lists the flags it
// reads, and no other.
func TestCommandHelpListsItsOwnFlags(t *testing.T) {
	want := map[string][]string{
		"records": {"claim-prefix", "etcd-ca-file", "etcd-cert-file", "etcd-endpoints", "etcd-key-file", "etcd-prefix",
			"etcd-server-name", "output", "owner-id", "view", "view-zone"},
		"delegation": {"allowed-cidrs", "denied-cidrs", "forward-service", "kubeconfig", "nameserver", "nameserver-selector", "node-address-types", "zone"},
		"corefile":   {"in", "out", "reverse-zone", "zone"},
		"version":    nil,
	}
	all := listedFlags(func() string { _, out, _ := runArgs("help", "run"); return out }())
	if len(all) < 40 || !slices.Contains(all, "zone") || slices.Contains(all, "output") {
		t.Errorf("skylb help run lists %d flags, want every flag of run and no --output: %q", len(all), all)
	}
	for name, flags := range want {
		code, out, stderr := runArgs(name, "--help")
		if code != 0 {
			t.Fatalf("skylb %s --help = %d, %s", name, code, stderr)
		}
		if got := listedFlags(out); !slices.Equal(got, flags) {
			t.Errorf("skylb %s --help lists %q, want %q", name, got, flags)
		}
		if _, helpOut, _ := runArgs("help", name); helpOut != out {
			t.Errorf("skylb help %s differs from skylb %s --help", name, name)
		}
	}
}
