package cli

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/etcdclient"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/leader"
	"github.com/skylb/skylb/internal/reload"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/source"
)

// options holds the values of the command line's flags, as parsed; config
// validates them.
type options struct {
	kubeconfig       string
	kubeAPI          kubeclient.Rate // requests per group version
	events           kubeclient.Rate
	zones            []string
	etcd             etcdclient.Config
	prefix           string
	etcdMaxTxnOps    int
	ttl              uint32
	owner            string
	defaultNamespace string
	apexNamespaces   []string
	resync           time.Duration
	addressSource    string
	views            []string
	viewZones        []string
	viewNetworks     []string
	corednsViews     string
	corednsAddress   string
	forwardService   string // skylb delegation's own
	lbClass          string
	nodeAddrTypes    []string
	ingressService   string
	externalNames    string
	reverseZones     []string
	httpAddress      string
	deniedCIDRs      []string
	allowedCIDRs     []string
	maxNames         int
	maxAddresses     int
	maxDeleteRatio   float64
	claimPrefix      string
	recordExpiry     time.Duration
	failbackHoldDown time.Duration
	clusterLabel     bool
	leaderElect      bool
	leader           leader.Config
	healthWorkers    int
	noEndpointsGrace time.Duration
	nameservers      []string
	nsSelector       string
	printDelegation  bool
	dryRun           bool
	once             bool
	srv              bool
	gatewayAPI       bool
	dnsEndpoint      bool
	gatewayPoll      time.Duration
	namespaces       []string
	labelSelector    string
	ingressClasses   []string
	gatewayClasses   []string
	sources          []string
	logLevel         string
	logFormat        string
	showVersion      bool
	output           string                   // skylb records -o
	reload           reload.Config            // skylb coredns-reloader's own
	corefile         struct{ in, out string } // skylb corefile's own
	// fromEnv maps each flag set from the environment to its variable.
	fromEnv map[string]string
	// env is the environment the command runs in; flags, the flags as
	// parsed, set or not.
	env   map[string]string
	flags *pflag.FlagSet
}

// flags defines the flags of "skylb run", with their defaults, on o; the
// other commands read some of them (see commands).
func flags(o *options) *pflag.FlagSet {
	fs := newFlagSet("skylb")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means in-cluster, then $KUBECONFIG, then ~/.kube/config")
	fs.Float32Var(&o.kubeAPI.QPS, "kube-api-qps", 50, "requests per second to the Kubernetes API server, on average, for each API group (Service status writes, the leader's Lease); Events have their own limit")
	fs.IntVar(&o.kubeAPI.Burst, "kube-api-burst", 100, "requests to the Kubernetes API server at once, above --kube-api-qps")
	fs.Float32Var(&o.events.QPS, "event-qps", app.DefaultEventQPS, "Events sent per second, on average; what the queue cannot hold is dropped")
	fs.IntVar(&o.events.Burst, "event-burst", 25, "Events sent at once, above --event-qps")
	fs.StringSliceVar(&o.zones, "zone", nil, "DNS zone served, e.g. example.org; repeatable or comma-separated; the first holds generated names (required)")
	fs.StringSliceVar(&o.etcd.Endpoints, "etcd-endpoints", []string{"https://127.0.0.1:2379"}, "etcd endpoints, comma-separated")
	fs.StringVar(&o.etcd.CAFile, "etcd-ca-file", "", "CA certificate that signed etcd's server certificate")
	fs.StringVar(&o.etcd.CertFile, "etcd-cert-file", "", "client certificate for etcd (re-read when it changes)")
	fs.StringVar(&o.etcd.KeyFile, "etcd-key-file", "", "client key for etcd (re-read when it changes)")
	fs.StringVar(&o.etcd.ServerName, "etcd-server-name", "", "name to verify in etcd's server certificate, if not the endpoint's host")
	fs.StringVar(&o.prefix, "etcd-prefix", "/skydns", "etcd key prefix CoreDNS's etcd plugin reads")
	fs.IntVar(&o.etcdMaxTxnOps, "etcd-max-txn-ops", 128, "most operations in one etcd transaction, at most etcd's --max-txn-ops (128 unless set there); halved while etcd refuses that many")
	fs.Uint32Var(&o.ttl, "ttl", 30, "record TTL in seconds")
	fs.StringVar(&o.owner, "owner-id", "default", "identity of this cluster's records, a DNS label; each cluster sharing an etcd needs its own")
	fs.StringVar(&o.claimPrefix, "claim-prefix", "/skylb/claims", "etcd prefix where the clusters sharing the etcd claim their names; empty claims none")
	fs.DurationVar(&o.recordExpiry, "record-expiry", 0, "when set (e.g. 2m), this cluster's claims expire that long after skylb stops renewing their etcd lease, and the other clusters sharing the etcd then delete the records they held; 0 keeps them until skylb removes them")
	fs.DurationVar(&o.failbackHoldDown, "failback-hold-down", time.Minute, "how long a preferred cluster of a failover name (skylb.io/cluster-policy: failover), healthy again, waits before it takes the name back from the healthy cluster answering it")
	fs.BoolVar(&o.clusterLabel, "cluster-label", false, "insert the owner id before the zone in generated names: <service>.<namespace>.<owner-id>.<zone>")
	fs.StringVar(&o.defaultNamespace, "default-namespace", "", "also publish Services of this namespace as <service>.<zone>")
	fs.StringSliceVar(&o.apexNamespaces, "apex-namespaces", nil, "namespaces whose objects may publish a zone's apex (e.g. example.org itself), comma-separated; no other namespace may")
	fs.DurationVar(&o.resync, "resync-interval", 5*time.Minute, "forced full reconciliation period (0 disables)")
	fs.StringVar(&o.addressSource, "address-source", "auto", "where addresses come from: auto, nodes, pods or status")
	fs.StringSliceVar(&o.views, "view", nil, "a view besides the default one, NAME=ADDRESS-SOURCE (e.g. internal=pods; auto, nodes, pods, status or cluster-ip): every name is also published under <etcd-prefix>-NAME with the Services' addresses from that source, for CoreDNS's view plugin to answer the view's clients from; repeatable or comma-separated")
	fs.StringSliceVar(&o.viewZones, "view-zone", nil, "VIEW=ZONE: the clients of the view are in the topology zone ZONE (topology.kubernetes.io/zone); a Service with spec.trafficDistribution PreferClose (or topology-aware routing) is answered there with its addresses in that zone, all of them when it has none; a view not given by --view is declared with the --address-source; repeatable or comma-separated")
	fs.StringSliceVar(&o.viewNetworks, "view-network", nil, "VIEW=CIDR[,CIDR...]: the networks of the view's clients, for its CoreDNS block (--coredns-views); a view of a zone without one answers the networks of the zone's nodes (their pod CIDRs and addresses); repeatable or comma-separated: a CIDR without VIEW= belongs to the view before it (internal=10.0.0.0/8,192.168.0.0/16)")
	fs.StringVar(&o.corednsViews, "coredns-views", "", "NAMESPACE/NAME of a ConfigMap CoreDNS imports *.view files from: skylb keeps the views' server blocks in its key skylb.view (see coredns/README.md, Views); empty writes none")
	fs.StringVar(&o.corednsAddress, "coredns-address", "", "HOST:PORT of the CoreDNS that serves the zones, e.g. coredns.skylb-coredns.svc:53: skylb asks it for each zone's SOA at start and every minute, and says (a log line, an Event on its Lease, skylb_zone_served) when it does not serve one; empty asks nothing")
	fs.StringVar(&o.lbClass, "load-balancer-class", "", "implement LoadBalancer Services of this class; empty means those without a class")
	fs.StringSliceVar(&o.nodeAddrTypes, "node-address-types", []string{"ExternalIP", "InternalIP"}, "node address types to publish, in order of preference")
	fs.StringVar(&o.ingressService, "ingress-service", "", "namespace/name of the ingress controller's Service; Ingresses without a status get its addresses")
	fs.StringSliceVar(&o.reverseZones, "reverse-zone", nil, "a reverse zone as a CIDR, e.g. 192.0.2.0/24 or 2001:db8::/32, on a label boundary (IPv4 /8, /16, /24; IPv6 a multiple of 4): published addresses in it get a PTR record; repeatable or comma-separated")
	fs.StringVar(&o.externalNames, "external-name-services", string(source.ExternalNamesAnnotated), "which ExternalName Services are published as a CNAME to their external name: annotated (those with a hostname annotation), all or none")
	var denied []string
	for _, p := range source.DefaultDeniedCIDRs {
		denied = append(denied, p.String())
	}
	fs.BoolVar(&o.srv, "srv", true, "publish SRV records _<port>._<protocol>.<name> for the named ports of Services")
	fs.BoolVar(&o.gatewayAPI, "gateway-api", true, "publish Gateway API Gateways and HTTPRoutes, GRPCRoutes and TLSRoutes once their CRDs are served")
	fs.BoolVar(&o.dnsEndpoint, "dnsendpoint", false, "publish external-dns's DNSEndpoints (externaldns.k8s.io/v1alpha1) once their CRD is served")
	fs.DurationVar(&o.gatewayPoll, "gateway-api-poll-interval", time.Minute, "how often API discovery is asked whether the Gateway API CRDs (and with --dnsendpoint, the DNSEndpoint CRD) have been installed")
	fs.StringSliceVar(&o.namespaces, "namespace", nil, "publish only the objects of these namespaces, watched one by one (repeatable or comma-separated); empty: all namespaces")
	fs.StringVar(&o.labelSelector, "label-selector", "", "publish only the Services, Ingresses, Gateways and routes whose labels match this selector, e.g. dns=public")
	fs.StringSliceVar(&o.ingressClasses, "ingress-class", nil, "publish only the Ingresses of these classes (spec.ingressClassName or the annotation kubernetes.io/ingress.class); repeatable")
	fs.StringSliceVar(&o.gatewayClasses, "gateway-class", nil, "publish only the Gateways of these GatewayClasses and the routes attached to them; repeatable")
	fs.StringSliceVar(&o.sources, "source", nil, "publish only these kinds of object: "+strings.Join(scope.SourceNames(), ", ")+"; repeatable; empty: all")
	fs.StringSliceVar(&o.deniedCIDRs, "denied-cidrs", denied, "addresses never published; setting it replaces the default")
	fs.StringSliceVar(&o.allowedCIDRs, "allowed-cidrs", nil, "when set, only addresses in these CIDRs are published")
	fs.IntVar(&o.maxNames, "max-names-per-object", source.DefaultMaxNames, "names one object may publish")
	fs.IntVar(&o.maxAddresses, "max-addresses-per-name", source.DefaultMaxAddresses, "addresses and TXT records one name may have")
	fs.Float64Var(&o.maxDeleteRatio, "max-delete-ratio", 0.5, "largest share of skylb's records a full reconciliation may delete at once (1 allows all)")
	fs.StringVar(&o.httpAddress, "http-address", ":8080", "address of the HTTP endpoints /healthz, /readyz and /metrics; empty disables them")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "run leader election: of several replicas only the leader writes, fenced in etcd")
	fs.StringVar(&o.leader.Namespace, "leader-elect-namespace", inClusterNamespace(), "namespace of the leader-election Lease")
	fs.StringVar(&o.leader.Name, "leader-elect-id", "skylb", "name of the leader-election Lease")
	fs.DurationVar(&o.leader.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a leader's Lease lasts without renewal")
	fs.DurationVar(&o.leader.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it steps down")
	fs.DurationVar(&o.leader.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	fs.IntVar(&o.healthWorkers, "health-workers", 32, "health probes running at once")
	fs.DurationVar(&o.noEndpointsGrace, "no-endpoints-grace", 30*time.Second, "how long a new Service may wait for its first ready endpoints before its NoEndpoints Warning; a Service that had endpoints and lost them is warned about at once")
	fs.StringSliceVar(&o.nameservers, "nameserver", nil, "a DNS server of the zones, label=IP or IP (IPv4 or IPv6), published as the nameserver <label>.ns.dns.<zone>; repeatable; without a label: ns1, ns2, ... by address; repeatable or comma-separated")
	fs.StringVar(&o.nsSelector, "nameserver-selector", "", "label selector of the DNS server's Service, e.g. app.kubernetes.io/name=coredns: the addresses of the nodes running its ready endpoints are published as nameservers too (for CoreDNS on host port 53 or the host network)")
	fs.BoolVar(&o.printDelegation, "print-delegation", false, "print the NS and glue records the parent zone needs and conditional-forwarder settings, then exit (the same as skylb delegation)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "compute and log every change; write nothing to etcd or to the Kubernetes API")
	fs.BoolVar(&o.once, "once", false, "sync everything once, print a summary and exit")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&o.showVersion, "version", false, "print the version, the commit and the Go version, then exit")
	return fs
}

// newFlagSet returns an empty flag set that prints nothing itself: the
// commands print their usage (see command.usage).
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// inClusterNamespace returns the namespace skylb runs in, or "skylb" outside a cluster.
func inClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "skylb"
	}
	return strings.TrimSpace(string(b))
}
