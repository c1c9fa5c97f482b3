package source

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestParseView(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    View
		wantErr bool
	}{
		{in: "internal=pods", want: View{Name: "internal", Source: ModePods}},
		{in: "lan=cluster-ip", want: View{Name: "lan", Source: ModeClusterIP}},
		{in: " office = nodes", want: View{Name: "office", Source: ModeNodes}},
		{in: "internal", wantErr: true},
		{in: "Internal=pods", wantErr: true},
		{in: "in.ternal=pods", wantErr: true},
		{in: "=pods", wantErr: true},
		{in: "internal=everything", wantErr: true},
		{in: "a-name-that-is-longer-than-forty-eight-characters-x=pods", wantErr: true},
	} {
		got, err := ParseView(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseView(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestViewAddresses checks that each view publishes a Service's addresses
// from its own address source, that an annotation overrides it for one
// Service, and that a view with the Service's own source keeps its addresses.
func TestViewAddresses(t *testing.T) {
	cfg := testConfig
	cfg.AddressSource = ModeNodes
	cfg.Views = []View{{Name: "internal", Source: ModePods}, {Name: "routed", Source: ModeClusterIP}, {Name: "same", Source: ModeAuto}}
	b := NewBuilder(cfg, statusCluster(t, 3, 0, 2))
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        map[string][]string // view -> addresses
		wantProblem bool
	}{
		{name: "the views' sources", want: map[string][]string{
			"":         {"192.0.2.10", "192.0.2.12"},
			"internal": {"10.244.0.5", "10.244.2.5"},
			"routed":   {"10.96.0.10"},
			"same":     {"192.0.2.10", "192.0.2.12"},
		}},
		{name: "an annotation overrides a view's source", annotations: map[string]string{AnnotationViewAddressSourcePrefix + "internal": "cluster-ip"},
			want: map[string][]string{
				"":         {"192.0.2.10", "192.0.2.12"},
				"internal": {"10.96.0.10"},
				"routed":   {"10.96.0.10"},
			}},
		{name: "a malformed annotation keeps the view's source and is told", annotations: map[string]string{AnnotationViewAddressSourcePrefix + "internal": "everywhere"},
			want: map[string][]string{
				"":         {"192.0.2.10", "192.0.2.12"},
				"internal": {"10.244.0.5", "10.244.2.5"},
			}, wantProblem: true},
		{name: "the Service's own source in a view", annotations: map[string]string{AnnotationAddressSource: "pods"},
			want: map[string][]string{
				"":         {"10.244.0.5", "10.244.2.5"},
				"internal": {"10.244.0.5", "10.244.2.5"},
				"same":     {"192.0.2.10", "192.0.2.12"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService("shop", "web")
			svc.Status = corev1.ServiceStatus{}
			svc.Spec.ClusterIPs = []string{"10.96.0.10"}
			svc.Annotations = tc.annotations
			p := b.Service(svc)
			got := map[string][]string{"": addrStrings(p.Addresses)}
			for v := range tc.want {
				if v != "" {
					got[v] = addrStrings(p.ViewAddresses(v))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("addresses by view (-want +got):\n%s", diff)
			}
			if got := len(p.Problems) > 0; got != tc.wantProblem {
				t.Errorf("problems %v, want some: %v", p.Problems, tc.wantProblem)
			}
		})
	}
}

// zonedCluster returns listers of nodes node-0 to node-<n-1> at 192.0.2.10+i,
// node-i in zones[i], and one EndpointSlice of shop/web with a ready endpoint
// on each node, its zone set as the EndpointSlice controller sets it.
func zonedCluster(t *testing.T, zones ...string) Listers {
	t.Helper()
	on := make([]int, len(zones))
	for i := range on {
		on[i] = i
	}
	l := statusCluster(t, len(zones), on...)
	s, err := l.EndpointSlices.EndpointSlices("shop").Get("web-abc")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Endpoints {
		s.Endpoints[i].Zone = &zones[i]
	}
	return l
}

// TestViewZones checks topology-aware answers: a Service preferring close
// endpoints answers a zone's view with the addresses of that zone, every
// address when the zone has none; hints win over the endpoints' zones; a
// Service without the preference answers alike in every view.
func TestViewZones(t *testing.T) {
	cfg := testConfig
	cfg.AddressSource = ModeNodes
	cfg.Views = []View{{Name: "a", Source: ModeAuto, Zone: "zone-a"}, {Name: "c", Source: ModeAuto, Zone: "zone-c"}, {Name: "pods-a", Source: ModePods, Zone: "zone-a"}}
	b := NewBuilder(cfg, zonedCluster(t, "zone-a", "zone-b", "zone-b"))
	preferClose := corev1.ServiceTrafficDistributionPreferClose
	svc := newService("shop", "web")
	svc.Status = corev1.ServiceStatus{}
	svc.Spec.TrafficDistribution = &preferClose
	p := b.Service(svc)
	got := map[string][]string{"": addrStrings(p.Addresses)}
	for _, v := range []string{"a", "c", "pods-a"} {
		got[v] = addrStrings(p.ViewAddresses(v))
	}
	want := map[string][]string{
		"":       {"192.0.2.10", "192.0.2.11", "192.0.2.12"},
		"a":      {"192.0.2.10"},
		"c":      {"192.0.2.10", "192.0.2.11", "192.0.2.12"}, // no endpoint in zone-c: fail open
		"pods-a": {"10.244.0.5"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PreferClose, addresses by view (-want +got):\n%s", diff)
	}
	// Health checking kept the other zone's nodes alone: the view of zone-a
	// answers them.
	p.Keep(addrs("192.0.2.11", "192.0.2.12"))
	if got := addrStrings(p.ViewAddresses("a")); !slices.Equal(got, []string{"192.0.2.11", "192.0.2.12"}) {
		t.Errorf("zone-a's address unhealthy: view a answers %v, want the healthy ones of zone-b", got)
	}

	// The annotation of topology-aware routing asks the same.
	svc.Spec.TrafficDistribution = nil
	svc.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto"}
	if got := addrStrings(b.Service(svc).ViewAddresses("a")); !slices.Equal(got, []string{"192.0.2.10"}) {
		t.Errorf("topology-mode Auto: view a answers %v, want zone-a's node", got)
	}
	// Without either, every view answers every address.
	svc.Annotations = nil
	if p := b.Service(svc); len(p.Views) != 1 || !slices.Equal(addrStrings(p.ViewAddresses("a")), want[""]) {
		t.Errorf("no preference: views %v, view a answers %v; want only the pods view, and every node", p.Views, addrStrings(p.ViewAddresses("a")))
	}
}

func TestInZoneHints(t *testing.T) {
	a, b := "zone-a", "zone-b"
	eps := []discoveryv1.Endpoint{
		{Addresses: []string{"10.0.0.1"}, Zone: &a},
		// In zone-b, but its hints send zone-a's clients to it.
		{Addresses: []string{"10.0.0.2"}, Zone: &b, Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: a}}}},
		// In zone-a, but its hints keep it for zone-b.
		{Addresses: []string{"10.0.0.3"}, Zone: &a, Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: b}}}},
	}
	var got []string
	for _, ep := range inZone(eps, a) {
		got = append(got, ep.Addresses[0])
	}
	if want := []string{"10.0.0.1", "10.0.0.2"}; !slices.Equal(got, want) {
		t.Errorf("inZone(zone-a) = %v, want %v", got, want)
	}
}

// An Ingress that takes the ingress controller's addresses (--ingress-service)
// takes that Service's addresses in each view too.
func TestIngressViewAddresses(t *testing.T) {
	cfg := testConfig
	cfg.AddressSource = ModeNodes
	cfg.IngressService = "shop/web"
	cfg.Views = []View{{Name: "internal", Source: ModePods}, {Name: "same", Source: ModeAuto}}
	l := statusCluster(t, 3, 0, 2)
	svc := newService("shop", "web")
	svc.Status = corev1.ServiceStatus{}
	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := svcs.Add(svc); err != nil {
		t.Fatal(err)
	}
	l.Services = corelisters.NewServiceLister(svcs)
	b := NewBuilder(cfg, l)
	p := b.Ingress(newIngress("shop", "front", rules("front.example.org")))
	got := map[string][]string{"": addrStrings(p.Addresses), "internal": addrStrings(p.ViewAddresses("internal")), "same": addrStrings(p.ViewAddresses("same"))}
	want := map[string][]string{
		"":         {"192.0.2.10", "192.0.2.12"},
		"internal": {"10.244.0.5", "10.244.2.5"},
		"same":     {"192.0.2.10", "192.0.2.12"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Ingress's addresses by view (-want +got):\n%s", diff)
	}
	if v, ok := p.ViewOf("internal"); !ok || v.OwnPorts {
		t.Errorf("the Ingress's view internal: %+v, %v; want the Service's addresses without ports", v, ok)
	}
}

// addrStrings returns the addresses as strings, an empty list for none.
func addrStrings(as []netip.Addr) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}
