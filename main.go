// Command skylb publishes Kubernetes LoadBalancer Services and Ingresses as
// SkyDNS records in etcd, for CoreDNS's etcd plugin to serve.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/etcdclient"
	"github.com/skylb/skylb/internal/inventory"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/leader"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/internal/zone"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// records prints what the etcd holds under --etcd-prefix and --claim-prefix,
// by name and owner ("skylb records"). It only reads.
func records(o *options, w io.Writer) error {
	log, err := newLogger("warn", "text")
	if err != nil {
		return err
	}
	o.etcd.Log = log
	c, err := etcdclient.New(o.etcd)
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := inventory.Read(ctx, c, strings.TrimRight(o.prefix, "/"), strings.TrimRight(o.claimPrefix, "/"))
	if err != nil {
		return err
	}
	return inv.Write(w, o.owner)
}

// minRecordExpiry is the shortest --record-expiry: skylb renews the lease every
// third of it, so this leaves a few seconds of etcd or network trouble.
const minRecordExpiry = 5 * time.Second

type options struct {
	kubeconfig       string
	zones            []string
	etcd             etcdclient.Config
	prefix           string
	ttl              uint32
	owner            string
	defaultNamespace string
	apexNamespaces   []string
	resync           time.Duration
	addressSource    string
	lbClass          string
	nodeAddrTypes    []string
	ingressService   string
	httpAddress      string
	deniedCIDRs      []string
	allowedCIDRs     []string
	maxNames         int
	maxAddresses     int
	maxDeleteRatio   float64
	claimPrefix      string
	recordExpiry     time.Duration
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
	gatewayPoll      time.Duration
	logLevel         string
	logFormat        string
	showVersion      bool
}

func main() {
	var o options
	fs := flags(&o)
	args := os.Args[1:]
	listRecords := len(args) > 0 && args[0] == "records"
	if listRecords {
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		fail(err)
	}
	if o.showVersion {
		fmt.Println("skylb", version)
		return
	}
	if o.printDelegation {
		os.Exit(printDelegation(&o, os.Stdout, os.Stderr))
	}
	if listRecords {
		if err := records(&o, os.Stdout); err != nil {
			fail(err)
		}
		return
	}
	cfg, err := o.config()
	if err != nil {
		fail(err)
	}
	log := cfg.Log
	kubeclient.RouteKlog(log, 0)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	waiter := kubeclient.New(ctx.Done(), 0, log.WithField("component", "kube-client"))
	clients, err := kubeClients(o.kubeconfig, waiter.Wrap)
	if err != nil {
		fail(fmt.Errorf("--kubeconfig: %w", err))
	}
	o.etcd.Log = log
	tlsFiles := func() error { _, err := o.etcd.TLS(); return err }
	if err := app.WaitForFiles(ctx, cfg, tlsFiles, etcdFilesFix); err != nil {
		if ctx.Err() != nil {
			log.Info("skylb stopped")
			return
		}
		fail(fmt.Errorf("--etcd-endpoints/--etcd-*-file: %w", err))
	}
	etcd, err := etcdclient.New(o.etcd)
	if err != nil {
		fail(fmt.Errorf("etcd client: %w", err))
	}
	defer etcd.Close()

	log.WithFields(logrus.Fields{"version": version, "zones": cfg.Source.Zones, "owner": cfg.Owner, "etcd": o.etcd.Endpoints}).Info("skylb starting")
	clients.APIServerErr = waiter.Err
	if err := app.Run(ctx, cfg, clients, etcd); err != nil {
		log.WithError(err).Error("skylb stopped")
		os.Exit(1)
	}
	log.Info("skylb stopped")
}

// etcdFilesFix tells what to do about a missing etcd client file.
const etcdFilesFix = "skylb starts once it is there; mount the Secret holding the etcd client certificate (ca.crt, tls.crt, tls.key), or correct --etcd-ca-file, --etcd-cert-file and --etcd-key-file"

// flags defines skylb's command line, with its defaults, on o.
func flags(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("skylb", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage:\n  skylb [flags]          publish Services and Ingresses in etcd\n"+
			"  skylb records [flags]  list the records in etcd by name and owner (reads only the --etcd-* flags, --claim-prefix and --owner-id)\n\nFlags:\n%s", fs.FlagUsages())
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means in-cluster, then $KUBECONFIG, then ~/.kube/config")
	fs.StringArrayVar(&o.zones, "zone", nil, "DNS zone served, e.g. example.org; repeatable; the first holds generated names (required)")
	fs.StringSliceVar(&o.etcd.Endpoints, "etcd-endpoints", []string{"https://127.0.0.1:2379"}, "etcd endpoints, comma-separated")
	fs.StringVar(&o.etcd.CAFile, "etcd-ca-file", "", "CA certificate that signed etcd's server certificate")
	fs.StringVar(&o.etcd.CertFile, "etcd-cert-file", "", "client certificate for etcd (re-read when it changes)")
	fs.StringVar(&o.etcd.KeyFile, "etcd-key-file", "", "client key for etcd (re-read when it changes)")
	fs.StringVar(&o.etcd.ServerName, "etcd-server-name", "", "name to verify in etcd's server certificate, if not the endpoint's host")
	fs.StringVar(&o.prefix, "etcd-prefix", "/skydns", "etcd key prefix CoreDNS's etcd plugin reads")
	fs.Uint32Var(&o.ttl, "ttl", 30, "record TTL in seconds")
	fs.StringVar(&o.owner, "owner-id", "default", "identity of this cluster's records, a DNS label; each cluster sharing an etcd needs its own")
	fs.StringVar(&o.claimPrefix, "claim-prefix", "/skylb/claims", "etcd prefix where the clusters sharing the etcd claim their names; empty claims none")
	fs.DurationVar(&o.recordExpiry, "record-expiry", 0, "when set (e.g. 2m), this cluster's records expire that long after skylb stops renewing their etcd lease; 0 keeps them until skylb removes them")
	fs.BoolVar(&o.clusterLabel, "cluster-label", false, "insert the owner id before the zone in generated names: <service>.<namespace>.<owner-id>.<zone>")
	fs.StringVar(&o.defaultNamespace, "default-namespace", "", "also publish Services of this namespace as <service>.<zone>")
	fs.StringSliceVar(&o.apexNamespaces, "apex-namespaces", nil, "namespaces whose objects may publish a zone's apex (e.g. example.org itself), comma-separated; no other namespace may")
	fs.DurationVar(&o.resync, "resync-interval", 5*time.Minute, "forced full reconciliation period (0 disables)")
	fs.StringVar(&o.addressSource, "address-source", "auto", "where addresses come from: auto, nodes, pods or status")
	fs.StringVar(&o.lbClass, "load-balancer-class", "", "implement LoadBalancer Services of this class; empty means those without a class")
	fs.StringSliceVar(&o.nodeAddrTypes, "node-address-types", []string{"ExternalIP", "InternalIP"}, "node address types to publish, in order of preference")
	fs.StringVar(&o.ingressService, "ingress-service", "", "namespace/name of the ingress controller's Service; Ingresses without a status get its addresses")
	var denied []string
	for _, p := range source.DefaultDeniedCIDRs {
		denied = append(denied, p.String())
	}
	fs.BoolVar(&o.srv, "srv", true, "publish SRV records _<port>._<protocol>.<name> for the named ports of Services")
	fs.BoolVar(&o.gatewayAPI, "gateway-api", true, "publish Gateway API Gateways and HTTPRoutes, GRPCRoutes and TLSRoutes once their CRDs are served")
	fs.DurationVar(&o.gatewayPoll, "gateway-api-poll-interval", time.Minute, "how often API discovery is asked whether the Gateway API CRDs have been installed")
	fs.StringSliceVar(&o.deniedCIDRs, "denied-cidrs", denied, "addresses never published; setting it replaces the default")
	fs.StringSliceVar(&o.allowedCIDRs, "allowed-cidrs", nil, "when set, only addresses in these CIDRs are published")
	fs.IntVar(&o.maxNames, "max-names-per-object", source.DefaultMaxNames, "names one object may publish")
	fs.IntVar(&o.maxAddresses, "max-addresses-per-name", source.DefaultMaxAddresses, "addresses one name may have")
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
	fs.StringArrayVar(&o.nameservers, "nameserver", nil, "a DNS server of the zones, label=IP or IP (IPv4 or IPv6), published as the nameserver <label>.ns.dns.<zone>; repeatable; without a label: ns1, ns2, ... by address")
	fs.StringVar(&o.nsSelector, "nameserver-selector", "", "label selector of the DNS server's Service, e.g. app.kubernetes.io/name=coredns: the addresses of the nodes running its ready endpoints are published as nameservers too (for CoreDNS on host port 53 or the host network)")
	fs.BoolVar(&o.printDelegation, "print-delegation", false, "print the NS and glue records the parent zone needs and conditional-forwarder settings, then exit; reads the cluster only for --nameserver-selector")
	fs.BoolVar(&o.dryRun, "dry-run", false, "compute and log every change; write nothing to etcd or to the Kubernetes API")
	fs.BoolVar(&o.once, "once", false, "sync everything once, print a summary and exit")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	return fs
}

// config validates the options; every error names its flag.
func (o *options) config() (app.Config, error) {
	zones, err := dnsname.ParseZones(o.zones)
	if err != nil {
		return app.Config{}, fmt.Errorf("--zone: %w", err)
	}
	if !dnsname.IsLabel(o.owner) || len(o.owner) > skydns.MaxOwnerLength {
		return app.Config{}, fmt.Errorf("--owner-id: %q must be a DNS label of at most %d characters", o.owner, skydns.MaxOwnerLength)
	}
	if !strings.HasPrefix(o.prefix, "/") || strings.TrimRight(o.prefix, "/") == "" {
		return app.Config{}, fmt.Errorf("--etcd-prefix: %q must be an absolute path such as /skydns", o.prefix)
	}
	src, err := o.sourceConfig(zones)
	if err != nil {
		return app.Config{}, err
	}
	zoneCfg, err := o.zoneConfig(zones)
	if err != nil {
		return app.Config{}, err
	}
	if o.healthWorkers < 1 {
		return app.Config{}, fmt.Errorf("--health-workers: must be at least 1")
	}
	if o.maxDeleteRatio <= 0 {
		return app.Config{}, fmt.Errorf("--max-delete-ratio: must be greater than 0")
	}
	if o.leaderElect {
		if o.leader.Namespace == "" || !dnsname.IsLabel(o.leader.Namespace) {
			return app.Config{}, fmt.Errorf("--leader-elect-namespace: %q is not a namespace name", o.leader.Namespace)
		}
		if o.leader.LeaseDuration <= o.leader.RenewDeadline || o.leader.RenewDeadline <= o.leader.RetryPeriod || o.leader.RetryPeriod <= 0 {
			return app.Config{}, fmt.Errorf("--leader-elect-lease-duration must exceed --leader-elect-renew-deadline, which must exceed --leader-elect-retry-period")
		}
		host, err := os.Hostname()
		if err != nil {
			return app.Config{}, fmt.Errorf("--leader-elect: identity: %w", err)
		}
		o.leader.Identity = host
		o.leader.EtcdKey = "/skylb/leader/" + o.owner
	}
	if o.noEndpointsGrace < 0 {
		return app.Config{}, fmt.Errorf("--no-endpoints-grace: must not be negative")
	}
	if o.resync < 0 {
		return app.Config{}, fmt.Errorf("--resync-interval: must not be negative")
	}
	claims := strings.TrimRight(o.claimPrefix, "/")
	if o.claimPrefix != "" {
		records := strings.TrimRight(o.prefix, "/")
		if !strings.HasPrefix(claims, "/") || claims == "" {
			return app.Config{}, fmt.Errorf("--claim-prefix: %q must be an absolute path such as /skylb/claims", o.claimPrefix)
		}
		if strings.HasPrefix(claims+"/", records+"/") || strings.HasPrefix(records+"/", claims+"/") {
			return app.Config{}, fmt.Errorf("--claim-prefix: %q must lie outside --etcd-prefix %q, which CoreDNS serves", o.claimPrefix, o.prefix)
		}
	}
	if o.recordExpiry != 0 && o.recordExpiry < minRecordExpiry {
		return app.Config{}, fmt.Errorf("--record-expiry: %v is shorter than %v; a brief etcd or network hiccup must not expire live records", o.recordExpiry, minRecordExpiry)
	}
	if o.gatewayPoll <= 0 {
		return app.Config{}, fmt.Errorf("--gateway-api-poll-interval: must be positive")
	}
	// A missing file is waited for (see app.WaitForFiles); any other error is final.
	if _, err := o.etcd.TLS(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return app.Config{}, fmt.Errorf("--etcd-endpoints/--etcd-*-file: %w", err)
	}
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return app.Config{}, err
	}
	return app.Config{
		Source:           src,
		MaxDeleteRatio:   o.maxDeleteRatio,
		ClaimPrefix:      claims,
		RecordExpiry:     o.recordExpiry,
		Version:          version,
		LeaderElect:      o.leaderElect,
		Leader:           o.leader,
		DryRun:           o.dryRun,
		HealthWorkers:    o.healthWorkers,
		NoEndpointsGrace: o.noEndpointsGrace,
		StartGCPercent:   startGCPercent(),
		Zone:             zoneCfg,
		Once:             o.once,
		Summary:          os.Stdout,
		Prefix:           strings.TrimRight(o.prefix, "/"),
		Owner:            o.owner,
		ResyncInterval:   o.resync,
		EtcdTimeout:      5 * time.Second,
		HTTPAddress:      o.httpAddress,
		GatewayAPI:       o.gatewayAPI,
		GatewayPoll:      o.gatewayPoll,
		Log:              log,
	}, nil
}

// startGCPercent is the collector's GOGC during the cold start (see
// app.Config.StartGCPercent), unless GOGC is set: it keeps the peak heap
// near what is live, for a few more collections while the caches fill.
func startGCPercent() int {
	if os.Getenv("GOGC") != "" {
		return 0
	}
	return app.DefaultStartGCPercent
}

func newLogger(level, format string) (*logrus.Logger, error) {
	log := logrus.New()
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log.SetLevel(lvl)
	switch format {
	case "text":
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		log.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, fmt.Errorf("--log-format: %q is neither text nor json", format)
	}
	return log, nil
}

// sourceConfig validates the flags that say how objects become records.
func (o *options) sourceConfig(zones dnsname.Zones) (source.Config, error) {
	cfg := source.Config{
		Zones: zones, TTL: o.ttl, DefaultNamespace: o.defaultNamespace, LoadBalancerClass: o.lbClass,
		IngressService: o.ingressService, MaxNames: o.maxNames, MaxAddresses: o.maxAddresses,
		SRV: o.srv, ApexNamespaces: o.apexNamespaces,
	}
	if o.clusterLabel {
		cfg.ClusterLabel = o.owner
	}
	if o.ttl < 1 || o.ttl > source.MaxTTL {
		return cfg, fmt.Errorf("--ttl: %d is outside 1 to %d seconds", o.ttl, source.MaxTTL)
	}
	if o.defaultNamespace != "" && !dnsname.IsLabel(o.defaultNamespace) {
		return cfg, fmt.Errorf("--default-namespace: %q is not a namespace name", o.defaultNamespace)
	}
	for _, ns := range o.apexNamespaces {
		if !dnsname.IsLabel(ns) {
			return cfg, fmt.Errorf("--apex-namespaces: %q is not a namespace name", ns)
		}
	}
	var err error
	if cfg.AddressSource, err = source.ParseMode(o.addressSource); err != nil {
		return cfg, fmt.Errorf("--address-source: %w", err)
	}
	for _, t := range o.nodeAddrTypes {
		switch at := corev1.NodeAddressType(t); at {
		case corev1.NodeExternalIP, corev1.NodeInternalIP:
			cfg.NodeAddressTypes = append(cfg.NodeAddressTypes, at)
		default:
			return cfg, fmt.Errorf("--node-address-types: %q is neither ExternalIP nor InternalIP", t)
		}
	}
	if o.ingressService != "" {
		ns, name, ok := strings.Cut(o.ingressService, "/")
		if !ok || !dnsname.IsLabel(ns) || !dnsname.IsLabel(name) {
			return cfg, fmt.Errorf("--ingress-service: %q is not namespace/name", o.ingressService)
		}
	}
	if cfg.Filter.Denied, err = source.ParseCIDRs(o.deniedCIDRs); err != nil {
		return cfg, fmt.Errorf("--denied-cidrs: %w", err)
	}
	if cfg.Filter.Allowed, err = source.ParseCIDRs(o.allowedCIDRs); err != nil {
		return cfg, fmt.Errorf("--allowed-cidrs: %w", err)
	}
	if o.maxNames < 1 {
		return cfg, fmt.Errorf("--max-names-per-object: must be at least 1")
	}
	if o.maxAddresses < 1 {
		return cfg, fmt.Errorf("--max-addresses-per-name: must be at least 1")
	}
	return cfg, nil
}

// zoneConfig validates --nameserver and --nameserver-selector.
func (o *options) zoneConfig(zones dnsname.Zones) (*controller.ZoneConfig, error) {
	static, err := zone.ParseStatics(o.nameservers, zones)
	if err != nil {
		return nil, fmt.Errorf("--nameserver: %w", err)
	}
	cfg := &controller.ZoneConfig{Nameservers: static}
	if strings.TrimSpace(o.nsSelector) != "" {
		sel, err := labels.Parse(o.nsSelector)
		if err != nil {
			return nil, fmt.Errorf("--nameserver-selector: %w", err)
		}
		if sel.Empty() {
			return nil, fmt.Errorf("--nameserver-selector: %q selects every Service", o.nsSelector)
		}
		cfg.NameserverSelector = sel
	}
	return cfg, nil
}

// printDelegation prints what the parent zone needs and returns the exit code.
// It reads the cluster, for at most 10 seconds, only for --nameserver-selector.
func printDelegation(o *options, stdout, stderr io.Writer) int {
	zones, err := dnsname.ParseZones(o.zones)
	if err != nil {
		fmt.Fprintln(stderr, "skylb: --zone:", err)
		return 2
	}
	src, err := o.sourceConfig(zones)
	if err == nil {
		var zc *controller.ZoneConfig
		if zc, err = o.zoneConfig(zones); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var kube kubernetes.Interface
			if zc.NameserverSelector != nil {
				if rc, kerr := kubeConfig(o.kubeconfig); kerr == nil {
					rc.Timeout = 10 * time.Second
					kube, _ = kubernetes.NewForConfig(rc)
				}
			}
			if err := app.PrintDelegation(ctx, stdout, stderr, src, zc, kube); err != nil {
				fmt.Fprintln(stderr, "skylb:", err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintln(stderr, "skylb:", err)
	return 2
}

// inClusterNamespace returns the namespace skylb runs in, or "skylb" outside a cluster.
func inClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "skylb"
	}
	return strings.TrimSpace(string(b))
}

// kubeClients builds the Kubernetes, Gateway API and metadata clients from a
// kubeconfig path, or in-cluster config, or $KUBECONFIG and ~/.kube/config,
// with wrap around their transport.
func kubeClients(path string, wrap transport.WrapperFunc) (app.Clients, error) {
	cfg, err := kubeConfig(path)
	if err != nil {
		return app.Clients{}, err
	}
	cfg.Wrap(wrap)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	gw, err := gatewayclient.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return app.Clients{}, err
	}
	return app.Clients{Kube: kube, Gateway: gw, Metadata: meta}, nil
}

// kubeConfig returns the client configuration kubeClient uses.
func kubeConfig(path string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case path != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	default:
		cfg, err = rest.InClusterConfig()
		if err != nil {
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "skylb/" + version
	return cfg, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "skylb:", err)
	os.Exit(2)
}
