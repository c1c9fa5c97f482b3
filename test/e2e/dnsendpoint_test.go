package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/skylb/skylb/test/stack"
)

var dnsEndpoints = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}

// TestDNSEndpoint proves external-dns's DNSEndpoint end to end: skylb,
// started with --dnsendpoint before the CRD was served, picks up the CRD of
// manifests/dnsendpoint once it is installed, publishes each endpoint's
// name with its own targets, TXT records beside a name's addresses
// included, refuses an NS endpoint with a Warning naming it, and writes
// status.observedGeneration as external-dns does.
func TestDNSEndpoint(t *testing.T) {
	if err := st.InstallCRDs(ctxT(t), "manifests/dnsendpoint/crd.yaml", dnsEndpoints.GroupVersion(), dnsEndpoints.Resource); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(st.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := "dnsendpoint"
	namespace(t, ns)
	long := "v=DKIM1; k=rsa; p=" + strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", 9)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1",
		"kind":       "DNSEndpoint",
		"metadata":   map[string]any{"name": "records", "namespace": ns},
		"spec": map[string]any{"endpoints": []any{
			map[string]any{"dnsName": "www.dnsendpoint.example.org", "recordType": "A", "targets": []any{"192.0.2.71", "192.0.2.72"}, "recordTTL": int64(60)},
			map[string]any{"dnsName": "www.dnsendpoint.example.org", "recordType": "AAAA", "targets": []any{"2001:db8::71"}},
			map[string]any{"dnsName": "api.dnsendpoint.example.org", "recordType": "A", "targets": []any{"192.0.2.73"}},
			map[string]any{"dnsName": "alias.dnsendpoint.example.org", "recordType": "CNAME", "targets": []any{"www.dnsendpoint.example.org"}},
			map[string]any{"dnsName": "sub.dnsendpoint.example.org", "recordType": "NS", "targets": []any{"ns1.example.net"}},
			// external-dns's quotes are dropped; CoreDNS serves a text of
			// 255 bytes or more as strings of 255.
			map[string]any{"dnsName": "www.dnsendpoint.example.org", "recordType": "TXT", "targets": []any{`"v=spf1 -all"`, "site-verification=abc"}},
			map[string]any{"dnsName": "dkim.dnsendpoint.example.org", "recordType": "TXT", "targets": []any{long}},
			// A CNAME is alone at its name: the text is published, the CNAME not.
			map[string]any{"dnsName": "mixed.dnsendpoint.example.org", "recordType": "CNAME", "targets": []any{"www.dnsendpoint.example.org"}},
			map[string]any{"dnsName": "mixed.dnsendpoint.example.org", "recordType": "TXT", "targets": []any{"mixed"}},
		}},
	}}
	if _, err := dyn.Resource(dnsEndpoints).Namespace(ns).Create(ctxT(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DNSEndpoint: %v", err)
	}
	// The CRD came after skylb started: discovery finds it within seconds.
	took := within(t, 30*time.Second, "www.dnsendpoint.example.org", "192.0.2.71", "192.0.2.72", "2001:db8::71")
	t.Logf("DNSEndpoint published %v after its creation", took.Round(time.Millisecond))
	within(t, quick, "api.dnsendpoint.example.org", "192.0.2.73")
	withinType(t, quick, "alias.dnsendpoint.example.org", dns.TypeA, "CNAME www.dnsendpoint.example.org", "192.0.2.71", "192.0.2.72")
	withinType(t, quick, "sub.dnsendpoint.example.org", dns.TypeNS)
	withinType(t, quick, "www.dnsendpoint.example.org", dns.TypeTXT, `TXT "site-verification=abc"`, `TXT "v=spf1 -all"`)
	withinType(t, quick, "dkim.dnsendpoint.example.org", dns.TypeTXT, fmt.Sprintf("TXT %q %q", long[:255], long[255:]))
	withinType(t, quick, "mixed.dnsendpoint.example.org", dns.TypeTXT, `TXT "mixed"`)
	stack.Eventually(t, 10*time.Second, "a CNAMEIgnored Warning naming the CNAME beside a TXT record",
		hasEvent(t, ns, "DNSEndpoint", "records", "CNAMEIgnored", "mixed.dnsendpoint.example.org has TXT records"))

	stack.Eventually(t, 10*time.Second, "a RecordTypeRefused Warning naming the NS endpoint",
		hasEvent(t, ns, "DNSEndpoint", "records", "RecordTypeRefused", "spec.endpoints[4] (sub.dnsendpoint.example.org NS)"))
	observed := func() (bool, string) {
		got, err := dyn.Resource(dnsEndpoints).Namespace(ns).Get(ctxT(t), "records", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		gen, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return gen == got.GetGeneration(), fmt.Sprintf("observedGeneration %d, generation %d", gen, got.GetGeneration())
	}
	stack.Eventually(t, 10*time.Second, "status.observedGeneration of the generation published", observed)

	// A change of the spec is a new generation: published, then observed.
	cur, err := dyn.Resource(dnsEndpoints).Namespace(ns).Get(ctxT(t), "records", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(cur.Object, []any{
		map[string]any{"dnsName": "www.dnsendpoint.example.org", "recordType": "A", "targets": []any{"192.0.2.74"}},
	}, "spec", "endpoints"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(dnsEndpoints).Namespace(ns).Update(ctxT(t), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update DNSEndpoint: %v", err)
	}
	within(t, quick, "www.dnsendpoint.example.org", "192.0.2.74")
	within(t, quick, "api.dnsendpoint.example.org")
	withinType(t, quick, "dkim.dnsendpoint.example.org", dns.TypeTXT)
	stack.Eventually(t, 10*time.Second, "status.observedGeneration of the new generation", observed)

	if err := dyn.Resource(dnsEndpoints).Namespace(ns).Delete(ctxT(t), "records", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, quick, "www.dnsendpoint.example.org")
}
