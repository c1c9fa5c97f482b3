package cli

import (
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/source"
)

// parse returns the options of a command line, defaults included.
func parse(t *testing.T, args ...string) options {
	t.Helper()
	var o options
	if err := flags(&o).Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return o
}

func TestZoneConfig(t *testing.T) {
	zones := []string{"k8s.example.com"}
	o := options{nameservers: []string{"ns1=192.0.2.53", "2001:db8::53"}, nsSelector: "app.kubernetes.io/name=coredns"}
	zc, err := o.zoneConfig(zones)
	if err != nil {
		t.Fatal(err)
	}
	if len(zc.Nameservers) != 2 || zc.NameserverSelector == nil || zc.NameserverSelector.String() != "app.kubernetes.io/name=coredns" {
		t.Errorf("zoneConfig = %+v", zc)
	}
	o = options{}
	if zc, err := o.zoneConfig(zones); err != nil || zc.NameserverSelector != nil || len(zc.Nameservers) != 0 {
		t.Errorf("zoneConfig without flags = %+v, %v; want an empty configuration", zc, err)
	}
	for _, bad := range []options{
		{nameservers: []string{"ns1=not-an-ip"}},
		{nameservers: []string{"ns1=192.0.2.1", "ns1=192.0.2.2"}},
		{nsSelector: "app in (a"},
		{nsSelector: "!"},
	} {
		if _, err := bad.zoneConfig(zones); err == nil {
			t.Errorf("zoneConfig(%+v): no error", bad)
		} else if !strings.HasPrefix(err.Error(), "--nameserver") {
			t.Errorf("zoneConfig(%+v) = %v, want an error naming the flag", bad, err)
		}
	}
}

func TestPrintDelegationFromFlags(t *testing.T) {
	var out, errs strings.Builder
	o := parse(t, "--zone=k8s.example.com", "--nameserver=192.0.2.12", "--nameserver=192.0.2.11")
	if code := delegation(&o, &out, &errs); code != 0 || errs.Len() != 0 {
		t.Fatalf("delegation = %d, stderr %q", code, errs.String())
	}
	for _, want := range []string{
		"k8s.example.com.\tIN\tNS\tns1.ns.dns.k8s.example.com.\n",
		"ns1.ns.dns.k8s.example.com.\tIN\tA\t192.0.2.11\n",
		"ns2.ns.dns.k8s.example.com.\tIN\tA\t192.0.2.12\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// Without a reachable cluster the selector is skipped, with a message.
	out.Reset()
	errs.Reset()
	o.nsSelector = "app=dns"
	o.kubeconfig = t.TempDir() + "/missing"
	if code := delegation(&o, &out, &errs); code != 0 || !strings.Contains(errs.String(), "cannot read the cluster") {
		t.Errorf("delegation without a cluster = %d, stderr %q", code, errs.String())
	}

	// No nameserver at all: nothing to print.
	out.Reset()
	errs.Reset()
	o = parse(t, "--zone=k8s.example.com")
	if code := delegation(&o, &out, &errs); code == 0 || out.Len() != 0 {
		t.Errorf("delegation without nameservers = %d, output %q", code, out.String())
	}
}

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// flagsPage is the page whose Flags table lists every flag of every command.
const flagsPage = repoRoot + "/manifests/README.md"

// TestFlagsTable checks the Flags table of flagsPage against the command
// line: every flag of every command is listed, and every flag listed exists.
func TestFlagsTable(t *testing.T) {
	b, err := os.ReadFile(flagsPage)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Flags\n")
	if !ok {
		t.Fatalf("%s has no Flags section", flagsPage)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	listed := make(map[string]bool)
	for _, line := range strings.Split(table, "\n") {
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(first, -1) {
			listed[m[1]] = true
		}
	}
	defined := make(map[string]bool)
	for _, c := range commands() {
		c.flagSet(&options{}).VisitAll(func(f *pflag.Flag) { defined[f.Name] = true })
	}
	for name := range defined {
		if !listed[name] {
			t.Errorf("flag --%s is not in the Flags table of %s", name, flagsPage)
		}
	}
	for name := range listed {
		if !defined[name] {
			t.Errorf("the Flags table of %s lists --%s, which is not a flag", flagsPage, name)
		}
	}
}

func TestConfigWaitsOnlyForMissingFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := dir + "/garbage.crt"
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ca      string
		wantErr bool
	}{
		{"missing CA file: waited for", dir + "/late/ca.crt", false},
		{"CA file without a certificate: refused", garbage, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, "--zone=example.org", "--etcd-ca-file="+tt.ca,
				"--etcd-cert-file="+dir+"/late/tls.crt", "--etcd-key-file="+dir+"/late/tls.key")
			_, err := o.config()
			if (err != nil) != tt.wantErr {
				t.Errorf("config() = %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "--etcd-") {
				t.Errorf("config() = %v, want an error naming the flags", err)
			}
		})
	}
}

// runConfig parses the flags of "skylb run", a zone and an etcd endpoint
// and args, with the environment environ, and returns the options and their
// config. When wantErr is set, config must fail with an error that starts
// with it, and ok is false.
func runConfig(t *testing.T, args []string, environ map[string]string, wantErr string) (o *options, cfg app.Config, ok bool) {
	t.Helper()
	run, _ := lookup("run")
	o, err := run.parse(append([]string{"--zone=example.org", "--etcd-endpoints=http://127.0.0.1:2379"}, args...), environ)
	if err != nil {
		t.Fatalf("parse() error = %v", err)
	}
	cfg, err = o.config()
	if wantErr != "" {
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Fatalf("config() error = %v, want one starting %q", err, wantErr)
		}
		return nil, app.Config{}, false
	}
	if err != nil {
		t.Fatalf("config() error = %v", err)
	}
	return o, cfg, true
}

func TestKubeAPIRates(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		api, events kubeclient.Rate
		wantErr     string
	}{
		{name: "defaults", api: kubeclient.Rate{QPS: 50, Burst: 100}, events: kubeclient.Rate{QPS: 10, Burst: 25}},
		{name: "flags", args: []string{"--kube-api-qps=200", "--kube-api-burst=400", "--event-qps=2.5", "--event-burst=5"},
			api: kubeclient.Rate{QPS: 200, Burst: 400}, events: kubeclient.Rate{QPS: 2.5, Burst: 5}},
		{name: "from the environment", env: map[string]string{"SKYLB_KUBE_API_QPS": "20", "SKYLB_EVENT_BURST": "50"},
			api: kubeclient.Rate{QPS: 20, Burst: 100}, events: kubeclient.Rate{QPS: 10, Burst: 50}},
		{name: "no rate", args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps and --kube-api-burst: must be greater than 0"},
		{name: "no burst", args: []string{"--event-burst=0"}, wantErr: "--event-qps and --event-burst: must be greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _, ok := runConfig(t, tt.args, tt.env, tt.wantErr)
			if !ok {
				return
			}
			if o.kubeAPI != tt.api || o.events != tt.events {
				t.Errorf("Got rates %+v and %+v, want %+v and %+v", o.kubeAPI, o.events, tt.api, tt.events)
			}
		})
	}
}

// TestScopeConfig: the flags that narrow what skylb publishes, from the
// command line and from the environment, and the errors that name them.
func TestScopeConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // Scope.String()
		wantErr string // the start of the error
	}{
		{name: "everything by default", want: ""},
		{name: "repeated and comma-separated namespaces", args: []string{"--namespace=shop,blog", "--namespace=shop"}, want: "namespace=blog,shop"},
		{name: "every flag", args: []string{"--namespace=shop", "--source=service,ingress,gateway-httproute", "--label-selector=dns=public",
			"--ingress-class=nginx", "--gateway-class=public", "--gateway-class=internal"},
			want: "namespace=shop source=service,ingress,gateway-httproute label-selector=dns=public ingress-class=nginx gateway-class=internal,public"},
		{name: "from the environment", env: map[string]string{"SKYLB_NAMESERVER": "", "SKYLB_NAMESPACE": "shop, blog", "SKYLB_SOURCE": "service",
			"SKYLB_LABEL_SELECTOR": "dns in (public)", "SKYLB_INGRESS_CLASS": "", "SKYLB_GATEWAY_CLASS": ""},
			want: "namespace=blog,shop source=service label-selector=dns in (public)"},
		{name: "a blank selector is none", args: []string{"--label-selector= "}, want: ""},
		{name: "a namespace that is no name", args: []string{"--namespace=Shop"}, wantErr: `--namespace: "Shop" is not a namespace name`},
		{name: "an unknown source", args: []string{"--source=services"}, wantErr: `--source: "services" is not one of service, ingress, gateway, gateway-httproute, gateway-grpcroute, gateway-tlsroute`},
		{name: "an unknown source from the environment", env: map[string]string{"SKYLB_SOURCE": "pods"}, wantErr: `--source: "pods" is not one of`},
		{name: "a selector that does not parse", args: []string{"--label-selector=dns in (public"}, wantErr: "--label-selector: "},
		{name: "an ingress class that is no name", args: []string{"--ingress-class=Nginx Plus"}, wantErr: `--ingress-class: "Nginx Plus" is not a class name`},
		{name: "a GatewayClass that is no name", args: []string{"--gateway-class=_"}, wantErr: `--gateway-class: "_" is not a GatewayClass name`},
		{name: "ingress classes without Ingresses", args: []string{"--source=service", "--ingress-class=nginx"}, wantErr: "--ingress-class: --source does not include ingress"},
		{name: "GatewayClasses without the Gateway API's sources", args: []string{"--source=service", "--gateway-class=public"}, wantErr: "--gateway-class: --source has no Gateway API source"},
		{name: "GatewayClasses without the Gateway API", args: []string{"--gateway-api=false", "--gateway-class=public"}, wantErr: "--gateway-class: needs --gateway-api"},
		{name: "routes without the Gateway API", args: []string{"--gateway-api=false", "--source=gateway-tlsroute"}, wantErr: "--source: the Gateway API's sources need --gateway-api"},
		{name: "DNSEndpoints without --dnsendpoint", args: []string{"--source=service,crd"}, wantErr: "--source: crd needs --dnsendpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg, ok := runConfig(t, tt.args, tt.env, tt.wantErr)
			if !ok {
				return
			}
			if got := cfg.Controller.Scope.String(); got != tt.want {
				t.Errorf("config().Scope = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConfigErrorsNameTheFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string // the error's beginning
	}{
		{args: []string{"--reverse-zone=192.0.2.0/25"}, want: "--reverse-zone: "},
		{args: []string{"--reverse-zone=192.0.2.0/24", "--reverse-zone=192.0.0.0/16"}, want: "--reverse-zone: "},
		{args: []string{"--reverse-zone=2001:db8::1/64"}, want: "--reverse-zone: "},
		{args: []string{"--zone=2.0.192.in-addr.arpa"}, want: "--zone: 2.0.192.in-addr.arpa holds reverse names"},
		{args: []string{"--zone=arpa"}, want: "--zone: arpa holds reverse names"},
		{args: []string{"--external-name-services=some"}, want: "--external-name-services: "},
		{args: []string{"--view-network=internal=10.0.0.0/8"}, want: "--view-network: \"internal=10.0.0.0/8\": no --view or --view-zone internal"},
		{args: []string{"--view=internal=pods", "--view-network=internal=10.0.0.0/33"}, want: "--view-network: "},
		{args: []string{"--view=internal=pods", "--view-network=internal"}, want: "--view-network: "},
		{args: []string{"--view=internal=pods", "--view-network=10.0.0.0/8"}, want: "--view-network: \"10.0.0.0/8\": want VIEW=CIDR"},
		{args: []string{"--coredns-views=coredns-views"}, want: "--coredns-views: "},
		{args: []string{"--view-zone=Zone-A=a"}, want: "--view-zone: "},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := parse(t, append([]string{"--zone=example.org"}, tt.args...)...)
			if _, err := o.config(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("config() = %v, want an error beginning %q", err, tt.want)
			}
		})
	}
	o := parse(t, "--zone=example.org", "--reverse-zone=192.0.2.0/24", "--reverse-zone=2001:db8::/32", "--external-name-services=all",
		"--etcd-endpoints=http://127.0.0.1:2379")
	cfg, err := o.config()
	if err != nil {
		t.Fatalf("config() = %v", err)
	}
	if len(cfg.Controller.ReverseZones) != 2 || cfg.Controller.ReverseZones[0].Name != "2.0.192.in-addr.arpa" || cfg.Controller.ReverseZones[1].Name != "8.b.d.0.1.0.0.2.ip6.arpa" {
		t.Errorf("ReverseZones = %+v, want 2.0.192.in-addr.arpa and 8.b.d.0.1.0.0.2.ip6.arpa", cfg.Controller.ReverseZones)
	}
	if cfg.Controller.Source.ExternalNames != "all" {
		t.Errorf("Source.ExternalNames = %q, want all", cfg.Controller.Source.ExternalNames)
	}
}

// A view of a zone is one setting: --view-zone declares it, and its CoreDNS
// block takes the zone's nodes' networks unless --view-network gives some.
func TestViewBlocksConfig(t *testing.T) {
	o := parse(t, "--zone=example.org", "--etcd-endpoints=http://127.0.0.1:2379", "--address-source=nodes",
		"--view=internal=cluster-ip", "--view-zone=zone-a=europe-a", "--view-zone=internal=europe-b",
		"--view-network=internal=10.0.0.5/8", "--view-network=192.168.0.0/16", "--coredns-views=skylb-coredns/coredns-views")
	cfg, err := o.config()
	if err != nil {
		t.Fatalf("config() = %v", err)
	}
	want := []source.View{{Name: "internal", Source: source.ModeClusterIP, Zone: "europe-b"}, {Name: "zone-a", Source: source.ModeNodes, Zone: "europe-a"}}
	if !slices.Equal(cfg.Controller.Source.Views, want) {
		t.Errorf("views %+v, want %+v", cfg.Controller.Source.Views, want)
	}
	b := cfg.ViewBlocks
	if b == nil || b.Namespace != "skylb-coredns" || b.Name != "coredns-views" || len(b.Networks) != 1 ||
		!slices.Equal(b.Networks["internal"], []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")}) {
		t.Errorf("ViewBlocks %+v, want skylb-coredns/coredns-views with internal's two networks", b)
	}
	o = parse(t, "--zone=example.org", "--etcd-endpoints=http://127.0.0.1:2379", "--view-zone=zone-a=a")
	if cfg, err := o.config(); err != nil || cfg.ViewBlocks != nil {
		t.Errorf("without --coredns-views: %+v, %v; want no blocks kept", cfg.ViewBlocks, err)
	}
	// From the environment, whose lists are split at commas.
	var eo options
	fs := flags(&eo)
	if err := fs.Parse([]string{"--zone=example.org", "--etcd-endpoints=http://127.0.0.1:2379"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SKYLB_VIEW": "internal=pods,lab=pods", "SKYLB_VIEW_NETWORK": "internal=10.0.0.0/8,192.168.0.0/16,lab=127.0.0.2/32",
		"SKYLB_COREDNS_VIEWS": "skylb-coredns/coredns-views"}
	if _, err := settingsFromEnv(fs, env); err != nil {
		t.Fatal(err)
	}
	cfg, err = eo.config()
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.ViewBlocks.Networks; len(n) != 2 || len(n["internal"]) != 2 || len(n["lab"]) != 1 {
		t.Errorf("from SKYLB_VIEW_NETWORK: %v, want internal's two networks and lab's one", n)
	}
}

func TestReverseZonesAndExternalNamesFromEnv(t *testing.T) {
	var o options
	fs := flags(&o)
	if err := fs.Parse([]string{"--zone=example.org", "--etcd-endpoints=http://127.0.0.1:2379"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SKYLB_REVERSE_ZONE": "192.0.2.0/24, 2001:db8::/32", "SKYLB_EXTERNAL_NAME_SERVICES": "none"}
	if _, err := settingsFromEnv(fs, env); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config()
	if err != nil {
		t.Fatalf("config() = %v", err)
	}
	var names []string
	for _, z := range cfg.Controller.ReverseZones {
		names = append(names, z.Name)
	}
	if want := []string{"2.0.192.in-addr.arpa", "8.b.d.0.1.0.0.2.ip6.arpa"}; !slices.Equal(names, want) || cfg.Controller.Source.ExternalNames != "none" {
		t.Errorf("from the environment: reverse zones %q, ExternalName Services %q; want %q and none", names, cfg.Controller.Source.ExternalNames, want)
	}
}

// TestLeaderIdentity: a replica holds the Lease as <host name>_<random>, so
// that two replicas on one host hold it under two names.
func TestLeaderIdentity(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	_, a, _ := runConfig(t, []string{"--leader-elect", "--leader-elect-namespace=skylb"}, nil, "")
	_, b, _ := runConfig(t, []string{"--leader-elect", "--leader-elect-namespace=skylb"}, nil, "")
	for _, id := range []string{a.Leader.Identity, b.Leader.Identity} {
		name, suffix, ok := strings.Cut(id, "_")
		if !ok || name != host || len(suffix) != 16 {
			t.Errorf("Got identity %q, want %s_<16 hex digits>", id, host)
		}
	}
	if a.Leader.Identity == b.Leader.Identity {
		t.Errorf("Got identity %q twice, want two replicas on one host told apart", a.Leader.Identity)
	}
}

// TestEtcdMaxTxnOps: the transaction size reaches the publisher's
// configuration, from the command line and from the environment; a size
// below one is refused, and so is one without room for a name's addresses
// all replaced at once.
func TestEtcdMaxTxnOps(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    int
		wantErr string
	}{
		{name: "default, etcd's", want: 128},
		{name: "flag", args: []string{"--etcd-max-txn-ops=512"}, want: 512},
		{name: "from the environment", env: map[string]string{"SKYLB_ETCD_MAX_TXN_OPS": "256"}, want: 256},
		{name: "zero", args: []string{"--etcd-max-txn-ops=0"}, wantErr: "--etcd-max-txn-ops: must be at least 1"},
		{name: "room for a name's addresses replaced", args: []string{"--max-addresses-per-name=100", "--etcd-max-txn-ops=200"}, want: 200},
		{name: "no room for a name's addresses replaced", args: []string{"--max-addresses-per-name=100"},
			wantErr: "--max-addresses-per-name=100: a name whose addresses all change is written in one etcd transaction of 200 operations, more than --etcd-max-txn-ops=128"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, cfg, ok := runConfig(t, tt.args, tt.env, tt.wantErr)
			if ok && cfg.Publish.MaxTxnOps != tt.want {
				t.Errorf("EtcdMaxTxnOps = %d, want %d", cfg.Publish.MaxTxnOps, tt.want)
			}
		})
	}
}
