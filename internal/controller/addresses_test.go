package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/source"
)

func node(name string, ready bool, addrs ...corev1.NodeAddress) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
			Addresses:  addrs,
		},
	}
}

func internalIP(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}

func externalIP(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip}
}

type ep struct {
	ip, node           string
	ready, terminating bool
}

func slice(ns, svc string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, e := range eps {
		ready, serving, term := e.ready, e.ready || e.terminating, e.terminating
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			NodeName:   &e.node,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
		})
	}
	return s
}

// status waits until the Service's load-balancer status is want (IPs or host names).
func (e *env) status(ns, name string, want ...string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		svc, err := e.kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		var got []string
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			got = append(got, ing.IP+ing.Hostname)
		}
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("status of %s/%s = %q, want %q", ns, name, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNodeAddresses(t *testing.T) {
	srv := etcdtest.Start(t)
	svc := lbService("shop", "web", t0)
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	e := runWith(t, srv, source.Config{},
		node("n1", true, internalIP("10.0.0.1"), externalIP("192.0.2.1")),
		node("n2", true, internalIP("10.0.0.2"), internalIP("fd00::2")),
		node("n3", true, internalIP("10.0.0.3")),
		node("n4", false, internalIP("10.0.0.4")),
		svc,
		slice("shop", "web",
			ep{ip: "10.244.1.5", node: "n1", ready: true},
			ep{ip: "10.244.2.5", node: "n2", ready: true},
			ep{ip: "10.244.3.5", node: "n3", terminating: true},
			ep{ip: "10.244.4.5", node: "n4", ready: true},
		),
	)
	// n1 by its external address first; n3's endpoint terminates; n4 is NotReady;
	// the Service is IPv4 only.
	e.expect("web.shop.example.org 192.0.2.1", "web.shop.example.org 10.0.0.2")
	e.status("shop", "web", "10.0.0.2", "192.0.2.1")
	e.expectEvent("Normal", source.ReasonAddressesChanged, "10.0.0.2, 192.0.2.1")
	ctx := context.Background()
	written, _ := e.kube.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
	for _, ing := range written.Status.LoadBalancer.Ingress {
		if ing.IPMode == nil || *ing.IPMode != corev1.LoadBalancerIPModeVIP {
			t.Errorf("status entry %s has ipMode %v, want VIP", ing.IP, ing.IPMode)
		}
	}

	nodes := e.kube.CoreV1().Nodes()
	n2, _ := nodes.Get(ctx, "n2", metav1.GetOptions{})
	n2.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := nodes.UpdateStatus(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("web.shop.example.org 192.0.2.1")
	e.status("shop", "web", "192.0.2.1")

	n1, _ := nodes.Get(ctx, "n1", metav1.GetOptions{})
	n1.Annotations = map[string]string{"dnslb.loadworks.com/address": "198.51.100.1"}
	if _, err := nodes.Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("web.shop.example.org 198.51.100.1")

	n1.Labels = map[string]string{source.LabelExcludeFromLB: ""}
	if _, err := nodes.Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect()
	e.status("shop", "web")
	e.expectEvent("Warning", source.ReasonNoEndpoints)

	// No longer a LoadBalancer: skylb removes the status it wrote.
	n1.Labels = nil
	if _, err := nodes.Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.status("shop", "web", "198.51.100.1")
	cur, _ := e.kube.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
	cur.Spec.Type = corev1.ServiceTypeNodePort
	if _, err := e.kube.CoreV1().Services("shop").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect()
	e.status("shop", "web")
}

func TestPodAddressesAndClasses(t *testing.T) {
	srv := etcdtest.Start(t)
	pods := lbService("shop", "mqtt", t0)
	pods.Annotations = map[string]string{source.AnnotationAddressSource: "pods"}
	metallb := lbService("shop", "db", t0, "192.0.2.77")
	class := "metallb.io/metallb"
	metallb.Spec.LoadBalancerClass = &class
	e := runWith(t, srv, source.Config{},
		node("n1", true, internalIP("10.0.0.1")),
		pods, metallb,
		slice("shop", "mqtt",
			ep{ip: "10.244.1.7", node: "n1", ready: true},
			ep{ip: "10.244.1.8", node: "n1", ready: true},
			ep{ip: "10.244.1.9", node: "n1"},
		),
	)
	e.expect(
		"mqtt.shop.example.org 10.244.1.7", "mqtt.shop.example.org 10.244.1.8",
		"db.shop.example.org 192.0.2.77",
	)
	// Pods churn: the status names the generated name instead of their addresses.
	e.status("shop", "mqtt", "mqtt.shop.example.org")
	// Another implementation's Service is read, never written.
	e.status("shop", "db", "192.0.2.77")
}

func TestIngressThroughIngressControllerService(t *testing.T) {
	srv := etcdtest.Start(t)
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "app.example.org"}}},
	}
	e := runWith(t, srv, source.Config{IngressService: "ingress/nginx"},
		node("n1", true, internalIP("10.0.0.1")),
		node("n2", true, internalIP("10.0.0.2")),
		lbService("ingress", "nginx", t0),
		slice("ingress", "nginx", ep{ip: "10.244.1.3", node: "n1", ready: true}),
		ing,
	)
	e.expect("nginx.ingress.example.org 10.0.0.1", "app.example.org 10.0.0.1")

	// The ingress controller moves: the Ingress's name follows.
	ctx := context.Background()
	if _, err := e.kube.DiscoveryV1().EndpointSlices("ingress").Update(ctx,
		slice("ingress", "nginx", ep{ip: "10.244.2.3", node: "n2", ready: true}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("nginx.ingress.example.org 10.0.0.2", "app.example.org 10.0.0.2")
}
