package e2e

import (
	"slices"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// An Ingress of namespace demo publishes shop.example.org. A namespace shop
// created later, with a LoadBalancer Service api, must not take the name: the
// Service's generated name api.shop.example.org lies beneath it, so the
// Service, the later object, is refused and told so, and the Ingress keeps
// its answers.
func TestLaterNamespaceCannotTakeAName(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "demo")
	createIngress(t, ingress("demo", "shop", []string{"shop.example.org"}, nil), "203.0.113.70")
	within(t, quick, "shop.example.org", "203.0.113.70")

	namespace(t, "shop")
	metallb(t, "shop", "api", []corev1.LoadBalancerIngress{{IP: "203.0.113.71"}})
	expectEvent(t, "shop", "api", "HostnameConflict", "api.shop.example.org")
	within(t, quick, "shop.example.org", "203.0.113.70")
	within(t, quick, "api.shop.example.org")
	evs, err := st.Kube.CoreV1().Events("demo").List(ctxT(t), metav1.ListOptions{FieldSelector: "involvedObject.name=shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "HostnameConflict" {
			t.Errorf("the Ingress that holds the name got %s: %s", e.Reason, e.Message)
		}
	}

	// When the holder goes, the waiting Service takes its name.
	if err := st.Kube.NetworkingV1().Ingresses("demo").Delete(ctxT(t), "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, quick, "api.shop.example.org", "203.0.113.71")
	within(t, quick, "shop.example.org", "203.0.113.71") // CoreDNS answers with what lies beneath
}

// The zone's apex is the operator's: a namespace not given with
// --apex-namespaces (the suite gives only "owner") is refused it and told so.
func TestApexOnlyFromAllowedNamespaces(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "evil")
	metallb(t, "evil", "web", []corev1.LoadBalancerIngress{{IP: "198.51.100.70"}},
		annotate("skylb.io/hostname", "example.org"))
	expectEvent(t, "evil", "web", "ApexRefused", "example.org")
	within(t, quick, "web.evil.example.org", "198.51.100.70")
	rcode, got, err := stack.Query(st.DNSAddr, "example.org", dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	if rcode != dns.RcodeSuccess || slices.Contains(got, "198.51.100.70") {
		t.Errorf("example.org A = %s %q, want NOERROR without 198.51.100.70", dns.RcodeToString[rcode], got)
	}
}
