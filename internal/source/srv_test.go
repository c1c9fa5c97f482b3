package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

func servicePortsOf(ps ...corev1.ServicePort) svcOpt {
	return func(s *corev1.Service) { s.Spec.Ports = ps }
}

func TestServicePorts(t *testing.T) {
	http := corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}
	sip := corev1.ServicePort{Name: "sip", Port: 5060, TargetPort: intstr.FromString("sip"), Protocol: corev1.ProtocolUDP}
	unnamed := corev1.ServicePort{Port: 81, Protocol: corev1.ProtocolTCP}
	noProto := corev1.ServicePort{Name: "ldap", Port: 389}
	tests := []struct {
		name         string
		srv          bool
		svc          *corev1.Service
		want         []Port
		wantProblems []Problem
	}{
		{
			name: "status: the Service ports of named ports",
			srv:  true,
			svc:  newService("shop", "web", servicePortsOf(http, sip, unnamed, noProto), ips("192.0.2.1")),
			want: []Port{{"http", "tcp", 80}, {"sip", "udp", 5060}, {"ldap", "tcp", 389}},
		},
		{
			name: "pods: the endpoints' target ports; a port without one is left out",
			srv:  true,
			svc:  newService("shop", "web", servicePortsOf(http, sip, noProto), annotate(AnnotationAddressSource, "pods")),
			want: []Port{{"http", "tcp", 8080}, {"sip", "udp", 5062}},
		},
		{
			name: "off by flag",
			svc:  newService("shop", "web", servicePortsOf(http), ips("192.0.2.1")),
		},
		{
			name: "off by annotation",
			srv:  true,
			svc:  newService("shop", "web", servicePortsOf(http), ips("192.0.2.1"), annotate(AnnotationSRV, "false")),
		},
		{
			name: "on by annotation",
			svc:  newService("shop", "web", servicePortsOf(http), ips("192.0.2.1"), annotate(AnnotationSRV, "true")),
			want: []Port{{"http", "tcp", 80}},
		},
		{
			name:         "invalid annotation: the flag decides",
			srv:          true,
			svc:          newService("shop", "web", servicePortsOf(http), ips("192.0.2.1"), annotate(AnnotationSRV, "perhaps")),
			want:         []Port{{"http", "tcp", 80}},
			wantProblems: []Problem{problem(ReasonInvalidAnnotation, AnnotationSRV)},
		},
	}
	slices := namedPortSlices(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig
			cfg.SRV = tt.srv
			b := NewBuilder(cfg, Listers{EndpointSlices: slices})
			got := b.Service(tt.svc)
			if diff := cmp.Diff(tt.want, got.Ports); diff != "" {
				t.Errorf("Service(%s).Ports mismatch (-want +got):\n%s", tt.svc.Name, diff)
			}
			var problems []Problem
			for _, p := range got.Problems {
				if p.Reason != ReasonNoEndpoints {
					problems = append(problems, p)
				}
			}
			if len(problems) != len(tt.wantProblems) {
				t.Fatalf("Service(%s).Problems = %v, want %v", tt.svc.Name, problems, tt.wantProblems)
			}
			checkProblemMessages(t, &Publication{Problems: tt.wantProblems}, &Publication{Problems: problems})
		})
	}
}

// namedPortSlices returns a lister of one EndpointSlice of shop/web, without
// endpoints, whose named ports http and sip listen on 8080 and 5062.
func namedPortSlices(t *testing.T) discoverylisters.EndpointSliceLister {
	t.Helper()
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	name := func(s string) *string { return &s }
	port := func(p int32) *int32 { return &p }
	if err := slices.Add(&discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Ports:      []discoveryv1.EndpointPort{{Name: name("http"), Port: port(8080)}, {Name: name("sip"), Port: port(5062)}},
	}); err != nil {
		t.Fatal(err)
	}
	return discoverylisters.NewEndpointSliceLister(slices)
}

// TestViewPorts checks the SRV ports of each view: a view whose clients
// reach the pods, where the Service's clients reach another load balancer,
// publishes the endpoints' target ports, and one that reaches the Service's
// ClusterIP or load balancer where the default view answers the pods, the
// Service's ports; a view with the same kind of addresses keeps the
// Service's ports.
func TestViewPorts(t *testing.T) {
	http := corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}
	cfg := testConfig
	cfg.SRV = true
	cfg.Views = []View{{Name: "internal", Source: ModePods}, {Name: "routed", Source: ModeClusterIP}, {Name: "lb", Source: ModeStatus}}
	b := NewBuilder(cfg, Listers{EndpointSlices: namedPortSlices(t)})
	service, pods := []Port{{"http", "tcp", 80}}, []Port{{"http", "tcp", 8080}}
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want map[string][]Port // view ("" the default) -> ports
	}{{
		name: "another load balancer's addresses",
		svc:  newService("shop", "web", servicePortsOf(http), ips("192.0.2.1")),
		want: map[string][]Port{"": service, "internal": pods, "routed": service, "lb": service},
	}, {
		name: "the pods' addresses",
		svc:  newService("shop", "web", servicePortsOf(http), ips("192.0.2.1"), annotate(AnnotationAddressSource, "pods")),
		want: map[string][]Port{"": pods, "internal": pods, "routed": service, "lb": service},
	}, {
		name: "SRV records off",
		svc:  newService("shop", "web", servicePortsOf(http), ips("192.0.2.1"), annotate(AnnotationSRV, "false")),
		want: map[string][]Port{"": nil, "internal": nil, "routed": nil, "lb": nil},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := b.Service(tc.svc)
			got := map[string][]Port{"": p.Ports}
			for _, v := range cfg.Views {
				got[v.Name] = p.ViewPorts(v.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SRV ports by view (-want +got):\n%s", diff)
			}
		})
	}
}
