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

	"github.com/skylb/skylb/internal/controller"
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
	// The answer: n1 by its external address first; n3's endpoint
	// terminates; n4 is NotReady; the Service is IPv4 only. The status lists
	// every usable node, n3 included: kube-proxy forwards from each.
	e.expect("web.shop.example.org 192.0.2.1", "web.shop.example.org 10.0.0.2")
	e.status("shop", "web", "10.0.0.2", "10.0.0.3", "192.0.2.1")
	e.expectEvent("Normal", source.ReasonAddressesChanged, "10.0.0.2, 10.0.0.3, 192.0.2.1")
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
	e.status("shop", "web", "10.0.0.3", "192.0.2.1")

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
	// No node with a ready endpoint is usable: no records, and the status
	// keeps the usable nodes.
	e.expect()
	e.status("shop", "web", "10.0.0.3")
	e.expectEvent("Warning", source.ReasonNoEndpoints)

	// No longer a LoadBalancer: skylb removes the status it wrote.
	n1.Labels = nil
	if _, err := nodes.Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.status("shop", "web", "10.0.0.3", "198.51.100.1")
	cur, _ := e.kube.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
	cur.Spec.Type = corev1.ServiceTypeNodePort
	if _, err := e.kube.CoreV1().Services("shop").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect()
	e.status("shop", "web")
}

// TestStatusIsNotTheAnswer pins what kube-proxy relies on: a Service of the
// nodes source has every usable node in its status from its creation, pods or
// not, and keeps them while its endpoints move; only the answer follows them.
func TestStatusIsNotTheAnswer(t *testing.T) {
	srv := etcdtest.Start(t)
	svc := lbService("shop", "web", t0)
	e := runWith(t, srv, source.Config{},
		node("n1", true, internalIP("10.0.0.1")),
		node("n2", true, internalIP("10.0.0.2")),
		node("n3", false, internalIP("10.0.0.3")),
		svc,
	)
	e.status("shop", "web", "10.0.0.1", "10.0.0.2")
	e.expect()
	ctx := context.Background()
	// Every change of the Service from here on is watched: none may change
	// its status.
	w, err := e.kube.CoreV1().Services("shop").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	slices_ := e.kube.DiscoveryV1().EndpointSlices("shop")
	for _, eps := range [][]ep{
		{{ip: "10.244.1.5", node: "n1", ready: true}},
		// A rolling update: the old pod terminates, the new one starts elsewhere.
		{{ip: "10.244.1.5", node: "n1", terminating: true}, {ip: "10.244.2.5", node: "n2"}},
		{{ip: "10.244.2.5", node: "n2", ready: true}},
		{},
	} {
		s := slice("shop", "web", eps...)
		if _, err := slices_.Get(ctx, s.Name, metav1.GetOptions{}); err != nil {
			_, err = slices_.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		} else if _, err := slices_.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, x := range eps {
			if x.ready {
				want = append(want, "web.shop.example.org "+map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2"}[x.node])
			}
		}
		e.expect(want...)
		e.status("shop", "web", "10.0.0.1", "10.0.0.2")
	}
	for {
		select {
		case ev := <-w.ResultChan():
			svc, ok := ev.Object.(*corev1.Service)
			if !ok {
				t.Fatalf("watch event %s %T", ev.Type, ev.Object)
			}
			var got []string
			for _, ing := range svc.Status.LoadBalancer.Ingress {
				got = append(got, ing.IP)
			}
			if want := []string{"10.0.0.1", "10.0.0.2"}; !slices.Equal(got, want) {
				t.Errorf("while the pods moved, the status was %q, want %q throughout", got, want)
			}
			continue
		default:
		}
		break
	}
}

// TestCleanupFinalizer checks that skylb puts Kubernetes' load-balancer
// cleanup finalizer on the Services it implements, and takes it off, with
// its status, once it no longer does; the finalizer of another class's
// Service is left alone.
func TestCleanupFinalizer(t *testing.T) {
	srv := etcdtest.Start(t)
	ours := lbService("shop", "web", t0)
	theirs := lbService("shop", "db", t0, "192.0.2.77")
	class := "metallb.io/metallb"
	theirs.Spec.LoadBalancerClass = &class
	theirs.Finalizers = []string{controller.FinalizerCleanup}
	ours.Finalizers = []string{"example.com/keep"}
	e := runWith(t, srv, source.Config{}, node("n1", true, internalIP("10.0.0.1")), ours, theirs,
		slice("shop", "web", ep{ip: "10.244.1.5", node: "n1", ready: true}))
	e.expect("web.shop.example.org 10.0.0.1", "db.shop.example.org 192.0.2.77")
	e.status("shop", "web", "10.0.0.1")
	e.finalizers("shop", "web", "example.com/keep", controller.FinalizerCleanup)

	ctx := context.Background()
	cur, err := e.kube.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Type = corev1.ServiceTypeClusterIP
	if _, err := e.kube.CoreV1().Services("shop").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("db.shop.example.org 192.0.2.77")
	e.status("shop", "web")
	e.finalizers("shop", "web", "example.com/keep")
	e.finalizers("shop", "db", controller.FinalizerCleanup)
}

// finalizers waits until the Service's finalizers are want, in any order.
func (e *env) finalizers(ns, name string, want ...string) {
	e.t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(10 * time.Second)
	for {
		svc, err := e.kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		if slices.Equal(slices.Sorted(slices.Values(svc.Finalizers)), want) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("finalizers of %s/%s = %q, want %q", ns, name, svc.Finalizers, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// TestPortConflict checks that of the Services of the nodes source sharing a
// port, which kube-proxy would serve at the same node addresses, only the
// oldest gets addresses; the others get a PortConflict Warning, no status
// and no records, until the port is theirs. A Service refused holds no port.
func TestPortConflict(t *testing.T) {
	srv := etcdtest.Start(t)
	withPorts := func(svc *corev1.Service, ports ...int32) *corev1.Service {
		for _, p := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
		}
		return svc
	}
	first := withPorts(lbService("shop", "web", t0), 80)
	second := withPorts(lbService("shop", "api", t0.Add(time.Minute)), 80, 443)
	third := withPorts(lbService("team", "tls", t0.Add(2*time.Minute)), 443)
	pods := withPorts(lbService("team", "mqtt", t0.Add(3*time.Minute)), 80)
	pods.Annotations = map[string]string{source.AnnotationAddressSource: "pods"}
	e := runWith(t, srv, source.Config{}, node("n1", true, internalIP("10.0.0.1")), first, second, third, pods,
		slice("shop", "web", ep{ip: "10.244.1.5", node: "n1", ready: true}),
		slice("shop", "api", ep{ip: "10.244.1.6", node: "n1", ready: true}),
		slice("team", "tls", ep{ip: "10.244.1.7", node: "n1", ready: true}),
		slice("team", "mqtt", ep{ip: "10.244.1.8", node: "n1", ready: true}),
	)
	// api is refused port 80, so it holds no 443 either: tls keeps it.
	e.expect("web.shop.example.org 10.0.0.1", "tls.team.example.org 10.0.0.1", "mqtt.team.example.org 10.244.1.8")
	e.status("shop", "web", "10.0.0.1")
	e.status("shop", "api")
	e.status("team", "tls", "10.0.0.1")
	e.status("team", "mqtt", "mqtt.team.example.org")
	e.expectEvent("Warning", source.ReasonPortConflict, "port TCP/80", "Service shop/web")

	// The older Service goes: the port is api's, and then 443 too.
	if err := e.kube.CoreV1().Services("shop").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("api.shop.example.org 10.0.0.1", "mqtt.team.example.org 10.244.1.8")
	e.status("shop", "api", "10.0.0.1")
	e.status("team", "tls")
	e.expectEvent("Warning", source.ReasonPortConflict, "port TCP/443", "Service shop/api")
}

// TestLocalStatusOrder checks that the status of an
// externalTrafficPolicy: Local Service lists the nodes with ready pods
// first, and follows them as they move, keeping every node.
func TestLocalStatusOrder(t *testing.T) {
	srv := etcdtest.Start(t)
	svc := lbService("shop", "web", t0)
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	e := runWith(t, srv, source.Config{},
		node("n1", true, internalIP("10.0.0.1")),
		node("n2", true, internalIP("10.0.0.2")),
		node("n3", true, internalIP("10.0.0.3")),
		svc,
	)
	e.status("shop", "web", "10.0.0.1", "10.0.0.2", "10.0.0.3")
	ctx := context.Background()
	slices_ := e.kube.DiscoveryV1().EndpointSlices("shop")
	s := slice("shop", "web", ep{ip: "10.244.2.5", node: "n2", ready: true})
	if _, err := slices_.Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("web.shop.example.org 10.0.0.2")
	e.status("shop", "web", "10.0.0.2", "10.0.0.1", "10.0.0.3")
	s = slice("shop", "web", ep{ip: "10.244.3.5", node: "n3", ready: true})
	if _, err := slices_.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("web.shop.example.org 10.0.0.3")
	e.status("shop", "web", "10.0.0.3", "10.0.0.1", "10.0.0.2")
}
