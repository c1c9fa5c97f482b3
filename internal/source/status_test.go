package source

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// statusCluster returns listers of n Ready nodes, node-0 to node-<n-1> at
// 192.0.2.10+i, and of one EndpointSlice of shop/web with a ready endpoint on
// each of the nodes named.
func statusCluster(t *testing.T, n int, endpointsOn ...int) Listers {
	t.Helper()
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range n {
		if err := nodes.Add(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.0.2.%d", 10+i)}},
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, i := range endpointsOn {
		node := fmt.Sprintf("node-%d", i)
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.5", i)}, NodeName: &node})
	}
	if err := slices.Add(s); err != nil {
		t.Fatal(err)
	}
	return Listers{EndpointSlices: discoverylisters.NewEndpointSliceLister(slices), Nodes: corelisters.NewNodeLister(nodes)}
}

func TestLoadBalancerStatus(t *testing.T) {
	for _, tc := range []struct {
		name         string
		nodes        int
		endpointsOn  []int
		maxAddresses int
		source       string
		local        bool // externalTrafficPolicy: Local
		wantAnswer   []string
		wantStatus   []string
	}{
		{name: "no endpoints: every usable node, no answer", nodes: 3,
			wantStatus: []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}},
		{name: "endpoints on one node: the answer follows them, the status does not", nodes: 3, endpointsOn: []int{1},
			wantAnswer: []string{"192.0.2.11"}, wantStatus: []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}},
		{name: "beyond the cap the answer's addresses come first", nodes: 5, endpointsOn: []int{4}, maxAddresses: 2,
			wantAnswer: []string{"192.0.2.14"}, wantStatus: []string{"192.0.2.10", "192.0.2.14"}},
		{name: "ETP Local: the same nodes, those with endpoints first", nodes: 3, endpointsOn: []int{2}, local: true,
			wantAnswer: []string{"192.0.2.12"}, wantStatus: []string{"192.0.2.12", "192.0.2.10", "192.0.2.11"}},
		{name: "ETP Local without endpoints: every usable node", nodes: 3, local: true,
			wantStatus: []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}},
		{name: "pods: the generated name, endpoints or not", nodes: 3, source: "pods",
			wantStatus: []string{"web.shop.example.org"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig
			cfg.AddressSource, cfg.MaxAddresses = ModeNodes, tc.maxAddresses
			b := NewBuilder(cfg, statusCluster(t, tc.nodes, tc.endpointsOn...))
			svc := newService("shop", "web")
			svc.Status = corev1.ServiceStatus{}
			if tc.source != "" {
				svc.Annotations = map[string]string{AnnotationAddressSource: tc.source}
			}
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			p := b.Service(svc)
			var answer, status []string
			for _, a := range p.Addresses {
				answer = append(answer, a.String())
			}
			for _, s := range p.Status {
				status = append(status, s.IP+s.Hostname)
			}
			if diff := cmp.Diff(tc.wantAnswer, answer); diff != "" && tc.source == "" {
				t.Errorf("Service(%s) answer (-want +got):\n%s", tc.name, diff)
			}
			if diff := cmp.Diff(tc.wantStatus, status); diff != "" {
				t.Errorf("Service(%s) status (-want +got):\n%s", tc.name, diff)
			}
			if !p.WriteStatus {
				t.Errorf("Service(%s).WriteStatus = false, want true", tc.name)
			}
		})
	}
}

// TestNodeStatusShared checks that Services of the nodes source with the
// same status share one list, rather than each keep a copy.
func TestNodeStatusShared(t *testing.T) {
	cfg := testConfig
	cfg.AddressSource = ModeNodes
	b := NewBuilder(cfg, statusCluster(t, 3, 1))
	web, api := newService("shop", "web"), newService("shop", "api")
	web.Status, api.Status = corev1.ServiceStatus{}, corev1.ServiceStatus{}
	p, q := b.Service(web), b.Service(api)
	if len(p.Status) != 3 || len(q.Status) != 3 {
		t.Fatalf("Got statuses of %d and %d entries, want 3 each", len(p.Status), len(q.Status))
	}
	if &p.Status[0] != &q.Status[0] {
		t.Errorf("Services web and api with the same status hold two copies of it, want one shared")
	}
}
