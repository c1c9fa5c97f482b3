package e2e

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ingress(ns, name string, hosts, tlsHosts []string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	pathType := networkingv1.PathTypePrefix
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{
			Host: h,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}},
				}}},
			}},
		})
	}
	if len(tlsHosts) > 0 {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: tlsHosts, SecretName: name + "-tls"}}
	}
	return ing
}

func ingressStatus(ips ...string) []networkingv1.IngressLoadBalancerIngress {
	var out []networkingv1.IngressLoadBalancerIngress
	for _, ip := range ips {
		out = append(out, networkingv1.IngressLoadBalancerIngress{IP: ip})
	}
	return out
}

// createIngress creates an Ingress and writes the addresses of its status, as
// an ingress controller would.
func createIngress(t *testing.T, ing *networkingv1.Ingress, ips ...string) {
	t.Helper()
	created, err := st.Kube.NetworkingV1().Ingresses(ing.Namespace).Create(ctxT(t), ing, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ingress %s/%s: %v", ing.Namespace, ing.Name, err)
	}
	created.Status.LoadBalancer.Ingress = ingressStatus(ips...)
	if _, err := st.Kube.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctxT(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write status of ingress %s/%s: %v", ing.Namespace, ing.Name, err)
	}
}
