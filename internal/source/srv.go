package source

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skylb/skylb/internal/dnsname"
)

// AnnotationSRV turns a Service's SRV records off ("false") or on ("true")
// whatever --srv says.
const AnnotationSRV = "skylb.io/srv"

// Port is a named port of a Service, published as the SRV records
// _<name>._<protocol>.<host name> (RFC 2782).
type Port struct {
	Name     string // the Service port's name
	Protocol string // "tcp", "udp" or "sctp"
	Number   int    // the port clients connect to on the published addresses
}

// Label returns the SRV owner prefix of the port, "_<name>._<protocol>".
func (p Port) Label() string { return "_" + p.Name + "._" + p.Protocol }

// servicePorts returns the ports a Service publishes SRV records for: its
// named ports, with the Service port where clients reach the Service through
// nodes or another load balancer, and the endpoints' target port where they
// reach the pods directly. A port whose target is not known yet is left out.
func (b *Builder) servicePorts(p *Publication, svc *corev1.Service) []Port {
	on := b.cfg.SRV
	if v, ok := svc.Annotations[AnnotationSRV]; ok {
		parsed, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			p.problem(ReasonInvalidAnnotation, "annotation %s: %q is neither true nor false; using %t", AnnotationSRV, v, on)
		} else {
			on = parsed
		}
	}
	if !on {
		return nil
	}
	var targets map[string]int
	if p.Mode == ModePods {
		targets = b.targetPorts(svc)
	}
	var out []Port
	for _, sp := range svc.Spec.Ports {
		// "_" and the name must fit in one label.
		if sp.Name == "" || len(sp.Name) >= dnsname.MaxLabelLength || !dnsname.IsLabel(sp.Name) {
			continue
		}
		number := int(sp.Port)
		if p.Mode == ModePods {
			if number = targets[sp.Name]; number == 0 {
				continue
			}
		}
		proto := strings.ToLower(string(sp.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		out = append(out, Port{Name: sp.Name, Protocol: proto, Number: number})
	}
	if len(out) > b.cfg.MaxNames {
		p.problem(ReasonTooManyNames, "%d named ports, more than the %d allowed: SRV records are published for the first %d", len(out), b.cfg.MaxNames, b.cfg.MaxNames)
		out = out[:b.cfg.MaxNames]
	}
	return out
}

// targetPorts returns the port each named port of a Service's endpoints listens
// on, from its EndpointSlices.
func (b *Builder) targetPorts(svc *corev1.Service) map[string]int {
	out := make(map[string]int)
	if b.listers.EndpointSlices == nil {
		return out
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	slices, err := b.listers.EndpointSlices.EndpointSlices(svc.Namespace).List(sel)
	if err != nil {
		return out
	}
	for _, s := range slices {
		for _, p := range s.Ports {
			if p.Name != nil && p.Port != nil && *p.Name != "" {
				out[*p.Name] = int(*p.Port)
			}
		}
	}
	return out
}
