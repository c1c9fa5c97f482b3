package source_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/source"
)

// endpointsCluster returns listers holding 10 ready nodes and an
// EndpointSlice of Service shop/web with n ready endpoints spread over them.
func endpointsCluster(b *testing.B, n int) source.Listers {
	b.Helper()
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range 10 {
		if err := nodes.Add(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Status: corev1.NodeStatus{
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.0.2.%d", 10+i)}},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}); err != nil {
			b.Fatal(err)
		}
	}
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ready, port, name := true, int32(8080), "http"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "web-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	for i := range n {
		node := fmt.Sprintf("node-%d", i%10)
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.%d.%d", i/250, 1+i%250)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName:   &node,
		})
	}
	if err := slices.Add(s); err != nil {
		b.Fatal(err)
	}
	return source.Listers{
		EndpointSlices: discoverylisters.NewEndpointSliceLister(slices),
		Nodes:          corelisters.NewNodeLister(nodes),
	}
}

// BenchmarkService100Endpoints measures the desired state of one Service with
// 100 ready endpoints on 10 nodes: its names, addresses and status, per
// address source.
func BenchmarkService100Endpoints(b *testing.B) {
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		b.Fatal(err)
	}
	listers := endpointsCluster(b, 100)
	for _, mode := range []source.Mode{source.ModeNodes, source.ModePods} {
		b.Run(string(mode), func(b *testing.B) {
			builder := source.NewBuilder(source.Config{Zones: zones, TTL: 30, AddressSource: mode}, listers)
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{source.AnnotationHostname: "www.example.org"}},
				Spec: corev1.ServiceSpec{
					Type:  corev1.ServiceTypeLoadBalancer,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
				},
			}
			b.ReportAllocs()
			for range b.N {
				p := builder.Service(svc)
				if len(p.Addresses) == 0 {
					b.Fatal("no addresses")
				}
			}
		})
	}
}
