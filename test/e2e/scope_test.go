package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/test/stack"
)

// scopeCluster is a cluster of its own for the scoping tests (a second
// kube-apiserver, see stack.StartCluster), with the Gateway API's CRDs: the
// skylbs under test see only its objects, and the suite's skylb none of them.
// They publish into the stack's DNS etcd with owner ids of their own, and
// --cluster-label puts the owner id in every generated name.
type scopeCluster struct {
	*stack.Cluster
	gw      gatewayclient.Interface
	owners  []string
	started int // skylbs started, which name their processes
}

func startScopeCluster(t *testing.T, namespaces ...string) *scopeCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := st.StartCluster(ctx, "scope")
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	sc := &scopeCluster{Cluster: c}
	t.Cleanup(func() { sc.stop(t) })
	if err := c.InstallGatewayAPI(ctx); err != nil {
		t.Fatal(err)
	}
	if sc.gw, err = gatewayclient.NewForConfig(c.RestConfig); err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	return sc
}

// stop stops the cluster's API server and removes from etcd what the
// skylbs of the test's owner ids left: records, claims, registrations.
func (sc *scopeCluster) stop(t *testing.T) {
	_ = sc.APIServer.Stop()
	c := etcdAs(t, "root")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/skydns/", clientv3.WithPrefix())
	if err != nil {
		t.Errorf("list /skydns/: %v", err)
		return
	}
	for _, kv := range resp.Kvs {
		if v, err := skydns.Decode(kv.Value); err == nil && slices.Contains(sc.owners, v.Owner) {
			if _, err := c.Delete(ctx, string(kv.Key)); err != nil {
				t.Errorf("delete %s: %v", kv.Key, err)
			}
		}
	}
	claims, err := c.Get(ctx, "/skylb/claims/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Errorf("list claims: %v", err)
		return
	}
	for _, kv := range claims.Kvs {
		key := string(kv.Key)
		if slices.Contains(sc.owners, key[strings.LastIndexByte(key, '/')+1:]) {
			if _, err := c.Delete(ctx, key); err != nil {
				t.Errorf("delete %s: %v", key, err)
			}
		}
	}
	for _, owner := range sc.owners {
		if _, err := c.Delete(ctx, "/skylb/scopes/"+owner+"/", clientv3.WithPrefix()); err != nil {
			t.Errorf("delete the registrations of %s: %v", owner, err)
		}
	}
}

// skylb starts a skylb of owner id owner on the cluster with args, waits
// until it is ready, and stops it when the test ends.
func (sc *scopeCluster) skylb(t *testing.T, owner string, args ...string) *stack.Proc {
	t.Helper()
	if !slices.Contains(sc.owners, owner) {
		sc.owners = append(sc.owners, owner)
	}
	sc.started++
	p, err := st.StartSkylbNamed(ctxT(t), fmt.Sprintf("skylb-%s-%d", owner, sc.started), sc.args(owner, args...)...)
	if err != nil {
		t.Fatalf("start skylb %s: %v", owner, err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	stack.Eventually(t, 30*time.Second, "skylb "+owner+" ready", func() (bool, string) {
		code := readyz(p.HTTPAddr())
		return code == 200, fmt.Sprintf("/readyz %d", code)
	})
	return p
}

// args are a skylb's flags on the cluster, with args last.
func (sc *scopeCluster) args(owner string, args ...string) []string {
	return append([]string{"--kubeconfig=" + sc.Kubeconfig, "--owner-id=" + owner, "--cluster-label",
		"--resync-interval=1m", "--log-level=debug"}, args...)
}

// service creates a LoadBalancer Service of another implementation with
// addr in its status, and the given labels.
func (sc *scopeCluster) service(t *testing.T, ns, name, addr string, labels map[string]string) {
	t.Helper()
	sc.create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}, addr)
}

// serviceNamed is service with a hostname annotation for host.
func (sc *scopeCluster) serviceNamed(t *testing.T, ns, name, addr, host string) {
	t.Helper()
	sc.create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations: map[string]string{"skylb.io/hostname": host}}}, addr)
}

// create creates svc as a LoadBalancer Service of another implementation,
// with addr in its status.
func (sc *scopeCluster) create(t *testing.T, svc *corev1.Service, addr string) {
	t.Helper()
	ns, name := svc.Namespace, svc.Name
	class := "metallb.io/metallb"
	svc = &corev1.Service{
		ObjectMeta: svc.ObjectMeta,
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	svc, err := sc.Kube.CoreV1().Services(ns).Create(ctxT(t), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	if _, err := sc.Kube.CoreV1().Services(ns).UpdateStatus(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write status of %s/%s: %v", ns, name, err)
	}
}

// relabel replaces the labels of a Service.
func (sc *scopeCluster) relabel(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	svc, err := sc.Kube.CoreV1().Services(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Labels = labels
	if _, err := sc.Kube.CoreV1().Services(ns).Update(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("relabel %s/%s: %v", ns, name, err)
	}
}

// ingress creates an Ingress of a class (spec.ingressClassName, or the
// legacy annotation when legacy) for host, with addr in its status.
func (sc *scopeCluster) ingress(t *testing.T, ns, name, class string, legacy bool, host, addr string) {
	t.Helper()
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}},
	}
	if legacy {
		ing.Annotations = map[string]string{"kubernetes.io/ingress.class": class}
	} else {
		ing.Spec.IngressClassName = &class
	}
	ing, err := sc.Kube.NetworkingV1().Ingresses(ns).Create(ctxT(t), ing, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ingress %s/%s: %v", ns, name, err)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: addr}}
	if _, err := sc.Kube.NetworkingV1().Ingresses(ns).UpdateStatus(ctxT(t), ing, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write status of ingress %s/%s: %v", ns, name, err)
	}
}

// setIngressClass changes the class of an Ingress (spec.ingressClassName).
func (sc *scopeCluster) setIngressClass(t *testing.T, ns, name, class string) {
	t.Helper()
	ing, err := sc.Kube.NetworkingV1().Ingresses(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.IngressClassName, ing.Annotations = &class, nil
	if _, err := sc.Kube.NetworkingV1().Ingresses(ns).Update(ctxT(t), ing, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set the class of ingress %s/%s: %v", ns, name, err)
	}
}

// namespacedKubeconfig returns a kubeconfig of a ServiceAccount granted what
// manifests/namespaced grants: its cluster-wide ClusterRole, and the
// ClusterRole skylb-namespaced in namespaces alone.
func (sc *scopeCluster) namespacedKubeconfig(t *testing.T, namespaces ...string) string {
	t.Helper()
	ctx := ctxT(t)
	const saNS, sa = "scope-skylb", "skylb"
	kube := sc.Kube
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: saNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(saNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: saNS}}
	for _, f := range []string{"clusterrole.yaml", "clusterrole-namespaced.yaml"} {
		b, err := os.ReadFile(filepath.Join(st.Root, "manifests", "namespaced", f))
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(b, &role); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "skylb"}, RoleRef: ref("skylb"), Subjects: subjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "skylb"}, RoleRef: ref("skylb-namespaced"), Subjects: subjects,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := kube.CoreV1().ServiceAccounts(saNS).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "skylb.kubeconfig")
	if err := stack.TokenKubeconfig(sc.Kubeconfig, path, tr.Status.Token); err != nil {
		t.Fatal(err)
	}
	return path
}

// storedKeys returns the keys of skylb's records under name, with their
// values, read at one revision, and that revision.
func storedKeys(t *testing.T, c *clientv3.Client, names ...string) (map[string]*skydnsKV, int64) {
	t.Helper()
	out := map[string]*skydnsKV{}
	var rev int64
	for _, name := range names {
		resp, err := c.Get(ctxT(t), stack.StoredPath(name)+"/", clientv3.WithPrefix(), clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			v, err := skydns.Decode(kv.Value)
			if err != nil {
				t.Fatalf("%s: %v", kv.Key, err)
			}
			out[string(kv.Key)] = &skydnsKV{Value: v, ModRevision: kv.ModRevision}
		}
	}
	return out, rev
}

// skydnsKV is a record as stored, with its revision.
type skydnsKV struct {
	skydns.Value
	ModRevision int64
}

// logCount returns how many lines of p's log contain text.
func logCount(t *testing.T, p *stack.Proc, text string) int {
	t.Helper()
	b, err := os.ReadFile(p.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), text)
}

func TestScope(t *testing.T) {
	const (
		nsIn, nsOut  = "scope-in", "scope-out"
		nsLab, nsIng = "scope-labels", "scope-ingress"
		nsGW         = "scope-gateway"
		nsKeep       = "scope-keep"
		nsKeepOther  = "scope-keep-other"
	)
	sc := startScopeCluster(t, nsIn, nsOut, nsLab, nsIng, nsGW, nsKeep, nsKeepOther)
	root := etcdAs(t, "root")

	t.Run("namespaces, with the RBAC of those namespaces alone", func(t *testing.T) {
		sc.service(t, nsIn, "web", "192.0.2.101", nil)
		sc.service(t, nsOut, "web", "192.0.2.102", nil)
		p := sc.skylb(t, "scope-ns", "--kubeconfig="+sc.namespacedKubeconfig(t, nsIn), "--namespace="+nsIn)
		in, out := "web.scope-in.scope-ns.example.org", "web.scope-out.scope-ns.example.org"
		within(t, quick, in, "192.0.2.101")
		// The first pass, which saw both Services if skylb had watched
		// both namespaces, is in etcd: at the revision the one name is
		// there, the other is not.
		keys, rev := storedKeys(t, root, in, out)
		for key := range keys {
			if strings.HasPrefix(key, stack.StoredPath(out)+"/") {
				t.Errorf("at revision %d, %s holds %s, of a namespace not watched", rev, out, key)
			}
		}
		// Listing or watching anything across the cluster or in another
		// namespace would have been refused, and logged.
		if n := logCount(t, p, "forbidden"); n > 0 {
			t.Errorf("skylb was refused something %d times:%s", n, stack.Tail(p.LogFile(), 20))
		}
	})

	t.Run("a label selector publishes and removes as labels change", func(t *testing.T) {
		sc.service(t, nsLab, "public", "192.0.2.103", map[string]string{"dns": "public"})
		sc.service(t, nsLab, "later", "192.0.2.104", nil)
		sc.skylb(t, "scope-label", "--namespace="+nsLab, "--label-selector=dns=public")
		public, later := "public.scope-labels.scope-label.example.org", "later.scope-labels.scope-label.example.org"
		within(t, quick, public, "192.0.2.103")
		if keys, rev := storedKeys(t, root, later); len(keys) > 0 {
			t.Errorf("at revision %d, %s holds %d records without the label", rev, later, len(keys))
		}
		sc.relabel(t, nsLab, "later", map[string]string{"dns": "public"})
		within(t, quick, later, "192.0.2.104")
		sc.relabel(t, nsLab, "later", map[string]string{"dns": "private"})
		within(t, quick, later)
		within(t, quick, public, "192.0.2.103")
	})

	t.Run("ingress classes", func(t *testing.T) {
		sc.ingress(t, nsIng, "nginx", "nginx", false, "nginx.scope.example.org", "192.0.2.105")
		sc.ingress(t, nsIng, "legacy", "nginx", true, "legacy.scope.example.org", "192.0.2.106")
		sc.ingress(t, nsIng, "traefik", "traefik", false, "traefik.scope.example.org", "192.0.2.107")
		sc.skylb(t, "scope-class", "--namespace="+nsIng, "--source=ingress", "--ingress-class=nginx")
		within(t, quick, "nginx.scope.example.org", "192.0.2.105")
		within(t, quick, "legacy.scope.example.org", "192.0.2.106")
		if keys, rev := storedKeys(t, root, "traefik.scope.example.org"); len(keys) > 0 {
			t.Errorf("at revision %d, the Ingress of class traefik has %d records", rev, len(keys))
		}
		sc.setIngressClass(t, nsIng, "traefik", "nginx")
		within(t, quick, "traefik.scope.example.org", "192.0.2.107")
		sc.setIngressClass(t, nsIng, "nginx", "traefik")
		within(t, quick, "nginx.scope.example.org")
	})

	t.Run("GatewayClasses", func(t *testing.T) {
		createGatewayOfClass(t, sc.gw, nsGW, "public", "public", []gatewayv1.Listener{listener("http", 80, "gw-public.scope.example.org"),
			listener("any", 8080, "")}, "192.0.2.108")
		createGatewayOfClass(t, sc.gw, nsGW, "internal", "internal", []gatewayv1.Listener{listener("http", 80, "gw-internal.scope.example.org"),
			listener("any", 8080, "")}, "192.0.2.109")
		createRoute(t, sc.gw, nsGW, "public", nsGW, "public", "any", "route-public.scope.example.org")
		setAccepted(t, sc.gw, nsGW, "public", true)
		createRoute(t, sc.gw, nsGW, "internal", nsGW, "internal", "any", "route-internal.scope.example.org")
		setAccepted(t, sc.gw, nsGW, "internal", true)
		sc.skylb(t, "scope-gw", "--namespace="+nsGW, "--source=gateway,gateway-httproute", "--gateway-class=public")
		within(t, quick, "gw-public.scope.example.org", "192.0.2.108")
		within(t, quick, "route-public.scope.example.org", "192.0.2.108")
		if keys, rev := storedKeys(t, root, "gw-internal.scope.example.org", "route-internal.scope.example.org"); len(keys) > 0 {
			t.Errorf("at revision %d, the Gateway of class internal and its route have records: %v", rev, slices.Collect(maps.Keys(keys)))
		}
	})

	// A skylb narrowed to fewer namespaces and sources, with the same
	// owner id, deletes only the records of its owner id in its scope.
	const keep = "scope-keep"
	webKeep, goneKeep := "web.scope-keep.scope-keep.example.org", "gone.scope-keep.scope-keep.example.org"
	frontKeep, otherKeep := "front.scope.example.org", "web.scope-keep-other.scope-keep.example.org"
	scopedArgs := []string{"--namespace=" + nsKeep, "--source=service"}
	t.Run("a scoped skylb deletes only what it owns in its scope", func(t *testing.T) {
		sc.service(t, nsKeep, "web", "192.0.2.121", nil)
		sc.service(t, nsKeep, "gone", "192.0.2.122", nil)
		sc.ingress(t, nsKeep, "front", "nginx", false, frontKeep, "192.0.2.123")
		sc.service(t, nsKeepOther, "web", "192.0.2.124", nil)
		wide := sc.skylb(t, keep, "--namespace="+nsKeep+","+nsKeepOther)
		within(t, quick, webKeep, "192.0.2.121")
		within(t, quick, goneKeep, "192.0.2.122")
		within(t, quick, frontKeep, "192.0.2.123")
		within(t, quick, otherKeep, "192.0.2.124")
		if err := wide.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := sc.Kube.CoreV1().Services(nsKeep).Delete(ctxT(t), "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		before, _ := storedKeys(t, root, webKeep, goneKeep, frontKeep, otherKeep)
		claimsBefore := claimRevisions(t, root, keep, webKeep, goneKeep, frontKeep, otherKeep)

		scoped := sc.skylb(t, keep, scopedArgs...)
		sc.service(t, nsKeep, "sentinel", "192.0.2.125", nil)
		// The sentinel comes after the first full pass, whose deletions
		// are in etcd once it answers.
		within(t, quick, "sentinel.scope-keep.scope-keep.example.org", "192.0.2.125")
		within(t, quick, goneKeep)
		after, rev := storedKeys(t, root, webKeep, goneKeep, frontKeep, otherKeep)
		claimsAfter := claimRevisions(t, root, keep, webKeep, goneKeep, frontKeep, otherKeep)
		outside := 0
		for key, b := range before {
			a, ok := after[key]
			switch {
			case b.Source == "service/"+nsKeep+"/gone":
				if ok {
					t.Errorf("at revision %d, %s of the deleted Service is still there", rev, key)
				}
			case !ok:
				t.Errorf("at revision %d, %s (%s) was deleted", rev, key, b.Source)
			case a.ModRevision != b.ModRevision:
				t.Errorf("%s (%s) was written again: revision %d, was %d", key, b.Source, a.ModRevision, b.ModRevision)
			case b.Source != "service/"+nsKeep+"/web":
				outside++
			}
		}
		if outside < 2 {
			t.Errorf("%d records of the Ingress and of the other namespace's Service kept, want at least 2", outside)
		}
		for name, b := range claimsBefore {
			a, ok := claimsAfter[name]
			switch {
			case name == goneKeep && ok:
				t.Errorf("the claim of %s is still there", name)
			case name != goneKeep && a != b:
				t.Errorf("the claim of %s: revision %d, was %d", name, a, b)
			}
		}
		if got, err := stack.Metric(ctxT(t), scoped.HTTPAddr(), "skylb_records_outside_scope"); err != nil || got != float64(outside) {
			t.Errorf("skylb_records_outside_scope = %v (%v), want %d", got, err, outside)
		}
		within(t, quick, frontKeep, "192.0.2.123")
		within(t, quick, otherKeep, "192.0.2.124")

		// A name kept for the other namespace's Service stays its own: a
		// Service of the scope asking for it is refused it.
		sc.serviceNamed(t, nsKeep, "intruder", "192.0.2.127", otherKeep)
		expectEventIn(t, sc.Kube, nsKeep, "intruder", "HostnameConflict", "outside the namespaces and sources this skylb watches")
		within(t, quick, "intruder.scope-keep.scope-keep.example.org", "192.0.2.127")
		within(t, quick, otherKeep, "192.0.2.124")
	})

	t.Run("two scopes under one owner id hold each other", func(t *testing.T) {
		scoped := sc.skylb(t, keep, scopedArgs...)
		sc.service(t, nsKeep, "sentinel2", "192.0.2.128", nil)
		within(t, quick, "sentinel2.scope-keep.scope-keep.example.org", "192.0.2.128")
		// skylb --once of another scope fails at once, and writes nothing
		// but its own registration: no record, no claim.
		from := revisionOf(t, root)
		once, err := st.StartSkylbNamed(ctxT(t), "skylb-"+keep+"-once", sc.args(keep, "--namespace="+nsKeepOther, "--once")...)
		if err != nil && once == nil {
			t.Fatal(err)
		}
		select {
		case <-once.Exited():
		case <-time.After(30 * time.Second):
			t.Fatal("skylb --once of another scope still runs after 30 s")
		}
		if once.ExitError() == nil || logCount(t, once, "another skylb with this owner id runs with another scope") == 0 {
			t.Errorf("skylb --once of another scope: exit %v, want an error saying why:%s", once.ExitError(), stack.Tail(once.LogFile(), 10))
		}
		for _, ev := range changes(t, root, from, revisionOf(t, root)) {
			if ev.owner == keep && !strings.HasPrefix(ev.key, "/skylb/scopes/"+keep+"/") {
				t.Errorf("while skylb --once of another scope ran, %s %s of owner %s", ev.kind, ev.key, keep)
			}
		}

		// A skylb of another scope that keeps running holds both.
		other := sc.skylb(t, keep, "--namespace="+nsKeepOther)
		for _, p := range []*stack.Proc{scoped, other} {
			stack.Eventually(t, 10*time.Second, p.Name+" held", func() (bool, string) {
				v, err := stack.Metric(ctxT(t), p.HTTPAddr(), "skylb_scope_conflict")
				return err == nil && v == 1, fmt.Sprintf("skylb_scope_conflict %v (%v)", v, err)
			})
		}
		waits := logCount(t, scoped, "writing to etcd waits")
		sc.service(t, nsKeep, "during", "192.0.2.126", nil)
		during := "during.scope-keep.scope-keep.example.org"
		stack.Eventually(t, 10*time.Second, "the held skylb trying to write", func() (bool, string) {
			n := logCount(t, scoped, "writing to etcd waits")
			return n > waits, fmt.Sprintf("%d lines", n)
		})
		if keys, rev := storedKeys(t, root, during); len(keys) > 0 {
			t.Errorf("at revision %d, a held skylb wrote %d records of %s", rev, len(keys), during)
		}
		if err := other.Stop(); err != nil {
			t.Fatal(err)
		}
		d := within(t, 15*time.Second, during, "192.0.2.126")
		t.Logf("%s answered %v after the skylb of the other scope stopped", during, d)
	})
}

// claimRevisions returns, by name, the revision of owner's claim on it; a
// name without one is left out.
func claimRevisions(t *testing.T, c *clientv3.Client, owner string, names ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, name := range names {
		resp, err := c.Get(ctxT(t), "/skylb/claims/"+name+"/"+owner)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			out[name] = kv.ModRevision
		}
	}
	return out
}

func revisionOf(t *testing.T, c *clientv3.Client) int64 {
	t.Helper()
	resp, err := c.Get(ctxT(t), "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// change is one key written or deleted, with the owner of its value (before
// a deletion) or of its claim.
type change struct {
	kind, key, owner string
}

// changes returns the changes of etcd after revision from up to to.
func changes(t *testing.T, c *clientv3.Client, from, to int64) []change {
	t.Helper()
	if to <= from {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 10*time.Second)
	defer cancel()
	var out []change
	for wr := range c.Watch(ctx, "/", clientv3.WithPrefix(), clientv3.WithRev(from+1), clientv3.WithPrevKV()) {
		if err := wr.Err(); err != nil {
			t.Fatalf("watch from %d: %v", from+1, err)
		}
		for _, ev := range wr.Events {
			if ev.Kv.ModRevision > to {
				return out
			}
			kv := ev.Kv
			if ev.Type == clientv3.EventTypeDelete && ev.PrevKv != nil {
				kv = ev.PrevKv
			}
			key := string(ev.Kv.Key)
			owner := ""
			if v, err := skydns.Decode(kv.Value); err == nil {
				owner = v.Owner
			}
			if strings.HasPrefix(key, "/skylb/claims/") {
				owner = key[strings.LastIndexByte(key, '/')+1:]
			}
			out = append(out, change{kind: ev.Type.String(), key: key, owner: owner})
			if ev.Kv.ModRevision == to {
				return out
			}
		}
	}
	t.Fatalf("watch from %d ended before revision %d", from+1, to)
	return nil
}
