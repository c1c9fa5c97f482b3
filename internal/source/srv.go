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

// srvOn reports whether a Service publishes SRV records: --srv, unless its
// annotation says otherwise.
func (b *Builder) srvOn(p *Publication, svc *corev1.Service) bool {
	on := b.cfg.SRV
	if v, ok := svc.Annotations[AnnotationSRV]; ok {
		parsed, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			p.problem(ReasonInvalidAnnotation, "annotation %s: %q is neither true nor false; using %t", AnnotationSRV, v, on)
		} else {
			on = parsed
		}
	}
	return on
}

// servicePorts returns the ports a Service publishes SRV records for, with
// its addresses from the address source mode: its named ports, with the
// Service port where clients reach the Service through nodes, its ClusterIP
// or another load balancer, and the endpoints' target port where they reach
// the pods directly. A port whose target is not known yet is left out. Too
// many ports are told as a problem of p; nil p (a view's ports) tells none.
func (b *Builder) servicePorts(p *Publication, mode Mode, svc *corev1.Service) []Port {
	var targets map[string]int
	if mode == ModePods {
		targets = b.targetPorts(svc)
	}
	var out []Port
	for _, sp := range svc.Spec.Ports {
		// "_" and the name must fit in one label.
		if sp.Name == "" || len(sp.Name) >= dnsname.MaxLabelLength || !dnsname.IsLabel(sp.Name) {
			continue
		}
		number := int(sp.Port)
		if mode == ModePods {
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
		if p == nil {
			return out[:b.cfg.MaxNames]
		}
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
