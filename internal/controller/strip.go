package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/source"
)

// The informers' transform: what the caches keep of each object.

// transform returns the informers' transform for the labels read with z and
// sc, keeping what the views read (see viewNeeds).
func transform(z *ZoneConfig, sc scope.Scope, views []source.View) func(any) (any, error) {
	var ns labels.Selector
	if z != nil {
		ns = z.NameserverSelector
	}
	keep, keepAll := labelsRead(ns, sc.Selector)
	keep[source.LabelGatewayName] = true
	return stripper(keep, keepAll, viewNeedsOf(views))
}

// viewNeeds are the fields of cached objects that views read, which the
// stripper keeps only for them.
type viewNeeds struct {
	// clusterIPs: a view may publish a Service's ClusterIPs (any view, by
	// annotation).
	clusterIPs bool
	// topology: a view has a zone; Services' trafficDistribution and the
	// endpoints' zones and hints tell what is close to it.
	topology bool
}

func viewNeedsOf(views []source.View) viewNeeds {
	return viewNeeds{clusterIPs: len(views) > 0, topology: slices.ContainsFunc(views, func(v source.View) bool { return v.Zone != "" })}
}

// labelsRead returns the label keys skylb reads on objects besides the
// EndpointSlice's Service name: those of the selectors given, the
// nameserver selector and the scope's. all reports a selector whose keys are
// unknown.
func labelsRead(selectors ...labels.Selector) (keys map[string]bool, all bool) {
	keys = map[string]bool{}
	for _, sel := range selectors {
		if sel == nil {
			continue
		}
		reqs, selectable := sel.Requirements()
		if !selectable {
			return keys, true
		}
		for _, r := range reqs {
			keys[r.Key()] = true
		}
	}
	return keys, false
}

// stripper returns the informers' transform. It drops what skylb never reads
// before objects enter the caches, where it would otherwise make up most of
// skylb's memory: managed fields, kubectl's copy of the applied object, owner
// references, the labels of Services, EndpointSlices, Ingresses, Gateways and
// routes but for those read (see labelsRead), the Service spec but for type, class, IP families,
// external name and the name, number and protocol of each port, Ingress paths and backends, EndpointSlice topology and
// target references, the Node status but for addresses and conditions, the
// rules of routes, the parent statuses of routes but for acceptance, and of
// Gateways all but their listeners' names, hostnames, ports, protocols and
// allowed kinds and namespaces, and the addresses in their status. What
// views read stays (see viewNeeds): the Services' ClusterIPs, and with a
// zone, their traffic distribution and the endpoints' zones and hints.
// skylb never writes a cached object back: Service status is written as a
// patch of the status alone. Whatever starts reading one of these fields must
// keep it here. Services with equal ports share one list of them (portLists).
func stripper(keep map[string]bool, keepAll bool, views viewNeeds) func(any) (any, error) {
	keepLabels := func(l map[string]string, also string) map[string]string {
		if keepAll {
			return l
		}
		for k := range l {
			if k != also && !keep[k] {
				delete(l, k)
			}
		}
		if len(l) == 0 {
			return nil
		}
		return l
	}
	ports := newPortLists()
	return func(obj any) (any, error) {
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetManagedFields(nil)
			acc.SetOwnerReferences(nil)
			if a := acc.GetAnnotations(); a != nil {
				delete(a, corev1.LastAppliedConfigAnnotation)
				if len(a) == 0 {
					acc.SetAnnotations(nil)
				}
			}
		}
		switch o := obj.(type) {
		case *corev1.Service:
			o.Labels = keepLabels(o.Labels, "")
			spec := corev1.ServiceSpec{
				Type: canonical(o.Spec.Type, serviceTypes), LoadBalancerClass: o.Spec.LoadBalancerClass,
				IPFamilies: canonicalFamilies(o.Spec.IPFamilies), ExternalName: o.Spec.ExternalName,
				// Local orders the status: the nodes with pods first.
				ExternalTrafficPolicy: canonical(o.Spec.ExternalTrafficPolicy, trafficPolicies),
			}
			// The first port is health-checked and matched in EndpointSlices;
			// every named port is published as SRV records.
			if len(o.Spec.Ports) > 0 {
				spec.Ports = make([]corev1.ServicePort, len(o.Spec.Ports))
			}
			for i, p := range o.Spec.Ports {
				spec.Ports[i] = corev1.ServicePort{Name: p.Name, Port: p.Port, Protocol: canonical(p.Protocol, protocols)}
			}
			spec.Ports = ports.share(spec.Ports)
			if views.clusterIPs {
				spec.ClusterIPs = o.Spec.ClusterIPs
			}
			if views.topology {
				spec.TrafficDistribution = o.Spec.TrafficDistribution
			}
			o.Spec = spec
			for i := range o.Status.LoadBalancer.Ingress {
				in := &o.Status.LoadBalancer.Ingress[i]
				if in.IPMode != nil {
					in.IPMode = canonicalPtr(*in.IPMode, ipModes)
				}
			}
		case *networkingv1.Ingress:
			o.Labels = keepLabels(o.Labels, "")
			o.Spec.DefaultBackend = nil
			for i := range o.Spec.Rules {
				o.Spec.Rules[i].IngressRuleValue = networkingv1.IngressRuleValue{}
			}
			for i := range o.Spec.TLS {
				o.Spec.TLS[i].SecretName = ""
			}
		case *discoveryv1.EndpointSlice:
			o.Labels = keepLabels(o.Labels, discoveryv1.LabelServiceName)
			for i := range o.Endpoints {
				ep := &o.Endpoints[i]
				ep.TargetRef, ep.Hostname, ep.DeprecatedTopology = nil, nil, nil
				if !views.topology {
					ep.Hints, ep.Zone = nil, nil
				}
			}
		case *gatewayv1.Gateway:
			o.Labels = keepLabels(o.Labels, "")
			o.Spec = gatewayv1.GatewaySpec{GatewayClassName: o.Spec.GatewayClassName, Listeners: o.Spec.Listeners}
			for i := range o.Spec.Listeners {
				l := &o.Spec.Listeners[i]
				l.TLS = nil
				if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
					l.AllowedRoutes.Namespaces.Selector = nil
				}
			}
			o.Status = gatewayv1.GatewayStatus{Addresses: o.Status.Addresses}
		case *gatewayv1.HTTPRoute:
			o.Labels, o.Spec.Rules = keepLabels(o.Labels, ""), nil
			o.Status.Parents = acceptance(o.Status.Parents)
		case *gatewayv1.GRPCRoute:
			o.Labels, o.Spec.Rules = keepLabels(o.Labels, ""), nil
			o.Status.Parents = acceptance(o.Status.Parents)
		case *gatewayv1.TLSRoute:
			o.Labels, o.Spec.Rules = keepLabels(o.Labels, ""), nil
			o.Status.Parents = acceptance(o.Status.Parents)
		case *corev1.Node:
			st := &o.Status
			st.Images, st.VolumesInUse, st.VolumesAttached = nil, nil, nil
			st.Capacity, st.Allocatable, st.Config, st.RuntimeHandlers, st.Features = nil, nil, nil, nil, nil
			st.NodeInfo, st.DaemonEndpoints = corev1.NodeSystemInfo{}, corev1.NodeDaemonEndpoints{}
		}
		return obj, nil
	}
}

// The values of the fields of a Service that every Service has one of. Each
// object decoded carries its own copy of each string; the stripper puts these
// in their place, so that the caches keep one of each, not one per Service.
// Cached objects are never changed (they are copied before any change), so
// sharing them is safe.
var (
	serviceTypes = []corev1.ServiceType{corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP,
		corev1.ServiceTypeNodePort, corev1.ServiceTypeExternalName}
	protocols       = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	ipModes         = []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy}
	trafficPolicies = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster,
		corev1.ServiceExternalTrafficPolicyLocal}
	families = [][]corev1.IPFamily{{corev1.IPv4Protocol}, {corev1.IPv6Protocol},
		{corev1.IPv4Protocol, corev1.IPv6Protocol}, {corev1.IPv6Protocol, corev1.IPv4Protocol}}
)

// canonical returns the element of known equal to v, or v.
func canonical[T ~string](v T, known []T) T {
	if i := slices.Index(known, v); i >= 0 {
		return known[i]
	}
	return v
}

// canonicalPtr returns a pointer to the element of known equal to v, or to
// a copy of v.
func canonicalPtr[T ~string](v T, known []T) *T {
	if i := slices.Index(known, v); i >= 0 {
		return &known[i]
	}
	return &v
}

// canonicalFamilies returns the element of families equal to f, or f. Each
// element is a literal, its capacity its length: an append copies it.
func canonicalFamilies(f []corev1.IPFamily) []corev1.IPFamily {
	for _, k := range families {
		if slices.Equal(k, f) {
			return k
		}
	}
	return f
}

// acceptance keeps of a route's parent statuses only what skylb reads: the
// parent and whether it accepted the route.
func acceptance(parents []gatewayv1.RouteParentStatus) []gatewayv1.RouteParentStatus {
	for i := range parents {
		p := &parents[i]
		p.ControllerName = ""
		var kept []metav1.Condition
		for _, c := range p.Conditions {
			if c.Type == string(gatewayv1.RouteConditionAccepted) {
				kept = append(kept, metav1.Condition{Type: c.Type, Status: c.Status})
			}
		}
		p.Conditions = kept
	}
	return parents
}
