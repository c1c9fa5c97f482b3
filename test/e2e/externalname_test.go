package e2e

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/miekg/dns"

	"github.com/skylb/skylb/test/stack"
)

// externalNameService creates an ExternalName Service pointing to target.
func externalNameService(t *testing.T, ns, name, target string, opts ...svcOpt) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
	}
	for _, o := range opts {
		o(svc)
	}
	if _, err := st.Kube.CoreV1().Services(ns).Create(ctxT(t), svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ExternalName service %s/%s: %v", ns, name, err)
	}
}

// updateService changes a Service with change, again after a conflict.
func updateService(t *testing.T, ns, name string, change func(*corev1.Service)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := st.Kube.CoreV1().Services(ns).Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(svc)
		_, err = st.Kube.CoreV1().Services(ns).Update(ctxT(t), svc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update service %s/%s: %v", ns, name, err)
	}
}

func deleteService(t *testing.T, ns, name string) {
	t.Helper()
	if err := st.Kube.CoreV1().Services(ns).Delete(ctxT(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete service %s/%s: %v", ns, name, err)
	}
}

// noKeys checks that etcd holds nothing at name (where a PTR record is
// stored) or beneath it (where the other records are).
func noKeys(t *testing.T, name string) {
	t.Helper()
	root := etcdAs(t, "root")
	at, err := root.Get(ctxT(t), stack.StoredPath(name), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	beneath, err := root.Get(ctxT(t), stack.StoredPath(name)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if at.Count+beneath.Count != 0 {
		t.Errorf("etcd holds %d keys at or beneath %s, want none", at.Count+beneath.Count, name)
	}
}

// ExternalName Services with a hostname annotation are CNAMEs to their
// spec.externalName, under their generated and annotated names, as CoreDNS
// answers them; the others are left alone; bad input is told and loses
// nothing else.
func TestExternalNameServices(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "alias")

	start := time.Now()
	externalNameService(t, "alias", "db", "db.provider.example.net", annotate("skylb.io/hostname", "db-alias.example.org"))
	withinType(t, quick, "db.alias.example.org", dns.TypeA, "CNAME db.provider.example.net")
	withinType(t, quick, "db-alias.example.org", dns.TypeA, "CNAME db.provider.example.net")
	withinType(t, quick, "db-alias.example.org", dns.TypeAAAA, "CNAME db.provider.example.net")
	t.Logf("ExternalName Service created: both names answer the CNAME after %v", time.Since(start).Round(time.Millisecond))
	externalNameService(t, "alias", "cache", "cache.provider.example.net", annotate("external-dns.alpha.kubernetes.io/hostname", "cache-alias.example.org"))
	withinType(t, quick, "cache-alias.example.org", dns.TypeA, "CNAME cache.provider.example.net")
	expectEvent(t, "alias", "db", "Published", "published db-alias.example.org, db.alias.example.org: CNAME db.provider.example.net")

	start = time.Now()
	updateService(t, "alias", "db", func(s *corev1.Service) { s.Spec.ExternalName = "db2.provider.example.net" })
	withinType(t, quick, "db-alias.example.org", dns.TypeA, "CNAME db2.provider.example.net")
	withinType(t, quick, "db.alias.example.org", dns.TypeA, "CNAME db2.provider.example.net")
	t.Logf("spec.externalName changed: the new CNAME answers after %v", time.Since(start).Round(time.Millisecond))

	// A target inside the zone: CoreDNS follows it and adds its addresses.
	metallb(t, "alias", "backend", []corev1.LoadBalancerIngress{{IP: "203.0.113.77"}})
	externalNameService(t, "alias", "front", "backend.alias.example.org", annotate("skylb.io/hostname", ""))
	withinType(t, quick, "front.alias.example.org", dns.TypeA, "203.0.113.77", "CNAME backend.alias.example.org")

	// Without a hostname annotation: not published (--external-name-services=annotated).
	externalNameService(t, "alias", "internal", "db.prod.svc.cluster.local")
	// Bad input: an IP address as the external name, and a CNAME loop.
	externalNameService(t, "alias", "ip", "192.0.2.50", annotate("skylb.io/hostname", ""))
	externalNameService(t, "alias", "loop", "a.loop.alias.example.org", annotate("skylb.io/hostname", ""))
	expectEvent(t, "alias", "ip", "InvalidExternalName", `"192.0.2.50": an IP address`)
	expectEvent(t, "alias", "loop", "CNAMELoop", "loop.alias.example.org")
	settle(t) // skylb is done with every Service above
	for _, name := range []string{"internal.alias.example.org", "ip.alias.example.org", "loop.alias.example.org"} {
		withinType(t, 0, name, dns.TypeA)
		noKeys(t, name)
	}
	// What came before is untouched.
	withinType(t, 0, "db-alias.example.org", dns.TypeA, "CNAME db2.provider.example.net")
	// No status: an ExternalName Service is no load balancer.
	if got := externalIPs(t, "alias", "db"); len(got) != 0 {
		t.Errorf("status of alias/db = %q, want none", got)
	}

	start = time.Now()
	deleteService(t, "alias", "db")
	withinType(t, quick, "db-alias.example.org", dns.TypeA)
	withinType(t, quick, "db.alias.example.org", dns.TypeA)
	t.Logf("ExternalName Service deleted: both names NXDOMAIN after %v", time.Since(start).Round(time.Millisecond))
	noKeys(t, "db-alias.example.org")
}
