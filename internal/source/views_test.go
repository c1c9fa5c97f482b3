package source

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
	strs := func(as []netip.Addr) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, a.String())
		}
		return out
	}
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
			got := map[string][]string{"": strs(p.Addresses)}
			for v := range tc.want {
				if v != "" {
					got[v] = strs(p.ViewAddresses(v))
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
