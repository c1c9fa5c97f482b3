package controller_test

import (
	"context"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/source"
)

func ingress(ns, name, class, host string, ips ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}},
	}
	if class != "" {
		ing.Spec.IngressClassName = &class
	}
	for _, ip := range ips {
		ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: ip})
	}
	return ing
}

// watched returns the namespaces of the lists and watches of a resource the
// client was asked for ("" for every namespace), sorted.
func watched(e *env, resource string) []string {
	var out []string
	for _, a := range e.kube.Actions() {
		if a.GetResource().Resource == resource && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
			out = append(out, a.GetNamespace())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestScope: a skylb scoped to namespaces, sources, labels and an ingress
// class watches only those namespaces and publishes only those objects; the
// ingress controller's Service is read in its own namespace and gives its
// addresses, but is not published.
func TestScope(t *testing.T) {
	srv := etcdtest.Start(t)
	sel, err := labels.Parse("dns!=private")
	if err != nil {
		t.Fatal(err)
	}
	sc := scope.Scope{Namespaces: []string{"shop"}, Kinds: []string{source.KindIngress, source.KindService},
		Selector: sel, IngressClasses: []string{"nginx"}}
	private := lbService("shop", "private", t0, "192.0.2.3")
	private.Labels = map[string]string{"dns": "private"}
	legacy := ingress("shop", "legacy", "", "legacy.example.org")
	legacy.Annotations = map[string]string{scope.AnnotationIngressClass: "nginx"}
	e := runScoped(t, srv, source.Config{AddressSource: source.ModeStatus, IngressService: "ingress/controller"}, sc,
		lbService("shop", "web", t0, "192.0.2.1"),
		lbService("blog", "web", t0, "192.0.2.2"),
		private,
		lbService("ingress", "controller", t0, "192.0.2.9"),
		ingress("shop", "front", "nginx", "front.example.org"),
		ingress("shop", "other", "traefik", "other.example.org", "192.0.2.5"),
		legacy,
		ingress("blog", "front", "nginx", "blog.example.org", "192.0.2.6"),
	)
	e.expect(
		"web.shop.example.org 192.0.2.1",
		"front.example.org 192.0.2.9",
		"legacy.example.org 192.0.2.9",
	)
	for resource, want := range map[string][]string{
		"services":       {"ingress", "shop"},
		"endpointslices": {"ingress", "shop"},
		"ingresses":      {"shop"},
		"nodes":          {""},
	} {
		if got := watched(e, resource); !slices.Equal(got, want) {
			t.Errorf("%s listed and watched in namespaces %q, want %q", resource, got, want)
		}
	}

	// An object leaves the scope when its labels or class change, and
	// comes back.
	ctx := context.Background()
	web := lbService("shop", "web", t0, "192.0.2.1")
	web.Labels = map[string]string{"dns": "private"}
	if _, err := e.kube.CoreV1().Services("shop").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	front := ingress("shop", "front", "traefik", "front.example.org")
	if _, err := e.kube.NetworkingV1().Ingresses("shop").Update(ctx, front, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("legacy.example.org 192.0.2.9")
	web.Labels = nil
	if _, err := e.kube.CoreV1().Services("shop").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("web.shop.example.org 192.0.2.1", "legacy.example.org 192.0.2.9")
}

// TestScopeSources: a kind left out of --source starts no informer.
func TestScopeSources(t *testing.T) {
	srv := etcdtest.Start(t)
	e := runScoped(t, srv, source.Config{AddressSource: source.ModeStatus}, scope.Scope{Kinds: []string{source.KindService}},
		lbService("shop", "web", t0, "192.0.2.1"),
		ingress("shop", "front", "", "front.example.org", "192.0.2.5"),
	)
	e.expect("web.shop.example.org 192.0.2.1")
	if got := watched(e, "ingresses"); len(got) > 0 {
		t.Errorf("ingresses listed or watched in %q with --source=service, want never", got)
	}

	srv = etcdtest.Start(t)
	e = runScoped(t, srv, source.Config{AddressSource: source.ModeStatus}, scope.Scope{Kinds: []string{source.KindIngress}},
		lbService("shop", "web", t0, "192.0.2.1"),
		ingress("shop", "front", "", "front.example.org", "192.0.2.5"),
	)
	e.expect("front.example.org 192.0.2.5")
	for _, resource := range []string{"services", "endpointslices", "nodes"} {
		if got := watched(e, resource); len(got) > 0 {
			t.Errorf("%s listed or watched in %q with --source=ingress and no ingress controller's Service, want never", resource, got)
		}
	}
}
