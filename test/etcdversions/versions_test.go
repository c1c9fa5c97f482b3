// Package etcdversions proves skylb against every etcd version it supports:
// the one etcd/kustomization.yaml pins (bin/etcd) and the others that
// scripts/build-bins.sh builds from test/tools/etcd (bin/etcd-VERSION). Each
// runs as the DNS etcd of a real local stack, with mutual TLS, authentication
// on and skylb's user limited to its prefixes (etcd/rbac-bootstrap.sh); skylb
// runs with leader election fenced in etcd and leased records, so that every
// etcd call it makes meets that version's permission checks.
package etcdversions

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skylb/skylb/test/stack"
)

// node is the cluster's one Node. Its address is a documentation address,
// used only as data in DNS answers; nothing is sent to it.
var node = stack.NodeSpec{Name: "node-1", InternalIP: []string{"192.0.2.11"}, PodCIDR: "10.244.1.0/24"}

// etcdBinaries returns the etcd servers to test, by version: bin/etcd (the
// pinned one) and every bin/etcd-VERSION.
func etcdBinaries(t *testing.T, bin string) map[string]string {
	t.Helper()
	out := map[string]string{}
	others, err := filepath.Glob(filepath.Join(bin, "etcd-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{filepath.Join(bin, "etcd")}, others...) {
		v, err := exec.Command(path, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", path, err)
		}
		version, _, _ := strings.Cut(strings.TrimPrefix(string(v), "etcd Version: "), "\n")
		out[version] = path
	}
	return out
}

func TestSkylbOnEveryEtcdVersion(t *testing.T) {
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if missing := stack.MissingBinaries(bin); len(missing) > 0 {
		t.Skipf("the real binaries %v are missing; run scripts/build-bins.sh", missing)
	}
	binaries := etcdBinaries(t, bin)
	if len(binaries) < 3 {
		t.Fatalf("want the pinned etcd and the newest 3.5 and 3.6 in %s, found %v", bin, binaries)
	}
	versions := make([]string, 0, len(binaries))
	for v := range binaries {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	for _, v := range versions {
		t.Run("etcd-"+v, func(t *testing.T) { testVersion(t, root, binaries[v], v) })
	}
}

func testVersion(t *testing.T, root, etcd, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{Root: root, Dir: t.TempDir(), EtcdBinary: etcd})
	if err != nil {
		t.Fatalf("start the stack with etcd %s: %v", version, err)
	}
	t.Cleanup(st.Stop)

	// The server is the version asked for, with authentication on.
	rootClient, err := st.EtcdClient("root")
	if err != nil {
		t.Fatal(err)
	}
	defer rootClient.Close()
	status, err := rootClient.Status(ctx, st.EtcdURLs[0])
	if err != nil {
		t.Fatalf("etcd status as root: %v", err)
	}
	if status.Version != version {
		t.Fatalf("Got etcd version %s, want %s", status.Version, version)
	}
	if auth, err := rootClient.AuthStatus(ctx); err != nil || !auth.Enabled {
		t.Fatalf("Got authentication enabled %v (%v), want true", auth != nil && auth.Enabled, err)
	}

	if err := st.CreateNodes(ctx, node); err != nil {
		t.Fatal(err)
	}
	kctx, stopKubelet := context.WithCancel(context.Background())
	t.Cleanup(stopKubelet)
	go stack.RunKubelet(kctx, st.Kube, []string{node.Name})

	start := time.Now()
	p, err := st.StartSkylb(ctx, "--leader-elect", "--leader-elect-namespace=default",
		"--record-expiry=30s", "--default-namespace=default")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WaitSkylbReady(ctx, p); err != nil {
		t.Fatalf("skylb with etcd %s: %v", version, err)
	}
	t.Logf("etcd %s: skylb ready in %v", version, time.Since(start).Round(time.Millisecond))

	d := stack.Deployment("default", "web", 1, 8080)
	if _, err := st.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := st.Kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web.default.example.org", "web.example.org"} {
		waitAnswer(ctx, t, st, name, node.InternalIP...)
	}

	// The inspection tool reads with the same limited user.
	out, err := exec.CommandContext(ctx, st.SkylbBinary(), "records",
		"--etcd-endpoints="+strings.Join(st.EtcdURLs, ","),
		"--etcd-ca-file="+filepath.Join(st.Certs, "ca.crt"),
		"--etcd-cert-file="+filepath.Join(st.Certs, "skylb.crt"),
		"--etcd-key-file="+filepath.Join(st.Certs, "skylb.key")).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("web.default.example.org")) {
		t.Fatalf("skylb records with etcd %s: %v\n%s", version, err, out)
	}

	if err := st.Kube.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAnswer(ctx, t, st, "web.default.example.org")

	log, err := os.ReadFile(p.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(log, []byte("permission denied")) {
		t.Errorf("skylb's log with etcd %s mentions permission denied:\n%s", version, log)
	}
}

// waitAnswer waits until CoreDNS answers name with exactly want, or with no
// address when want is empty.
func waitAnswer(ctx context.Context, t *testing.T, st *stack.Stack, name string, want ...string) {
	t.Helper()
	var got []string
	var err error
	for ctx.Err() == nil {
		got, err = st.LookupA(ctx, name)
		if err == nil && slices.Equal(got, want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: CoreDNS answers %q (%v), want %q", name, got, err, want)
}
