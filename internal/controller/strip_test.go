package controller

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestStripperService(t *testing.T) {
	class := "example.org/lb"
	created := metav1.Now()
	in := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web", UID: types.UID("u1"), ResourceVersion: "7",
			CreationTimestamp: created,
			Labels:            map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{
				corev1.LastAppliedConfigAnnotation: `{"kind":"Service"}`,
				"skylb.io/hostname":                "www.example.org",
			},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			OwnerReferences: []metav1.OwnerReference{{Name: "owner"}},
		},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: &class,
			ClusterIP:         "10.0.0.1",
			Selector:          map[string]string{"app": "web"},
			IPFamilies:        []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP},
			},
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
			Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}},
		}},
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web", UID: types.UID("u1"), ResourceVersion: "7",
			CreationTimestamp: created,
			Labels:            map[string]string{"tier": "front"},
			Annotations:       map[string]string{"skylb.io/hostname": "www.example.org"},
		},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: &class,
			IPFamilies:        []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}},
		},
		Status: in.Status,
	}
	strip := stripper(map[string]bool{"tier": true}, false, viewNeeds{})
	got, err := strip(in.DeepCopy())
	if err != nil {
		t.Fatalf("strip: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripper(Service) mismatch (-want +got):\n%s", diff)
	}
	// The informers may apply the transform twice (watch-list, then the
	// queue): the second time changes nothing.
	again, _ := strip(got)
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("stripper(stripped Service) mismatch (-want +got):\n%s", diff)
	}
}

// TestStripperSharesCommonValues checks that the values every Service has
// one of are kept once, not once per cached Service, and left as they were.
func TestStripperSharesCommonValues(t *testing.T) {
	decoded := func() *corev1.Service {
		// As decoded from the API server: strings of their own.
		mode := corev1.LoadBalancerIPMode(strings.Clone(string(corev1.LoadBalancerIPModeProxy)))
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: corev1.ServiceSpec{
				Type:       corev1.ServiceType(strings.Clone(string(corev1.ServiceTypeLoadBalancer))),
				IPFamilies: []corev1.IPFamily{corev1.IPFamily(strings.Clone("IPv6")), corev1.IPFamily(strings.Clone("IPv4"))},
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.Protocol(strings.Clone("UDP"))},
					{Name: "odd", Port: 9, Protocol: corev1.Protocol(strings.Clone("QUIC"))},
				},
			},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
				Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &mode}},
			}},
		}
	}
	strip := stripper(nil, false, viewNeeds{})
	a, _ := strip(decoded())
	b, _ := strip(decoded())
	sa, sb := a.(*corev1.Service), b.(*corev1.Service)
	if diff := cmp.Diff(sa, sb); diff != "" {
		t.Fatalf("two equal Services stripped differ (-a +b):\n%s", diff)
	}
	want := decoded()
	if sa.Spec.Type != want.Spec.Type || !slices.Equal(sa.Spec.IPFamilies, want.Spec.IPFamilies) ||
		sa.Spec.Ports[0].Protocol != "UDP" || sa.Spec.Ports[1].Protocol != "QUIC" ||
		*sa.Status.LoadBalancer.Ingress[0].IPMode != corev1.LoadBalancerIPModeProxy {
		t.Fatalf("stripped Service's values changed: %+v", sa)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if !same(string(sa.Spec.Type), string(sb.Spec.Type)) {
		t.Error("the type is kept once per Service")
	}
	if &sa.Spec.IPFamilies[0] != &sb.Spec.IPFamilies[0] {
		t.Error("the IP families are kept once per Service")
	}
	if !same(string(sa.Spec.Ports[0].Protocol), string(sb.Spec.Ports[0].Protocol)) {
		t.Error("the protocol UDP is kept once per port")
	}
	if sa.Status.LoadBalancer.Ingress[0].IPMode != sb.Status.LoadBalancer.Ingress[0].IPMode {
		t.Error("the IP mode is kept once per status address")
	}
	if &sa.Spec.Ports[0] != &sb.Spec.Ports[0] {
		t.Error("the ports are kept once per Service")
	}
	// An append to a shared list makes a copy.
	if c := cap(sa.Spec.IPFamilies); c != len(sa.Spec.IPFamilies) {
		t.Errorf("shared IP families have room to grow: cap %d", c)
	}
	if c := cap(sa.Spec.Ports); c != len(sa.Spec.Ports) {
		t.Errorf("shared ports have room to grow: cap %d", c)
	}
	other := decoded()
	other.Spec.Ports[1].Port = 10
	c, _ := strip(other)
	if sc := c.(*corev1.Service); &sc.Spec.Ports[0] == &sa.Spec.Ports[0] || sc.Spec.Ports[1].Port != 10 {
		t.Errorf("a Service with other ports has the first one's: %+v", sc.Spec.Ports)
	}
}

func TestStripperExternalNameService(t *testing.T) {
	in := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "db.example.net",
			Selector:     map[string]string{"app": "db"},
		},
	}
	want := &corev1.Service{
		ObjectMeta: in.ObjectMeta,
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.net"},
	}
	got, err := stripper(nil, false, viewNeeds{})(in.DeepCopy())
	if err != nil {
		t.Fatalf("strip: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripper(ExternalName Service) mismatch (-want +got):\n%s", diff)
	}
}

// TestStripperKeepsWhatViewsRead checks that the Services' ClusterIPs, their
// traffic distribution and the endpoints' zones and hints stay in the caches
// when views read them, and only then.
func TestStripperKeepsWhatViewsRead(t *testing.T) {
	zone, preferClose := "zone-a", corev1.ServiceTrafficDistributionPreferClose
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.10"}, TrafficDistribution: &preferClose}}
	slice := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{
		Addresses: []string{"10.244.1.5"}, Zone: &zone,
		Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}},
	}}}
	for _, tc := range []struct {
		needs                viewNeeds
		ips, dist, zoneHints bool
	}{
		{needs: viewNeeds{}},
		{needs: viewNeeds{clusterIPs: true}, ips: true},
		{needs: viewNeeds{clusterIPs: true, topology: true}, ips: true, dist: true, zoneHints: true},
	} {
		strip := stripper(nil, false, tc.needs)
		s, _ := strip(svc.DeepCopy())
		e, _ := strip(slice.DeepCopy())
		spec, ep := s.(*corev1.Service).Spec, e.(*discoveryv1.EndpointSlice).Endpoints[0]
		if got := len(spec.ClusterIPs) > 0; got != tc.ips {
			t.Errorf("%+v: ClusterIPs kept %v, want %v", tc.needs, got, tc.ips)
		}
		if got := spec.TrafficDistribution != nil; got != tc.dist {
			t.Errorf("%+v: trafficDistribution kept %v, want %v", tc.needs, got, tc.dist)
		}
		if got := ep.Zone != nil && ep.Hints != nil; got != tc.zoneHints || (ep.Zone == nil) != (ep.Hints == nil) {
			t.Errorf("%+v: endpoint zone %v and hints %v, want both kept: %v", tc.needs, ep.Zone, ep.Hints, tc.zoneHints)
		}
	}
}
