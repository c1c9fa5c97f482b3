package source

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/skydns"
)

// Publication is what one object asks to publish.
type Publication struct {
	// Key is the object's; Source is its String, the source of the
	// records, kept beside it for the ranking, which compares and indexes
	// it many times over.
	Key       skydns.ObjectKey
	Source    string
	UID       types.UID // the object's (see Ref)
	Created   time.Time
	Names     []Name
	Addresses []netip.Addr // sorted, unique
	// Views are the addresses of the views (Config.Views) whose address
	// source differs from the object's, or whose zone it prefers, in the
	// order of Config.Views; nil without views (see ViewAddresses). A
	// slice rather than a map by view: with one view, a map took 460 bytes
	// of every Service, 4 MiB at 10,000 Services, and the slice 48.
	Views    []ViewAddrs
	Targets  []string  // CNAME targets, sorted, unique; used only without addresses
	Problems []Problem // what was refused while reading the object
	// Ports are the named ports published as SRV records beneath each name.
	Ports []Port
	// Answers, when set, are what each name answers, by name, for an
	// object whose names do not all answer alike (a DNSEndpoint's); its
	// Addresses and Targets are then those of all its names together,
	// for what is told of it (see AnswerOf).
	Answers map[string]Answer
	// Generation is the generation of the object read, for a kind whose
	// status tells which generation was published (a DNSEndpoint's); 0
	// for the others.
	Generation int64
	// ClusterPolicy and ClusterPriority (below) say how the clusters
	// sharing the object's names answer them (see AnnotationClusterPolicy).
	ClusterPolicy arbitrate.Policy

	// Mode is where the addresses came from.
	Mode Mode
	// Health says how Addresses are checked before publication, nil when
	// they are not (most objects: a pointer saves them its room), and
	// HealthPort (below) is the port to check when the Spec names none.
	Health *health.Spec
	// Select is how many healthy addresses are published.
	Select health.Mode
	// Status is the status.loadBalancer.ingress the Service should have,
	// when WriteStatus.
	Status []corev1.LoadBalancerIngress

	// The small fields last, side by side: a publication is kept for every
	// object, and padding between them would take it to the next size class.
	TTL             uint32
	HealthPort      int32
	ClusterPriority int32 // 0 to MaxClusterPriority
	// Shared lets other clusters publish the object's names too (see
	// AnnotationShared).
	Shared bool
	// Unhealthy is set when every address failed its health check and all
	// are published anyway (fail open).
	Unhealthy bool
	// WriteStatus says that skylb implements the Service: it writes Status.
	WriteStatus bool
	// PortConflict says that an older Service of the nodes source serves
	// one of the Service's ports: it is refused the nodes' addresses.
	PortConflict bool
}

// Ref returns the object, for its Events; ok is false for a kind that is
// not one of Kinds. It is built when an Event is sent rather than kept in
// every publication: 112 bytes of strings that its Key and UID already hold.
func (p *Publication) Ref() (ref *corev1.ObjectReference, ok bool) {
	gvk, ok := Kinds[p.Key.Kind]
	if !ok {
		return nil, false
	}
	return &corev1.ObjectReference{
		Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(),
		Namespace: p.Key.Namespace, Name: p.Key.Name, UID: p.UID,
	}, true
}

// Name is one host name claimed by an object.
type Name struct {
	dnsname.Placed
	// Generated names (<service>.<namespace>.<zone>) come first in an object's
	// names, so that the caps keep them; between objects they rank by age like
	// any other name.
	Generated bool
}

// Problem is something a person should be told about an object, as a Warning Event.
type Problem struct {
	Reason  string
	Message string
}

// Reasons of the Warning Events skylb emits.
const (
	ReasonInvalidHostname   = "InvalidHostname"
	ReasonApexRefused       = "ApexRefused"
	ReasonInvalidAddress    = "InvalidAddress"
	ReasonInvalidTTL        = "InvalidTTL"
	ReasonHostnameConflict  = "HostnameConflict"
	ReasonCNAMEIgnored      = "CNAMEIgnored"
	ReasonCNAMELoop         = "CNAMELoop"
	ReasonNoEndpoints       = "NoEndpoints"
	ReasonAllUnhealthy      = "AllAddressesUnhealthy"
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonAddressRefused    = "AddressRefused"
	ReasonTooManyNames      = "TooManyNames"
	ReasonTooManyAddresses  = "TooManyAddresses"
	// ReasonPortConflict: an older Service of the nodes source serves one
	// of the Service's ports at the nodes' addresses.
	ReasonPortConflict = "PortConflict"
	// ReasonClusterPolicyConflict is told when the objects publishing a
	// shared name, in one cluster or in several, name different policies.
	ReasonClusterPolicyConflict = "ClusterPolicyConflict"
	// ReasonAddressesChanged is the Normal Event of a status skylb wrote.
	ReasonAddressesChanged = "AddressesChanged"
)

// Equal reports whether two publications would publish the same records and
// raise the same problems.
func (p *Publication) Equal(q *Publication) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.Key == q.Key && p.Source == q.Source && p.Generation == q.Generation && p.Created.Equal(q.Created) &&
		p.TTL == q.TTL && p.UID == q.UID &&
		slices.Equal(p.Names, q.Names) && slices.Equal(p.Addresses, q.Addresses) &&
		slices.Equal(p.Targets, q.Targets) && slices.Equal(p.Problems, q.Problems) &&
		slices.Equal(p.Ports, q.Ports) && maps.EqualFunc(p.Answers, q.Answers, Answer.equal) &&
		p.Mode == q.Mode && p.WriteStatus == q.WriteStatus && StatusEqual(p.Status, q.Status) &&
		healthEqual(p.Health, q.Health) && p.HealthPort == q.HealthPort && p.Select == q.Select && p.Unhealthy == q.Unhealthy &&
		p.Shared == q.Shared && p.ClusterPolicy == q.ClusterPolicy && p.ClusterPriority == q.ClusterPriority &&
		slices.EqualFunc(p.Views, q.Views, ViewAddrs.equal)
}

// Answer is what one name of a publication answers (see Publication.Answers).
type Answer struct {
	Addresses []netip.Addr // sorted, unique
	Targets   []string     // CNAME targets, sorted, unique; used only without addresses or texts
	Texts     []string     // texts of TXT records, sorted, unique
	TTL       uint32
}

func (a Answer) equal(b Answer) bool {
	return a.TTL == b.TTL && slices.Equal(a.Addresses, b.Addresses) && slices.Equal(a.Targets, b.Targets) &&
		slices.Equal(a.Texts, b.Texts)
}

// AnswerOf returns what a name of the publication answers in the default
// view: its own Answer, or the publication's addresses, targets and TTL.
func (p *Publication) AnswerOf(name string) Answer {
	if a, ok := p.Answers[name]; ok {
		return a
	}
	return Answer{Addresses: p.Addresses, Targets: p.Targets, TTL: p.TTL}
}

// healthEqual reports whether two health checks are the same; nil is none.
func healthEqual(a, b *health.Spec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// HealthTargets returns what to probe: every address with the health check's port.
func (p *Publication) HealthTargets() []health.Target {
	if p.Health == nil {
		return nil
	}
	port := p.Health.Port
	if port == 0 {
		port = int(p.HealthPort)
	}
	spec := *p.Health
	if len(p.Names) > 0 {
		spec.Host = p.Names[0].Name
	}
	out := make([]health.Target, 0, len(p.Addresses))
	for _, a := range p.Addresses {
		out = append(out, health.Target{Addr: a, Port: port, Spec: spec})
	}
	return out
}

// Keep narrows the answer to the addresses given (a subset, in order): those
// that passed their health checks. The status stays as it is: it lists every
// usable node, and an address that leaves it stops being served by
// kube-proxy, connections included (see loadBalancerStatus).
func (p *Publication) Keep(addrs []netip.Addr) {
	p.Addresses = addrs
}

// StatusEqual reports whether two load-balancer ingress lists say the same.
func StatusEqual(a, b []corev1.LoadBalancerIngress) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.LoadBalancerIngress) bool {
		return x.IP == y.IP && x.Hostname == y.Hostname &&
			(x.IPMode == nil) == (y.IPMode == nil) && (x.IPMode == nil || *x.IPMode == *y.IPMode) &&
			slices.EqualFunc(x.Ports, y.Ports, func(p, q corev1.PortStatus) bool {
				return p.Port == q.Port && p.Protocol == q.Protocol && (p.Error == nil) == (q.Error == nil) &&
					(p.Error == nil || *p.Error == *q.Error)
			})
	})
}
