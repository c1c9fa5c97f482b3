package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
	strip := stripper(map[string]bool{"tier": true}, false)
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
	got, err := stripper(nil, false)(in.DeepCopy())
	if err != nil {
		t.Fatalf("strip: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripper(ExternalName Service) mismatch (-want +got):\n%s", diff)
	}
}
