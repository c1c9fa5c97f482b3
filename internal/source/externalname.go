package source

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/dnsname"
)

// ExternalNames says which ExternalName Services are published, each as a
// CNAME to its spec.externalName.
type ExternalNames string

// The choices of ExternalNames.
const (
	// ExternalNamesAnnotated publishes the ExternalName Services that carry
	// a hostname annotation (skylb.io/hostname or external-dns's), as
	// external-dns does: an ExternalName Service is often an in-cluster
	// alias (db -> db.prod.svc.cluster.local) that was never meant to be
	// seen outside the cluster, so it is published only when asked.
	ExternalNamesAnnotated ExternalNames = "annotated"
	// ExternalNamesAll publishes every ExternalName Service, as
	// k8s_gateway serves them.
	ExternalNamesAll ExternalNames = "all"
	// ExternalNamesNone publishes none.
	ExternalNamesNone ExternalNames = "none"
)

// ParseExternalNames parses the choice of ExternalName Services; empty is
// ExternalNamesAnnotated.
func ParseExternalNames(s string) (ExternalNames, error) {
	switch e := ExternalNames(strings.TrimSpace(s)); e {
	case "":
		return ExternalNamesAnnotated, nil
	case ExternalNamesAnnotated, ExternalNamesAll, ExternalNamesNone:
		return e, nil
	}
	return "", fmt.Errorf("%q is not annotated, all or none", s)
}

// ModeExternalName marks ExternalName Services: their one target comes from
// the spec, and no status is written for them.
const ModeExternalName Mode = "external-name"

// ReasonInvalidExternalName is the Warning of an ExternalName Service whose
// spec.externalName cannot be a CNAME target.
const ReasonInvalidExternalName = "InvalidExternalName"

// externalName returns the publication of an ExternalName Service, or nil
// when Config.ExternalNames leaves it out: its generated and annotated names,
// as a LoadBalancer Service has, with a CNAME to spec.externalName.
func (b *Builder) externalName(svc *corev1.Service) *Publication {
	switch b.cfg.ExternalNames {
	case ExternalNamesAll:
	case ExternalNamesNone:
		return nil
	default:
		if !hasHostnameAnnotation(svc.Annotations) {
			return nil
		}
	}
	p := b.servicePublication(svc)
	p.Mode = ModeExternalName
	if target, err := externalTarget(svc.Spec.ExternalName); err != nil {
		p.problem(ReasonInvalidExternalName, "spec.externalName %q: %v; no CNAME is published", svc.Spec.ExternalName, err)
	} else {
		p.Targets = []string{target}
	}
	b.finish(p)
	return p
}

// externalTarget validates an ExternalName Service's target as a host name.
// The API server takes an IPv4 address there too (its labels are digits),
// which CoreDNS would serve as an A record that --denied-cidrs never saw.
func externalTarget(s string) (string, error) {
	n := dnsname.Normalize(s)
	if _, err := netip.ParseAddr(n); err == nil {
		return "", fmt.Errorf("an IP address, not a host name")
	}
	return dnsname.Parse(n)
}

// hasHostnameAnnotation reports whether annotations carry one of the hostname
// annotations, even empty: an empty one asks for the generated names alone.
func hasHostnameAnnotation(annotations map[string]string) bool {
	for _, key := range hostnameAnnotations {
		if _, ok := annotations[key]; ok {
			return true
		}
	}
	return false
}
