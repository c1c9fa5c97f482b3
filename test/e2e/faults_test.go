package e2e

// The tests in this file stop and restart parts of the stack, and start them
// again before they end.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

func etcdAs(t *testing.T, user string) *clientv3.Client {
	t.Helper()
	c, err := st.EtcdClient(user)
	if err != nil {
		t.Fatalf("etcd client as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestEtcdAccessControl(t *testing.T) {
	ctx := ctxT(t)
	tctx := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		t.Cleanup(cancel)
		return c
	}
	skylb, coredns := etcdAs(t, "skylb"), etcdAs(t, "coredns")
	if _, err := skylb.Put(tctx(), "/other/key", "x"); err == nil {
		t.Errorf("user skylb wrote outside /skydns/")
	}
	if _, err := skylb.Put(tctx(), "/skydnsx/key", "x"); err == nil {
		t.Errorf("user skylb wrote to /skydnsx/, which only shares a byte prefix with /skydns/")
	}
	if _, err := coredns.Put(tctx(), "/skydns/org/example/rbac/x", `{"host":"192.0.2.1"}`); err == nil {
		t.Errorf("user coredns wrote under /skydns/")
	}
	if _, err := coredns.Get(tctx(), "/skydns/", clientv3.WithPrefix(), clientv3.WithLimit(1)); err != nil {
		t.Errorf("user coredns cannot read /skydns/: %v", err)
	}

	// A client that trusts the CA but presents no certificate is refused.
	ca, err := os.ReadFile(filepath.Join(st.Certs, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	anon, err := clientv3.New(clientv3.Config{
		Endpoints: []string{st.EtcdURL}, DialTimeout: 2 * time.Second,
		TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Logger: zap.NewNop(),
	})
	if err == nil {
		defer anon.Close()
		if _, err := anon.Get(tctx(), "/skydns/", clientv3.WithPrefix()); err == nil {
			t.Errorf("a client without a certificate read /skydns/")
		}
	}
}

// foreign are keys skylb does not own: another cluster's and hand-written ones.
var foreign = map[string]string{
	"/skydns/org/example/partner/other-cluster-1": `{"host":"198.51.100.50","ttl":60,"owner":"other-cluster"}`,
	"/skydns/org/example/manual/x":                `{"host":"198.51.100.51"}`,
	"/skydns/org/example/shared/other-cluster-1":  `{"host":"198.51.100.52","owner":"other-cluster"}`,
}

func TestForeignKeysSurvive(t *testing.T) {
	writeForeign(t)
	// skylb publishes a name where another owner has a key: CoreDNS merges them.
	namespace(t, "partner")
	metallb(t, "partner", "shared", []corev1.LoadBalancerIngress{{IP: "203.0.113.40"}}, annotate("skylb.io/hostname", "shared.example.org"))
	within(t, quick, "shared.example.org", "198.51.100.52", "203.0.113.40")
	if err := st.Kube.CoreV1().Services("partner").Delete(ctxT(t), "shared", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, quick, "shared.example.org", "198.51.100.52")
	within(t, quick, "partner.example.org", "198.51.100.50")
	checkForeign(t)
}

// writeForeign writes the foreign keys that are not in etcd as they should
// be, so that a test checks them whatever ran before it.
func writeForeign(t *testing.T) {
	t.Helper()
	root := etcdAs(t, "root")
	for k, v := range foreign {
		resp, err := root.Get(ctxT(t), k)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == v {
			continue
		}
		if _, err := root.Put(ctxT(t), k, v); err != nil {
			t.Fatal(err)
		}
	}
}

// checkForeign fails unless the foreign keys are as writeForeign wrote them.
func checkForeign(t *testing.T) {
	t.Helper()
	root := etcdAs(t, "root")
	for k, v := range foreign {
		resp, err := root.Get(ctxT(t), k)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != v {
			t.Errorf("foreign key %s changed: %v", k, resp.Kvs)
		}
	}
}

// revision returns the revision of the DNS etcd.
func revision(t *testing.T) int64 {
	t.Helper()
	return revisionOf(t, etcdAs(t, "root"))
}

// TestRestartWithNothingChangedWritesNothing watches every key of the DNS
// etcd across a restart of skylb: the records of the default view and of
// every other view, and what skylb keeps under /skylb/.
func TestRestartWithNothingChangedWritesNothing(t *testing.T) {
	writeForeign(t)
	// Records in every tree whatever ran before: addresses with their PTR
	// records, an SRV record, and the ClusterIP in the view internal.
	namespace(t, "restart")
	metallb(t, "restart", "web", []corev1.LoadBalancerIngress{{IP: "192.0.2.60"}, {IP: "2001:db8::60"}},
		annotate("skylb.io/address-source.internal", "cluster-ip"))
	settle(t) // every tree holds what skylb was given
	trees := append([]string{"/skydns/"}, viewTrees()...)
	held := map[string]int64{}
	for _, tree := range append(slices.Clone(trees), "/skylb/") {
		resp, err := etcdAs(t, "root").Get(ctxT(t), tree, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		held[tree] = resp.Count
	}
	before := revision(t)
	p := st.Proc("skylb")
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := st.WaitSkylbReady(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	// The restarted skylb's first pass comes before the Service mark
	// creates now, in every tree: between the two marks, etcd holds the
	// second mark's records and its claim, and nothing else.
	name := mark(t)
	after := revision(t)
	seen := map[string]int{}
	var state []string
	for _, w := range writesBetween(t, before, after) {
		kind := restartWriteKind(w.key, name, trees)
		if kind == "" || w.deleted {
			t.Errorf("skylb wrote across a restart with nothing changed: %s", w)
			continue
		}
		seen[kind]++
		if strings.HasPrefix(w.key, "/skylb/") {
			state = append(state, fmt.Sprintf("%s (%s)", w.key, kind))
		}
	}
	// Each tree's mark is seen: the watch covers them all.
	for _, tree := range trees {
		if seen["the mark's record in "+tree] == 0 {
			t.Errorf("no write of the mark %s seen in %s between revisions %d and %d", name, tree, before, after)
		}
	}
	if seen["the mark's claim"] != 1 {
		t.Errorf("the mark's claim written %d times, want once", seen["the mark's claim"])
	}
	t.Logf("restarted over %v keys; revisions %d to %d wrote %v; under /skylb/ %d keys: %s",
		held, before, after, seen, len(state), strings.Join(state, ", "))
	checkForeign(t)
}

// restartWriteKind returns what a key written across a restart with nothing
// changed is, when it is one skylb may write then: the mark's records in each
// tree, the mark's claim, and a registration of skylb's scope (the
// registration is on a lease, written anew by each start once another
// instance of the owner id registered); "" for any other.
func restartWriteKind(key, mark string, trees []string) string {
	for _, tree := range trees {
		if strings.HasPrefix(key, markPath(tree, mark)) {
			return "the mark's record in " + tree
		}
	}
	switch {
	case strings.HasPrefix(key, "/skylb/claims/"+mark+".settle."+st.Zone+"/"):
		return "the mark's claim"
	case strings.HasPrefix(key, "/skylb/scopes/default/"):
		return "a scope registration"
	}
	return ""
}

func TestEtcdDownWhileServicesChange(t *testing.T) {
	writeForeign(t)
	namespace(t, "outage")
	metallb(t, "outage", "stays", []corev1.LoadBalancerIngress{{IP: "203.0.113.50"}})
	metallb(t, "outage", "goes", []corev1.LoadBalancerIngress{{IP: "203.0.113.51"}})
	within(t, quick, "stays.outage.example.org", "203.0.113.50")
	within(t, quick, "goes.outage.example.org", "203.0.113.51")

	etcd := st.Proc("etcd")
	if err := etcd.Stop(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	metallb(t, "outage", "new", []corev1.LoadBalancerIngress{{IP: "203.0.113.52"}})
	if err := st.Kube.CoreV1().Services("outage").Delete(ctxT(t), "goes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20*time.Second - time.Since(down))
	if !st.Proc("skylb").Running() {
		t.Fatal("skylb exited while etcd was down")
	}
	if err := etcd.Restart(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	root := etcdAs(t, "root")
	stack.Eventually(t, 10*time.Second, "etcd holds the records made while it was down", func() (bool, string) {
		hosts := map[string]string{}
		for _, name := range []string{"new", "goes", "stays"} {
			resp, err := root.Get(ctxT(t), "/skydns/org/example/outage/"+name+"/", clientv3.WithPrefix())
			if err != nil {
				return false, err.Error()
			}
			for _, kv := range resp.Kvs {
				hosts[name] += string(kv.Value)
			}
		}
		ok := strings.Contains(hosts["new"], "203.0.113.52") && hosts["goes"] == "" && strings.Contains(hosts["stays"], "203.0.113.50")
		return ok, fmt.Sprintf("%q", hosts)
	})
	t.Logf("skylb converged %v after etcd returned", time.Since(back).Round(time.Millisecond))
	// CoreDNS's own etcd client reconnects with gRPC's default backoff, which
	// grows towards two minutes; after 20 s down it may take a while.
	within(t, time.Minute, "new.outage.example.org", "203.0.113.52")
	within(t, quick, "goes.outage.example.org")
	within(t, quick, "stays.outage.example.org", "203.0.113.50")
	t.Logf("CoreDNS answers again %v after etcd returned", time.Since(back).Round(time.Millisecond))
	checkForeign(t)
}

func TestAPIServerRestart(t *testing.T) {
	namespace(t, "api")
	metallb(t, "api", "before", []corev1.LoadBalancerIngress{{IP: "203.0.113.60"}})
	within(t, quick, "before.api.example.org", "203.0.113.60")
	settle(t) // every tree holds what skylb was given
	rev := revision(t)

	api := st.Proc("kube-apiserver")
	if err := api.Stop(); err != nil {
		t.Fatal(err)
	}
	// skylb has seen the API server go: its reads fail and /readyz says so.
	stack.Eventually(t, 30*time.Second, "skylb sees the API server gone", func() (bool, string) {
		code, body := get(t, st.Proc("skylb"), "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "API server unreachable"), fmt.Sprint(code, " ", body)
	})
	if got := revision(t); got != rev {
		t.Errorf("etcd revision moved from %d to %d while the API server was down", rev, got)
	}
	within(t, quick, "before.api.example.org", "203.0.113.60")
	if err := api.Restart(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	stack.Eventually(t, time.Minute, "API server back", func() (bool, string) {
		_, err := st.Kube.CoreV1().Namespaces().Get(ctxT(t), "api", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	metallb(t, "api", "after", []corev1.LoadBalancerIngress{{IP: "203.0.113.61"}})
	// skylb's reads wait for the API server instead of failing, so its
	// informers do not back off while it is away (internal/kubeclient).
	took := within(t, 10*time.Second, "after.api.example.org", "203.0.113.61")
	t.Logf("a change made after the API server returned landed after %v", took.Round(time.Millisecond))
	within(t, quick, "before.api.example.org", "203.0.113.60")
	if !st.Proc("skylb").Running() {
		t.Fatal("skylb exited while the API server was down")
	}
	controllersBack(t)
}
