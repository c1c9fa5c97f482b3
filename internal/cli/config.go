package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/leader"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/internal/zone"
)

// minRecordExpiry is the shortest --record-expiry: skylb renews the lease every
// third of it, so this leaves a few seconds of etcd or network trouble.
const minRecordExpiry = 5 * time.Second

// config validates the options of skylb run and returns the
// configuration they give; every error names its flag.
func (o *options) config() (app.Config, error) {
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return app.Config{}, err
	}
	zones, reverse, err := o.zonesServed()
	if err != nil {
		return app.Config{}, err
	}
	src, err := o.sourceConfig(zones)
	if err != nil {
		return app.Config{}, err
	}
	blocks, err := o.viewBlocks(src.Views)
	if err != nil {
		return app.Config{}, err
	}
	served := slices.Clone([]string(zones))
	for _, z := range reverse {
		served = append(served, z.Name)
	}
	zoneCfg, err := o.zoneConfig(served)
	if err != nil {
		return app.Config{}, err
	}
	sc, err := o.scope()
	if err != nil {
		return app.Config{}, err
	}
	if err := o.checkLimits(); err != nil {
		return app.Config{}, err
	}
	host, err := os.Hostname()
	if err != nil {
		return app.Config{}, fmt.Errorf("identity: %w", err)
	}
	lead, err := o.leaderConfig(host)
	if err != nil {
		return app.Config{}, err
	}
	claims, err := o.claimDir()
	if err != nil {
		return app.Config{}, err
	}
	if err := checkAddress("--http-address", o.httpAddress); err != nil {
		return app.Config{}, err
	}
	if err := checkAddress("--coredns-address", o.corednsAddress); err != nil {
		return app.Config{}, err
	}
	// A missing file is waited for (see app.WaitForFiles); any other error is final.
	if err := o.etcdFiles(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return app.Config{}, err
	}
	return app.Config{
		Version: currentVersion().Version,
		Controller: controller.Config{
			Source:           src,
			Scope:            sc,
			ResyncInterval:   o.resync,
			DryRun:           o.dryRun,
			HealthWorkers:    o.healthWorkers,
			NoEndpointsGrace: o.noEndpointsGrace,
			Zone:             zoneCfg,
			ReverseZones:     reverse,
			GatewayAPI:       o.gatewayAPI,
			DNSEndpoint:      o.dnsEndpoint,
			GatewayPoll:      o.gatewayPoll,
		},
		Publish: publish.Config{
			Prefix:           strings.TrimRight(o.prefix, "/"),
			Owner:            o.owner,
			Timeout:          5 * time.Second,
			MaxTxnOps:        o.etcdMaxTxnOps,
			MaxDeleteRatio:   o.maxDeleteRatio,
			DryRun:           o.dryRun,
			ClaimPrefix:      claims,
			RecordExpiry:     o.recordExpiry,
			FailbackHoldDown: o.failbackHoldDown,
		},
		LeaderElect:    o.leaderElect,
		Leader:         lead,
		Identity:       host,
		EventQPS:       o.events.QPS,
		StartGCPercent: startGCPercent(o.env),
		ViewBlocks:     blocks,
		Once:           o.once,
		HTTPAddress:    o.httpAddress,
		CoreDNSAddress: o.corednsAddress,
		Log:            log,
	}, nil
}

// viewBlocks returns where the views' CoreDNS blocks are kept, with their
// networks (--coredns-views, --view-network), or nil for nowhere.
func (o *options) viewBlocks(views []source.View) (*app.ViewBlocks, error) {
	// An item without a view's name continues the one before: the
	// environment's SKYLB_VIEW_NETWORK=internal=10.0.0.0/8,192.168.0.0/16
	// comes as two items.
	networks := make(map[string][]netip.Prefix, len(o.viewNetworks))
	view := ""
	for _, s := range o.viewNetworks {
		cidrs := s
		if name, list, ok := strings.Cut(s, "="); ok {
			view, cidrs = strings.TrimSpace(name), list
			if !slices.ContainsFunc(views, func(v source.View) bool { return v.Name == view }) {
				return nil, fmt.Errorf("--view-network: %q: no --view or --view-zone %s", s, view)
			}
		} else if view == "" {
			return nil, fmt.Errorf("--view-network: %q: want VIEW=CIDR[,CIDR...], e.g. internal=10.0.0.0/8,192.168.0.0/16", s)
		}
		for c := range strings.SplitSeq(cidrs, ",") {
			p, err := source.ParsePrefix(strings.TrimSpace(c))
			if err != nil {
				return nil, fmt.Errorf("--view-network: %w", err)
			}
			networks[view] = append(networks[view], p)
		}
	}
	if o.corednsViews == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(o.corednsViews, "/")
	if !ok || !dnsname.IsLabel(ns) || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--coredns-views: %q: want NAMESPACE/NAME of a ConfigMap, e.g. skylb-coredns/coredns-views", o.corednsViews)
	}
	return &app.ViewBlocks{Namespace: ns, Name: name, Networks: networks}, nil
}

// viewsConfig returns the views of --view and of --view-zone; a view that
// --view-zone alone declares takes mode, the --address-source.
func (o *options) viewsConfig(mode source.Mode) ([]source.View, error) {
	var views []source.View
	for _, s := range o.views {
		v, err := source.ParseView(s)
		if err != nil {
			return nil, fmt.Errorf("--view: %w", err)
		}
		if slices.ContainsFunc(views, func(w source.View) bool { return w.Name == v.Name }) {
			return nil, fmt.Errorf("--view: view %q is given twice", v.Name)
		}
		views = append(views, v)
	}
	for _, s := range o.viewZones {
		name, zone, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || strings.TrimSpace(zone) == "" {
			return nil, fmt.Errorf("--view-zone: %q: want VIEW=ZONE, e.g. zone-a=europe-west1-b", s)
		}
		i := slices.IndexFunc(views, func(v source.View) bool { return v.Name == name })
		if i < 0 {
			// A zone's view answers as the default view does, but for the
			// zone's addresses: declared here, it takes --address-source.
			v, err := source.ParseView(name + "=" + string(mode))
			if err != nil {
				return nil, fmt.Errorf("--view-zone: %w", err)
			}
			views, i = append(views, v), len(views)
		}
		if views[i].Zone != "" {
			return nil, fmt.Errorf("--view-zone: view %s is given a zone twice", views[i].Name)
		}
		views[i].Zone = strings.TrimSpace(zone)
	}
	return views, nil
}

// zonesServed returns the zones of --zone and --reverse-zone, once checked
// with --owner-id and --etcd-prefix, which place their records.
func (o *options) zonesServed() (dnsname.Zones, []dnsname.ReverseZone, error) {
	zones, err := dnsname.ParseZones(o.zones)
	if err != nil {
		return nil, nil, fmt.Errorf("--zone: %w", err)
	}
	for _, z := range zones {
		if dnsname.Related(z, dnsname.ReverseSuffix4) || dnsname.Related(z, dnsname.ReverseSuffix6) {
			return nil, nil, fmt.Errorf("--zone: %s holds reverse names: give reverse zones as CIDRs with --reverse-zone", z)
		}
	}
	reverse, err := dnsname.ParseReverseZones(o.reverseZones)
	if err != nil {
		return nil, nil, fmt.Errorf("--reverse-zone: %w", err)
	}
	// Where the records go, and under which owner.
	if !dnsname.IsLabel(o.owner) || len(o.owner) > skydns.MaxOwnerLength {
		return nil, nil, fmt.Errorf("--owner-id: %q must be a DNS label of at most %d characters", o.owner, skydns.MaxOwnerLength)
	}
	if !strings.HasPrefix(o.prefix, "/") || strings.TrimRight(o.prefix, "/") == "" {
		return nil, nil, fmt.Errorf("--etcd-prefix: %q must be an absolute path such as /skydns", o.prefix)
	}
	return zones, reverse, nil
}

// checkLimits checks the options that are numbers and durations.
func (o *options) checkLimits() error {
	for _, r := range []struct {
		flag string
		rate kubeclient.Rate
	}{{"--kube-api", o.kubeAPI}, {"--event", o.events}} {
		if r.rate.QPS <= 0 || r.rate.Burst < 1 {
			return fmt.Errorf("%s-qps and %s-burst: must be greater than 0", r.flag, r.flag)
		}
	}
	if o.healthWorkers < 1 {
		return fmt.Errorf("--health-workers: must be at least 1")
	}
	if o.etcdMaxTxnOps < 1 {
		return fmt.Errorf("--etcd-max-txn-ops: must be at least 1")
	}
	// A name's keys change in one transaction: all its addresses replaced
	// take a delete and a put each (a claim that changes with them is
	// written in a transaction before).
	if 2*o.maxAddresses > o.etcdMaxTxnOps {
		return fmt.Errorf("--max-addresses-per-name=%d: a name whose addresses all change is written in one etcd transaction of %d operations, more than --etcd-max-txn-ops=%d; raise etcd's --max-txn-ops and --etcd-max-txn-ops to at least %d, or lower --max-addresses-per-name",
			o.maxAddresses, 2*o.maxAddresses, o.etcdMaxTxnOps, 2*o.maxAddresses)
	}
	if o.maxDeleteRatio <= 0 || o.maxDeleteRatio > 1 {
		return fmt.Errorf("--max-delete-ratio: %g is not a share greater than 0 and at most 1 (1 allows deleting all)", o.maxDeleteRatio)
	}
	if o.noEndpointsGrace < 0 {
		return fmt.Errorf("--no-endpoints-grace: must not be negative")
	}
	if o.resync < 0 {
		return fmt.Errorf("--resync-interval: must not be negative")
	}
	if o.recordExpiry != 0 && o.recordExpiry < minRecordExpiry {
		return fmt.Errorf("--record-expiry: %v is shorter than %v; a brief etcd or network hiccup must not expire live records", o.recordExpiry, minRecordExpiry)
	}
	if o.failbackHoldDown < 0 {
		return fmt.Errorf("--failback-hold-down: must not be negative")
	}
	if o.gatewayPoll <= 0 {
		return fmt.Errorf("--gateway-api-poll-interval: must be positive")
	}
	return nil
}

// leaderConfig returns the leader election's configuration, with an identity
// made of host and a random part, when --leader-elect is set.
func (o *options) leaderConfig(host string) (leader.Config, error) {
	lead := o.leader
	if o.leaderElect {
		if o.leader.Namespace == "" || !dnsname.IsLabel(o.leader.Namespace) {
			return leader.Config{}, fmt.Errorf("--leader-elect-namespace: %q is not a namespace name", o.leader.Namespace)
		}
		if o.leader.LeaseDuration <= o.leader.RenewDeadline || o.leader.RenewDeadline <= o.leader.RetryPeriod || o.leader.RetryPeriod <= 0 {
			return leader.Config{}, fmt.Errorf("--leader-elect-lease-duration must exceed --leader-elect-renew-deadline, which must exceed --leader-elect-retry-period")
		}
		// The host name (the pod's name in a cluster) and a random part,
		// as kube-controller-manager names itself: two replicas on one
		// host (hostNetwork, or processes side by side) must not both
		// hold the Lease under one name.
		suffix := make([]byte, 8)
		rand.Read(suffix)
		lead.Identity = host + "_" + hex.EncodeToString(suffix)
		lead.EtcdKey = "/skylb/leader/" + o.owner
	}
	return lead, nil
}

// claimDir returns --claim-prefix without its trailing slash, once checked.
func (o *options) claimDir() (string, error) {
	claims := strings.TrimRight(o.claimPrefix, "/")
	if o.claimPrefix != "" {
		records := strings.TrimRight(o.prefix, "/")
		if !strings.HasPrefix(claims, "/") || claims == "" {
			return "", fmt.Errorf("--claim-prefix: %q must be an absolute path such as /skylb/claims", o.claimPrefix)
		}
		if strings.HasPrefix(claims+"/", records+"/") || strings.HasPrefix(records+"/", claims+"/") {
			return "", fmt.Errorf("--claim-prefix: %q must lie outside --etcd-prefix %q, which CoreDNS serves", o.claimPrefix, o.prefix)
		}
	}
	return claims, nil
}

// startGCPercent is the collector's GOGC during the cold start (see
// app.Config.StartGCPercent), unless env sets GOGC: it keeps the peak heap
// near what is live, for a few more collections while the caches fill.
func startGCPercent(env map[string]string) int {
	if env["GOGC"] != "" {
		return 0
	}
	return app.DefaultStartGCPercent
}

func newLogger(level, format string) (*logrus.Logger, error) {
	log := logrus.New()
	lvl, err := logrus.ParseLevel(level)
	if err != nil || lvl > logrus.DebugLevel || lvl < logrus.ErrorLevel {
		return nil, fmt.Errorf("--log-level: %q is none of debug, info, warn and error", level)
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
	if cfg.Views, err = o.viewsConfig(cfg.AddressSource); err != nil {
		return cfg, err
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
	if cfg.ExternalNames, err = source.ParseExternalNames(o.externalNames); err != nil {
		return cfg, fmt.Errorf("--external-name-services: %w", err)
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

// scope validates the flags that narrow what skylb publishes.
func (o *options) scope() (scope.Scope, error) {
	var sc scope.Scope
	for _, ns := range o.namespaces {
		if !dnsname.IsLabel(ns) {
			return sc, fmt.Errorf("--namespace: %q is not a namespace name", ns)
		}
	}
	sc.Namespaces = sortedSet(o.namespaces)
	var err error
	if sc.Kinds, err = scope.ParseSources(o.sources); err != nil {
		return sc, fmt.Errorf("--source: %w", err)
	}
	if strings.TrimSpace(o.labelSelector) != "" {
		if sc.Selector, err = labels.Parse(o.labelSelector); err != nil {
			return sc, fmt.Errorf("--label-selector: %w", err)
		}
	}
	for _, c := range o.ingressClasses {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return sc, fmt.Errorf("--ingress-class: %q is not a class name: %s", c, strings.Join(errs, "; "))
		}
	}
	for _, c := range o.gatewayClasses {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return sc, fmt.Errorf("--gateway-class: %q is not a GatewayClass name: %s", c, strings.Join(errs, "; "))
		}
	}
	sc.IngressClasses, sc.GatewayClasses = sortedSet(o.ingressClasses), sortedSet(o.gatewayClasses)
	switch {
	case !o.gatewayAPI && len(sc.Kinds) > 0 && sc.GatewayAPI():
		return sc, fmt.Errorf("--source: the Gateway API's sources need --gateway-api")
	case !o.dnsEndpoint && len(sc.Kinds) > 0 && sc.Kind(source.KindDNSEndpoint):
		return sc, fmt.Errorf("--source: crd needs --dnsendpoint")
	case len(sc.GatewayClasses) > 0 && !o.gatewayAPI:
		return sc, fmt.Errorf("--gateway-class: needs --gateway-api")
	case len(sc.GatewayClasses) > 0 && !sc.GatewayAPI():
		return sc, fmt.Errorf("--gateway-class: --source has no Gateway API source (gateway, gateway-httproute, ...)")
	case len(sc.IngressClasses) > 0 && !sc.Kind(source.KindIngress):
		return sc, fmt.Errorf("--ingress-class: --source does not include ingress")
	}
	return sc, nil
}

// sortedSet returns values sorted, without repeats.
func sortedSet(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
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

// etcdFiles checks that the etcd client's files make a TLS configuration.
// A missing file is an error naming its flag, which wraps fs.ErrNotExist,
// for the commands that wait for it.
func (o *options) etcdFiles() error {
	_, err := o.etcd.TLS()
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		for _, f := range []struct{ flag, path string }{
			{"--etcd-ca-file", o.etcd.CAFile}, {"--etcd-cert-file", o.etcd.CertFile}, {"--etcd-key-file", o.etcd.KeyFile},
		} {
			if _, serr := os.Stat(f.path); serr != nil {
				return fmt.Errorf("%s: %s: %w", f.flag, f.path, errors.Unwrap(serr))
			}
		}
	}
	return fmt.Errorf("--etcd-endpoints/--etcd-*-file: %w", err)
}

// checkAddress checks a listen address, host:port with a port from 0 to
// 65535; empty is none.
func checkAddress(flag, addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || n > 65535 {
		return fmt.Errorf("%s: %q is not HOST:PORT with a port from 0 to 65535, e.g. :8080 or 127.0.0.1:8080", flag, addr)
	}
	return nil
}
