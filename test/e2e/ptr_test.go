package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// reverse returns the name a PTR query for addr asks (miekg/dns's mapping,
// not skylb's).
func reverse(t *testing.T, addr string) string {
	t.Helper()
	name, err := dns.ReverseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// setStatus writes the load-balancer status of a Service, as another
// implementation would.
func setStatus(t *testing.T, ns, name string, ips ...string) {
	t.Helper()
	svc, err := st.Kube.CoreV1().Services(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = statusIPs(ips...)
	if _, err := st.Kube.CoreV1().Services(ns).UpdateStatus(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write status of %s/%s: %v", ns, name, err)
	}
}

// statusIPs is a load-balancer status of addresses.
func statusIPs(ips ...string) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	for _, ip := range ips {
		out = append(out, corev1.LoadBalancerIngress{IP: ip})
	}
	return out
}

// PTR records follow the published addresses in the reverse zones
// (192.0.2.0/24 and 2001:db8::/32 here), as the real CoreDNS answers them:
// one name per address, the oldest object's, for as long as that name is
// published with the address.
func TestPTRRecords(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "ptr")
	namespace(t, "ptr-late")
	v4, v4b, v4c, v6 := "192.0.2.201", "192.0.2.202", "192.0.2.203", "2001:db8::201"

	start := time.Now()
	metallb(t, "ptr", "web", statusIPs(v4, v6), annotate("skylb.io/hostname", "www-ptr.example.org"))
	withinType(t, quick, reverse(t, v4), dns.TypePTR, "PTR www-ptr.example.org")
	withinType(t, quick, reverse(t, v6), dns.TypePTR, "PTR www-ptr.example.org")
	t.Logf("Service created: its PTR records answer after %v", time.Since(start).Round(time.Millisecond))

	// A newer Service sharing the address does not take its PTR record (its
	// name sorts after web's too, for when both were created in the same
	// second, which creationTimestamp cannot tell apart).
	metallb(t, "ptr", "web2", statusIPs(v4))
	within(t, quick, "web2.ptr.example.org", v4)
	settle(t)
	withinType(t, 0, reverse(t, v4), dns.TypePTR, "PTR www-ptr.example.org")

	// The older one stops publishing the address: the next name takes it.
	start = time.Now()
	setStatus(t, "ptr", "web", v4b, v6)
	withinType(t, quick, reverse(t, v4), dns.TypePTR, "PTR web2.ptr.example.org")
	withinType(t, quick, reverse(t, v4b), dns.TypePTR, "PTR www-ptr.example.org")
	// CoreDNS caches the answer asked for just before for up to 1 s.
	t.Logf("address moved: its PTR record names the other Service after %v", time.Since(start).Round(time.Millisecond))

	// A later namespace is refused the name: its address's PTR record names
	// what it does publish.
	metallb(t, "ptr-late", "web", statusIPs(v4c), annotate("skylb.io/hostname", "www-ptr.example.org"))
	expectEvent(t, "ptr-late", "web", "HostnameConflict", "www-ptr.example.org")
	withinType(t, quick, reverse(t, v4c), dns.TypePTR, "PTR web.ptr-late.example.org")

	// A PTR record another writer put at an address's key is left alone
	// while it is there; skylb writes its own once it goes.
	v4d := "192.0.2.204"
	manual := `{"host":"manual-ptr.example.net","ttl":60}`
	key := stack.StoredPath(reverse(t, v4d))
	root := etcdAs(t, "root")
	if _, err := root.Put(ctxT(t), key, manual); err != nil {
		t.Fatal(err)
	}
	metallb(t, "ptr", "manual", statusIPs(v4d))
	within(t, quick, "manual.ptr.example.org", v4d)
	settle(t)
	withinType(t, 0, reverse(t, v4d), dns.TypePTR, "PTR manual-ptr.example.net")
	if resp, err := root.Get(ctxT(t), key); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != manual {
		t.Errorf("the hand-written PTR record at %s = %v, %v; want it unchanged", key, resp, err)
	}
	if _, err := root.Delete(ctxT(t), key); err != nil {
		t.Fatal(err)
	}
	withinType(t, quick, reverse(t, v4d), dns.TypePTR, "PTR manual.ptr.example.org")
	deleteService(t, "ptr", "manual")
	withinType(t, quick, reverse(t, v4d), dns.TypePTR)

	// skylb records lists them.
	out, _, has := skylbRecords(t)
	for _, want := range [][]string{
		{strings.TrimSuffix(reverse(t, v4), "."), "PTR", "web2.ptr.example.org", "30", "default"},
		{strings.TrimSuffix(reverse(t, v6), "."), "PTR", "www-ptr.example.org", "30", "default"},
	} {
		if !has(want...) {
			t.Errorf("skylb records has no line starting %q:\n%s", strings.Join(want, " "), out)
		}
	}

	// The reverse zone is served: its apex answers SOA, an address nobody
	// publishes NXDOMAIN.
	if rcode, _, err := stack.Query(st.DNSAddr, "2.0.192.in-addr.arpa", dns.TypeSOA); err != nil || rcode != dns.RcodeSuccess {
		t.Errorf("SOA 2.0.192.in-addr.arpa = %s, %v; want NOERROR", dns.RcodeToString[rcode], err)
	}
	withinType(t, 0, reverse(t, "192.0.2.254"), dns.TypePTR)

	// Deleted, each takes its PTR records with it.
	start = time.Now()
	deleteService(t, "ptr", "web2")
	withinType(t, quick, reverse(t, v4), dns.TypePTR)
	t.Logf("Service deleted: its PTR record NXDOMAIN after %v", time.Since(start).Round(time.Millisecond))
	deleteService(t, "ptr", "web")
	withinType(t, quick, reverse(t, v4b), dns.TypePTR)
	withinType(t, quick, reverse(t, v6), dns.TypePTR)
	deleteService(t, "ptr-late", "web")
	withinType(t, quick, reverse(t, v4c), dns.TypePTR)
	for _, a := range []string{v4, v4b, v4c, v6} {
		noKeys(t, strings.TrimSuffix(reverse(t, a), "."))
	}
}
