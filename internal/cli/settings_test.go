package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// env returns a lookup over vars, as os.LookupEnv.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
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
		{name: "a malformed number", env: map[string]string{"SKYLB_TTL": "thirty"}, wantErr: `SKYLB_TTL: invalid argument "thirty" for "--ttl" flag`},
		{name: "a malformed boolean", env: map[string]string{"SKYLB_LEADER_ELECT": "yes please"}, wantErr: "SKYLB_LEADER_ELECT: "},
		{name: "a malformed duration", env: map[string]string{"SKYLB_RECORD_EXPIRY": "2 minutes"}, wantErr: "SKYLB_RECORD_EXPIRY: "},
	}
	run, _ := lookup("run")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := run.parse(tt.args, env(tt.env))
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
	o, err := run.parse([]string{"--zone=example.org"}, env(map[string]string{"SKYLB_TTL": "0", "SKYLB_OWNER_ID": "east"}))
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
	o, err = run.parse([]string{"--zone=example.org", "--ttl=0"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = o.config(); err == nil || withEnv(err, o.fromEnv).Error() != err.Error() {
		t.Errorf("withEnv(config()) with --ttl on the command line = %v, want the flag's error alone", withEnv(err, o.fromEnv))
	}
}
