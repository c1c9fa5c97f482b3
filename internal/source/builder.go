package source

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/skydns"
)

// Annotations read on Services and Ingresses.
const (
	AnnotationHostname = "skylb.io/hostname"
	AnnotationTTL      = "skylb.io/ttl"
	// AnnotationShared "true" lets other clusters publishing into the same
	// etcd publish the object's names too, when they mark theirs shared.
	AnnotationShared = "skylb.io/shared"
	// AnnotationClusterPolicy says how the clusters sharing the object's
	// names answer them: balanced or failover (see arbitrate.Share).
	AnnotationClusterPolicy = "skylb.io/cluster-policy"
	// AnnotationClusterPriority is this cluster's priority for the object's
	// shared names, lower preferred: 0 to 65535, as SRV priorities.
	AnnotationClusterPriority = "skylb.io/cluster-priority"
)

// The annotations a name and a TTL are read from, skylb's first, then
// external-dns's, read so that its users can switch without editing objects.
var (
	hostnameAnnotations = []string{
		AnnotationHostname,
		"external-dns.alpha.kubernetes.io/hostname",
		"external-dns.kubernetes.io/hostname",
	}
	ttlAnnotations = []string{
		AnnotationTTL,
		"external-dns.alpha.kubernetes.io/ttl",
		"external-dns.kubernetes.io/ttl",
	}
)

// MaxTTL is the largest TTL accepted from an annotation (RFC 2181 allows 2^31-1;
// a day is more than any load-balanced name should be cached).
const MaxTTL = 86400

// Config says how objects become publications.
type Config struct {
	Zones            dnsname.Zones
	TTL              uint32 // default record TTL
	DefaultNamespace string // Services of this namespace are also published as <svc>.<zone>
	// ClusterLabel, when set, is a label inserted before the zone in the
	// generated names (<svc>.<namespace>.<label>.<zone>), so that the clusters
	// sharing an etcd never generate the same name.
	ClusterLabel string

	// AddressSource is the address source of the Services skylb implements.
	AddressSource Mode
	// Views are the views besides the default one, each with its own
	// address source for Services (see View).
	Views []View
	// LoadBalancerClass is the class of Services skylb implements; empty means
	// those without a class.
	LoadBalancerClass string
	// NodeAddressTypes orders the node address types to publish, per IP family.
	NodeAddressTypes []corev1.NodeAddressType
	// IngressService names the Service ("namespace/name") of the ingress
	// controller, whose addresses Ingresses without a status resolve to.
	IngressService string

	// Filter decides which addresses may be published; a nil Denied list means
	// DefaultDeniedCIDRs, an empty one denies nothing.
	Filter Filter
	// MaxNames caps the names of one object; 0 means DefaultMaxNames.
	MaxNames int
	// MaxAddresses caps the addresses of one object and of one name; 0 means
	// DefaultMaxAddresses.
	MaxAddresses int
	// SRV publishes SRV records for the named ports of Services, unless a
	// Service's annotation says otherwise.
	SRV bool
	// ApexNamespaces are the namespaces whose objects may publish a zone's
	// apex; the apex is the operator's, so with none no object may.
	ApexNamespaces []string
	// ExternalNames says which ExternalName Services are published as
	// CNAMEs; empty means ExternalNamesAnnotated.
	ExternalNames ExternalNames
}

// Defaults of the caps.
const (
	DefaultMaxNames     = 20
	DefaultMaxAddresses = 64
)

// DefaultNodeAddressTypes is the default order of node address types.
var DefaultNodeAddressTypes = []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP}

// Builder computes publications from objects and the caches they depend on.
type Builder struct {
	cfg     Config
	listers Listers
	// nodeStatus shares the status of Services of the nodes source, which
	// is the same for most of them (every usable node).
	nodeStatus nodeStatus
}

// NewBuilder returns a Builder for cfg reading the given caches.
func NewBuilder(cfg Config, listers Listers) *Builder {
	if cfg.AddressSource == "" {
		cfg.AddressSource = ModeAuto
	}
	if len(cfg.NodeAddressTypes) == 0 {
		cfg.NodeAddressTypes = DefaultNodeAddressTypes
	}
	if cfg.Filter.Denied == nil {
		cfg.Filter.Denied = DefaultDeniedCIDRs
	}
	if cfg.MaxNames <= 0 {
		cfg.MaxNames = DefaultMaxNames
	}
	if cfg.MaxAddresses <= 0 {
		cfg.MaxAddresses = DefaultMaxAddresses
	}
	return &Builder{cfg: cfg, listers: listers}
}

// Service returns the publication of a Service, or nil when it publishes
// nothing: it is neither of type LoadBalancer nor an ExternalName Service
// that Config.ExternalNames publishes.
func (b *Builder) Service(svc *corev1.Service) *Publication {
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
	case corev1.ServiceTypeExternalName:
		return b.externalName(svc)
	default:
		return nil
	}
	p := b.servicePublication(svc)
	implemented := b.Implements(svc)
	p.Mode = b.mode(p, svc, implemented)
	if len(svc.Spec.Ports) > 0 {
		p.HealthPort = svc.Spec.Ports[0].Port
	}
	switch p.Mode {
	case ModeStatus:
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			p.addStatus(ing.IP, ing.Hostname)
		}
		b.cfg.Filter.apply(p)
	case ModeNodes, ModePods:
		if implemented && p.Mode == ModeNodes {
			if o, key := b.portHolder(svc); o != nil {
				p.problem(ReasonPortConflict, "port %s is served at the nodes' addresses for Service %s/%s, created before this one: "+
					"kube-proxy would send this Service's traffic there, so it gets no node addresses (no records, but in views of its pods); "+
					"give it another port, the pods address source (%s: pods), or an address of another implementation",
					key, o.Namespace, o.Name, AnnotationAddressSource)
				p.PortConflict = true
				break
			}
		}
		eps := b.readyEndpoints(svc)
		if p.Mode == ModeNodes {
			p.Addresses = b.nodeAddresses(eps)
		} else {
			p.Addresses = b.podAddresses(eps)
			if port := b.targetPort(svc); port != 0 {
				p.HealthPort = int32(port)
			}
		}
		p.Addresses = keepFamilies(p.Addresses, svc.Spec.IPFamilies)
		if len(p.Addresses) == 0 {
			p.problem(ReasonNoEndpoints, "no ready endpoints%s; no records are published", map[Mode]string{ModeNodes: " on usable nodes"}[p.Mode])
		}
		// Addresses refused are told as AddressRefused, not as missing endpoints.
		b.cfg.Filter.apply(p)
	}
	srv := b.srvOn(p, svc)
	if srv {
		p.Ports = b.servicePorts(p, p.Mode, svc)
	}
	b.finish(p)

	if implemented && p.Mode != ModeStatus {
		p.WriteStatus = true
		p.Status = b.loadBalancerStatus(p, svc)
	}
	b.viewAddresses(p, svc, implemented, srv)
	return p
}

// servicePublication returns a Service's publication with its names: the
// generated ones first, then those of its annotations.
func (b *Builder) servicePublication(svc *corev1.Service) *Publication {
	p := b.newPublication(KindService, &svc.ObjectMeta)
	zone := b.cfg.Zones[0]
	if b.cfg.ClusterLabel != "" {
		zone = b.cfg.ClusterLabel + "." + zone
	}
	generated := svc.Name + "." + svc.Namespace + "." + zone
	b.addName(p, generated, true)
	if b.cfg.DefaultNamespace != "" && svc.Namespace == b.cfg.DefaultNamespace {
		b.addName(p, svc.Name+"."+zone, true)
	}
	b.addAnnotatedNames(p, svc.Annotations)
	return p
}

func ptrTo[T any](v T) *T { return &v }

// Ingress returns the publication of an Ingress: its rule and TLS hosts, and
// the names in its hostname annotations.
func (b *Builder) Ingress(ing *networkingv1.Ingress) *Publication {
	p := b.newPublication(KindIngress, &ing.ObjectMeta)
	p.HealthPort = 80
	if p.Health != nil && p.Health.Kind == health.HTTPS {
		p.HealthPort = 443
	}
	for _, rule := range ing.Spec.Rules {
		if rule.Host != "" {
			b.addName(p, rule.Host, false)
		}
	}
	for _, tls := range ing.Spec.TLS {
		for _, h := range tls.Hosts {
			b.addName(p, h, false)
		}
	}
	b.addAnnotatedNames(p, ing.Annotations)
	for _, st := range ing.Status.LoadBalancer.Ingress {
		p.addStatus(st.IP, st.Hostname)
	}
	if len(ing.Status.LoadBalancer.Ingress) == 0 && b.cfg.IngressService != "" {
		p.Mode = ModeIngressService
		if svc := b.ingressService(); svc != nil {
			p.Addresses = append(p.Addresses, svc.Addresses...)
			p.Targets = append(p.Targets, svc.Targets...)
			// In each view, the ingress controller's addresses there:
			// inside clients reach it as they reach its Service. An
			// Ingress has no SRV records, so no ports of its own.
			for _, v := range svc.Views {
				v.OwnPorts, v.Ports = false, nil
				p.Views = append(p.Views, v)
			}
		}
	}
	b.cfg.Filter.apply(p)
	b.finish(p)
	return p
}

// ModeIngressService marks Ingresses resolved through the ingress controller's Service.
const ModeIngressService Mode = "ingress-service"

// ingressService returns the publication of the ingress controller's Service.
func (b *Builder) ingressService() *Publication {
	ns, name, ok := strings.Cut(b.cfg.IngressService, "/")
	if !ok || b.listers.Services == nil {
		return nil
	}
	svc, err := b.listers.Services.Services(ns).Get(name)
	if err != nil {
		return nil
	}
	return b.Service(svc)
}

// IngressService returns the namespace and name of the ingress controller's Service.
func (b *Builder) IngressService() string { return b.cfg.IngressService }

func (b *Builder) newPublication(kind string, meta *metav1.ObjectMeta) *Publication {
	key := skydns.ObjectKey{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	p := &Publication{
		Key:     key,
		Source:  key.String(),
		UID:     meta.UID,
		Created: meta.CreationTimestamp.Time,
		TTL:     b.cfg.TTL,
	}
	spec, errs := health.Parse(meta.Annotations)
	if spec.Kind != health.None && spec.Kind != "" {
		p.Health = &spec
	}
	for _, err := range errs {
		p.problem(ReasonInvalidAnnotation, "%v", err)
	}
	var err error
	if p.Select, err = health.ParseMode(meta.Annotations); err != nil {
		p.problem(ReasonInvalidAnnotation, "%v", err)
	}
	if ttl, key, err := annotatedTTL(meta.Annotations); err != nil {
		p.problem(ReasonInvalidTTL, "annotation %s: %v; using %d seconds", key, err, b.cfg.TTL)
	} else if ttl != 0 {
		p.TTL = ttl
	}
	if v, ok := meta.Annotations[AnnotationShared]; ok {
		if p.Shared, err = strconv.ParseBool(v); err != nil {
			p.problem(ReasonInvalidAnnotation, "annotation %s: %q is not true or false; the names are not shared", AnnotationShared, v)
		}
	}
	p.ClusterPolicy, p.ClusterPriority = arbitrate.Balanced, int32(arbitrate.DefaultPriority)
	if v, ok := meta.Annotations[AnnotationClusterPolicy]; ok {
		switch pol := arbitrate.Policy(strings.ToLower(strings.TrimSpace(v))); pol {
		case arbitrate.Balanced, arbitrate.Failover:
			p.ClusterPolicy = pol
		default:
			p.problem(ReasonInvalidAnnotation, "annotation %s: %q is neither balanced nor failover; using balanced", AnnotationClusterPolicy, v)
		}
	}
	if v, ok := meta.Annotations[AnnotationClusterPriority]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > MaxClusterPriority {
			p.problem(ReasonInvalidAnnotation, "annotation %s: %q is not a number from 0 to %d; using %d",
				AnnotationClusterPriority, v, MaxClusterPriority, arbitrate.DefaultPriority)
		} else {
			p.ClusterPriority = int32(n)
		}
	}
	return p
}

// MaxClusterPriority is the largest cluster priority, that of SRV records.
const MaxClusterPriority = 65535

func (b *Builder) addAnnotatedNames(p *Publication, annotations map[string]string) {
	for _, key := range hostnameAnnotations {
		for h := range strings.SplitSeq(annotations[key], ",") {
			if strings.TrimSpace(h) != "" {
				b.addName(p, h, false)
			}
		}
	}
}

// addName places a name in a zone, or records why it cannot be published.
func (b *Builder) addName(p *Publication, name string, generated bool) {
	placed, err := b.cfg.Zones.Place(name)
	if err != nil {
		p.problem(ReasonInvalidHostname, "hostname %q is not published: %v", name, err)
		return
	}
	if placed.Apex() && !slices.Contains(b.cfg.ApexNamespaces, p.Key.Namespace) {
		p.problem(ReasonApexRefused, "hostname %q is not published: it is the apex of zone %s, which only the namespaces of --apex-namespaces may publish, and %s is not one of them",
			placed.Name, placed.Zone, p.Key.Namespace)
		return
	}
	p.addPlaced(placed, generated)
}

// addPlaced adds a name placed in its zone, once.
func (p *Publication) addPlaced(placed dnsname.Placed, generated bool) {
	for i, n := range p.Names {
		if n.Name == placed.Name {
			p.Names[i].Generated = n.Generated || generated
			return
		}
	}
	p.Names = append(p.Names, Name{Placed: placed, Generated: generated})
}

// addStatus takes one entry of status.loadBalancer.ingress.
func (p *Publication) addStatus(ip, hostname string) {
	switch {
	case ip != "":
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Zone() != "" {
			p.problem(ReasonInvalidAddress, "status address %q is not an IP address", ip)
			return
		}
		p.Addresses = append(p.Addresses, addr.Unmap())
	case hostname != "":
		target, err := dnsname.Parse(hostname)
		if err != nil {
			p.problem(ReasonInvalidAddress, "status hostname %q: %v", hostname, err)
			return
		}
		p.Targets = append(p.Targets, target)
	}
}

// finish sorts what the publication holds, so that equal objects give equal
// publications, and applies the caps, keeping what comes first in that order:
// names as given (generated names first), addresses in ascending order.
func (b *Builder) finish(p *Publication) {
	slices.SortFunc(p.Addresses, func(a, b netip.Addr) int { return a.Compare(b) })
	p.Addresses = slices.Compact(p.Addresses)
	slices.Sort(p.Targets)
	p.Targets = slices.Compact(p.Targets)
	b.capNames(p)
	if n := len(p.Addresses); n > b.cfg.MaxAddresses {
		p.problem(ReasonTooManyAddresses, "%d addresses, more than the %d allowed: only the lowest %d are published", n, b.cfg.MaxAddresses, b.cfg.MaxAddresses)
		p.Addresses = p.Addresses[:b.cfg.MaxAddresses]
	}
}

// capNames keeps the first MaxNames names of a publication.
func (b *Builder) capNames(p *Publication) {
	if n := len(p.Names); n > b.cfg.MaxNames {
		p.problem(ReasonTooManyNames, "%d names, more than the %d allowed: only the first %d are published", n, b.cfg.MaxNames, b.cfg.MaxNames)
		p.Names = p.Names[:b.cfg.MaxNames]
	}
}

func (p *Publication) problem(reason, format string, args ...any) {
	p.Problems = append(p.Problems, Problem{Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// annotatedTTL reads the TTL annotations: whole seconds or a Go duration such as "1m".
func annotatedTTL(annotations map[string]string) (uint32, string, error) {
	for _, key := range ttlAnnotations {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		ttl, err := parseTTL(strings.TrimSpace(v))
		return ttl, key, err
	}
	return 0, "", nil
}

func parseTTL(v string) (uint32, error) {
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil {
			return 0, fmt.Errorf("%q is neither seconds nor a duration", v)
		}
		secs = int64(d / time.Second)
	}
	if secs < 1 || secs > MaxTTL {
		return 0, fmt.Errorf("%s is outside 1 to %d seconds", v, MaxTTL)
	}
	return uint32(secs), nil
}
