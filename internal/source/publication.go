package source

import (
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/dnsname"
)

// Kinds of object that publish names, as they appear in a source string.
const (
	KindService = "service"
	KindIngress = "ingress"
)

// Publication is what one object asks to publish.
type Publication struct {
	Source    string                 // "service/<ns>/<name>" or "ingress/<ns>/<name>"
	Ref       corev1.ObjectReference // the object, for Events
	Namespace string
	Created   time.Time
	Names     []Name
	Addresses []netip.Addr // sorted, unique
	Targets   []string     // CNAME targets, sorted, unique; used only without addresses
	TTL       uint32
	Problems  []Problem // what was refused while reading the object

	// Mode is where the addresses came from.
	Mode Mode
	// WriteStatus says that skylb implements the Service and Status is the
	// status.loadBalancer.ingress it should have.
	WriteStatus bool
	Status      []corev1.LoadBalancerIngress
}

// Name is one host name claimed by an object.
type Name struct {
	dnsname.Placed
	// Generated names (<service>.<namespace>.<zone>) take precedence over names
	// asked for through annotations or Ingress hosts.
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
	ReasonInvalidAddress    = "InvalidAddress"
	ReasonInvalidTTL        = "InvalidTTL"
	ReasonHostnameConflict  = "HostnameConflict"
	ReasonCNAMEIgnored      = "CNAMEIgnored"
	ReasonNoEndpoints       = "NoEndpoints"
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonAddressRefused    = "AddressRefused"
	ReasonTooManyNames      = "TooManyNames"
	ReasonTooManyAddresses  = "TooManyAddresses"
	// ReasonAddressesChanged is the Normal Event of a status skylb wrote.
	ReasonAddressesChanged = "AddressesChanged"
)

// Equal reports whether two publications would publish the same records and
// raise the same problems.
func (p *Publication) Equal(q *Publication) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.Source == q.Source && p.Namespace == q.Namespace && p.Created.Equal(q.Created) &&
		p.TTL == q.TTL && p.Ref.UID == q.Ref.UID &&
		slices.Equal(p.Names, q.Names) && slices.Equal(p.Addresses, q.Addresses) &&
		slices.Equal(p.Targets, q.Targets) && slices.Equal(p.Problems, q.Problems) &&
		p.Mode == q.Mode && p.WriteStatus == q.WriteStatus && StatusEqual(p.Status, q.Status)
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
