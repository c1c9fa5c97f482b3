package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// env returns vars as os.Environ does.
func env(vars map[string]string) []string {
	var out []string
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

func TestEnvVar(t *testing.T) {
	for flag, want := range map[string]string{
		"zone":                        "SKYLB_ZONE",
		"owner-id":                    "SKYLB_OWNER_ID",
		"load-balancer-class":         "SKYLB_LOAD_BALANCER_CLASS",
		"leader-elect-renew-deadline": "SKYLB_LEADER_ELECT_RENEW_DEADLINE",
	} {
		if got := envVar(flag); got != want {
			t.Errorf("envVar(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestSettingsFromEnv(t *testing.T) {
	type settings struct {
		Zones       []string
		Nameservers []string
		Endpoints   []string
		LBClass     string
		TTL         uint32
		SRV         bool
		ClaimPrefix string
		Version     bool
		FromEnv     map[string]string
	}
	defaults := settings{Endpoints: []string{"https://127.0.0.1:2379"}, TTL: 30, SRV: true, ClaimPrefix: "/skylb/claims", FromEnv: map[string]string{}}
	with := func(f func(*settings)) settings {
		s := defaults
		f(&s)
		return s
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    settings
		wantErr string // the start of the error
	}{
		{name: "no setting", want: defaults},
		{
			name: "every kind of flag from the environment",
			env: map[string]string{"SKYLB_ZONE": "example.org", "SKYLB_LOAD_BALANCER_CLASS": "skylb.io/dns",
				"SKYLB_TTL": "60", "SKYLB_SRV": "false"},
			want: with(func(s *settings) {
				s.Zones, s.LBClass, s.TTL, s.SRV = []string{"example.org"}, "skylb.io/dns", 60, false
				s.FromEnv = map[string]string{"zone": "SKYLB_ZONE", "load-balancer-class": "SKYLB_LOAD_BALANCER_CLASS", "ttl": "SKYLB_TTL", "srv": "SKYLB_SRV"}
			}),
		},
		{
			name: "repeatable and list flags take comma-separated values",
			env: map[string]string{"SKYLB_ZONE": "a.example.org, b.example.org", "SKYLB_NAMESERVER": "ns1=192.0.2.11,ns2=192.0.2.12",
				"SKYLB_ETCD_ENDPOINTS": "https://192.0.2.1:2379,https://192.0.2.2:2379"},
			want: with(func(s *settings) {
				s.Zones, s.Nameservers = []string{"a.example.org", "b.example.org"}, []string{"ns1=192.0.2.11", "ns2=192.0.2.12"}
				s.Endpoints = []string{"https://192.0.2.1:2379", "https://192.0.2.2:2379"}
				s.FromEnv = map[string]string{"zone": "SKYLB_ZONE", "nameserver": "SKYLB_NAMESERVER", "etcd-endpoints": "SKYLB_ETCD_ENDPOINTS"}
			}),
		},
		{
			name: "the command line wins, a repeated flag is not added to its variable",
			args: []string{"--zone=cli.example.org", "--ttl=10", "--load-balancer-class="},
			env:  map[string]string{"SKYLB_ZONE": "env.example.org", "SKYLB_TTL": "60", "SKYLB_LOAD_BALANCER_CLASS": "x"},
			want: with(func(s *settings) { s.Zones, s.TTL = []string{"cli.example.org"}, 10 }),
		},
		{
			name: "the manifests' $(SKYLB_ZONE) in the arguments and SKYLB_ZONE in the environment",
			args: []string{"--zone=example.org", "--owner-id=east"},
			env:  map[string]string{"SKYLB_ZONE": "example.org", "SKYLB_OWNER_ID": "east"},
			want: with(func(s *settings) { s.Zones = []string{"example.org"} }),
		},
		{
			name: "an empty value empties a list and a string",
			env:  map[string]string{"SKYLB_ETCD_ENDPOINTS": "", "SKYLB_CLAIM_PREFIX": ""},
			want: with(func(s *settings) {
				s.Endpoints, s.ClaimPrefix = nil, ""
				s.FromEnv = map[string]string{"etcd-endpoints": "SKYLB_ETCD_ENDPOINTS", "claim-prefix": "SKYLB_CLAIM_PREFIX"}
			}),
		},
		{
			name: "actions and variables of no flag are left alone",
			env:  map[string]string{"SKYLB_VERSION": "v1", "SKYLB_PRINT_DELEGATION": "true", "SKYLB_PORT": "tcp://10.0.0.1:8080", "SKYLB_SERVICE_HOST": "10.0.0.1"},
			want: defaults,
		},
		{name: "a malformed number", env: map[string]string{"SKYLB_TTL": "thirty"}, wantErr: `--ttl: "thirty" is not a whole number (from SKYLB_TTL)`},
		{name: "a malformed boolean", env: map[string]string{"SKYLB_LEADER_ELECT": "yes please"}, wantErr: `--leader-elect: "yes please" is not true or false (from SKYLB_LEADER_ELECT)`},
		{name: "a malformed duration", env: map[string]string{"SKYLB_RECORD_EXPIRY": "2 minutes"}, wantErr: `--record-expiry: "2 minutes" is not a duration such as 30s, 2m or 1h (from SKYLB_RECORD_EXPIRY)`},
	}
	run, _ := lookup("run")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := run.parse(tt.args, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("parse() error = %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse() error = %v", err)
			}
			got := settings{Zones: o.zones, Nameservers: o.nameservers, Endpoints: o.etcd.Endpoints, LBClass: o.lbClass,
				TTL: o.ttl, SRV: o.srv, ClaimPrefix: o.claimPrefix, Version: o.showVersion, FromEnv: o.fromEnv}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parse(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestSettingErrorsNameTheVariable: a value a flag's validation refuses names
// the variable it came from.
func TestSettingErrorsNameTheVariable(t *testing.T) {
	run, _ := lookup("run")
	o, err := run.parse([]string{"--zone=example.org"}, map[string]string{"SKYLB_TTL": "0", "SKYLB_OWNER_ID": "east"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.config()
	if err == nil {
		t.Fatal("config() with --ttl=0: no error")
	}
	if got, want := withEnv(err, o.fromEnv).Error(), "--ttl: 0 is outside 1 to 86400 seconds (from SKYLB_TTL)"; got != want {
		t.Errorf("withEnv(config()) = %q, want %q", got, want)
	}
	o, err = run.parse([]string{"--zone=example.org", "--ttl=0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = o.config(); err == nil || withEnv(err, o.fromEnv).Error() != err.Error() {
		t.Errorf("withEnv(config()) with --ttl on the command line = %v, want the flag's error alone", withEnv(err, o.fromEnv))
	}
}

func TestUnknownSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{name: "settings, the Corefile's and other programs' variables", env: map[string]string{"SKYLB_ZONE": "example.org", "SKYLB_PID_FILE": "/run/coredns.pid",
			"SKYLB_DNS_ZONE": "example.org", "SKYLB_ETCD_CERT": "/etc/coredns/tls.crt", "HOME": "/root"}},
		{name: "a typo", env: map[string]string{"SKYLB_TTLL": "5"}, want: []string{"SKYLB_TTLL is no setting of skylb's; did you mean SKYLB_TTL?"}},
		{name: "the Corefile's name for skylb's", env: map[string]string{"SKYLB_ETCD_CERT_FIL": "x"},
			want: []string{"SKYLB_ETCD_CERT_FIL is no setting of skylb's; did you mean SKYLB_ETCD_CERT_FILE?"}},
		{name: "nothing near", env: map[string]string{"SKYLB_SOMETHING_ELSE_ENTIRELY": "1"},
			want: []string{"SKYLB_SOMETHING_ELSE_ENTIRELY is no setting of skylb's (skylb help lists them, as --flags: SKYLB_<FLAG>)"}},
		{name: "the kubelet's variables of a Service skylb-metrics", env: map[string]string{"SKYLB_METRICS_SERVICE_HOST": "10.0.0.1",
			"SKYLB_METRICS_SERVICE_PORT": "8080", "SKYLB_METRICS_SERVICE_PORT_HTTP": "8080", "SKYLB_METRICS_PORT": "tcp://10.0.0.1:8080",
			"SKYLB_METRICS_PORT_8080_TCP": "tcp://10.0.0.1:8080", "SKYLB_METRICS_PORT_8080_TCP_ADDR": "10.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, unknownSettings(tt.env)); diff != "" {
				t.Errorf("unknownSettings(%v) mismatch (-want +got):\n%s", tt.env, diff)
			}
		})
	}
	// Run reports them, and skylb check refuses them.
	var out, errs strings.Builder
	if code := Run([]string{"check", "--zone=example.org"}, &out, &errs, env(map[string]string{"SKYLB_TTLL": "5"})); code != 2 ||
		!strings.Contains(errs.String(), "skylb: SKYLB_TTLL is no setting of skylb's; did you mean SKYLB_TTL?\n") {
		t.Errorf("skylb check with SKYLB_TTLL=5 = %d, %q; want 2 and the variable named", code, errs.String())
	}
}

// TestCorefileVars: the variables known as the Corefile's are those of the
// shipped Corefile and of the views' example block that are no setting of
// skylb's (the zones are), no more.
func TestCorefileVars(t *testing.T) {
	var found []string
	for _, f := range []string{"/coredns/Corefile", "/coredns/internal.view.example"} {
		b, err := os.ReadFile(repoRoot + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\{\$(SKYLB_[A-Z0-9_]+)\}`).FindAllStringSubmatch(string(b), -1) {
			if flags(&options{}).Lookup(strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(m[1], envPrefix), "_", "-"))) == nil {
				found = append(found, m[1])
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	want := slices.Sorted(slices.Values(corefileVars))
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("corefileVars against the Corefile's {$VAR}s (-corefileVars +Corefile):\n%s", diff)
	}
}

// TestSettingErrorIsOneLine: a malformed value of the environment is one
// line naming the flag and the variable, without the command line's usage;
// skylb corefile refuses an unknown variable, as skylb check does.
func TestSettingErrorIsOneLine(t *testing.T) {
	var out, errs strings.Builder
	if code := Run([]string{"check", "--zone=example.org"}, &out, &errs, env(map[string]string{"SKYLB_TTL": "thirty"})); code != 2 ||
		errs.String() != "skylb: --ttl: \"thirty\" is not a whole number (from SKYLB_TTL)\n" {
		t.Errorf("skylb check with SKYLB_TTL=thirty = %d, %q; want 2 and one line", code, errs.String())
	}
	errs.Reset()
	if code := Run([]string{"corefile", "--in=x", "--out=-"}, &out, &errs, env(map[string]string{"SKYLB_ZONE": "example.org", "SKYLB_REVERSE_ZONES": "192.0.2.0/24"})); code != 2 ||
		!strings.Contains(errs.String(), "SKYLB_REVERSE_ZONES is no setting of skylb's; did you mean SKYLB_REVERSE_ZONE?") {
		t.Errorf("skylb corefile with SKYLB_REVERSE_ZONES = %d, %q; want 2 and the variable named", code, errs.String())
	}
}
