package source

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// portCluster returns listers whose PortUsers index svcs by PortKeys.
func portCluster(b *Builder, svcs ...*corev1.Service) func(string) []*corev1.Service {
	index := map[string][]*corev1.Service{}
	for _, s := range svcs {
		for _, k := range b.PortKeys(s) {
			index[k] = append(index[k], s)
		}
	}
	return func(key string) []*corev1.Service { return index[key] }
}

func portService(name string, created int, ports ...int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(testCreated.Add(time.Duration(created) * time.Second))},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
	}
	return svc
}

func TestPortHolder(t *testing.T) {
	cfg := testConfig
	cfg.AddressSource = ModeNodes
	web, api, tls := portService("web", 1, 80), portService("api", 2, 80, 443), portService("tls", 3, 443)
	udp := portService("dns", 4, 80)
	udp.Spec.Ports[0].Protocol = corev1.ProtocolUDP
	pods := portService("mqtt", 5, 80)
	pods.Annotations = map[string]string{AnnotationAddressSource: "pods"}
	b := NewBuilder(cfg, Listers{})
	b.listers.PortUsers = portCluster(b, web, api, tls, udp, pods)
	for _, tc := range []struct {
		svc      *corev1.Service
		want     string
		wantPort string
	}{
		{svc: web},
		{svc: api, want: "web", wantPort: "TCP/80"},
		// api is refused, so it holds no 443.
		{svc: tls},
		// Another protocol, another source: no conflict.
		{svc: udp},
		{svc: pods},
	} {
		got, port := b.portHolder(tc.svc)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want || port != tc.wantPort {
			t.Errorf("portHolder(%s) = %q %q, want %q %q", tc.svc.Name, name, port, tc.want, tc.wantPort)
		}
	}
}

// TestPortHolderMany checks that a thousand Services on one port are each
// decided in one pass over them, not a search over their chains.
func TestPortHolderMany(t *testing.T) {
	cfg := testConfig
	cfg.AddressSource = ModeNodes
	svcs := make([]*corev1.Service, 1000)
	for i := range svcs {
		svcs[i] = portService(fmt.Sprintf("web-%04d", i), len(svcs)-i, 80)
	}
	b := NewBuilder(cfg, Listers{})
	b.listers.PortUsers = portCluster(b, svcs...)
	start := time.Now()
	for _, svc := range svcs[:len(svcs)-1] {
		if got, _ := b.portHolder(svc); got != svcs[len(svcs)-1] {
			t.Fatalf("portHolder(%s) = %v, want the oldest", svc.Name, got)
		}
	}
	t.Logf("%d Services on one port decided in %v", len(svcs), time.Since(start).Round(time.Millisecond))
}
