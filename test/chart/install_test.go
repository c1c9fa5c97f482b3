package chart

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

// TestInstall installs the chart with helm install in the real three-node
// cluster of test/cluster, as the chart's README says, beside etcd and
// CoreDNS deployed as the README's steps 2 to 5 say: the name of a
// LoadBalancer Service answers through CoreDNS's NodePort. Then a helm
// upgrade with a new setting rolls the pods onto a new ConfigMap (the old one
// removed) and the name still answers, and helm uninstall removes skylb's
// objects, cluster-wide ones included.
func TestInstall(t *testing.T) {
	ctx := cluster.RootTest(t, 12*time.Minute)
	root := stack.Root(t)
	bin := stack.Bin(t, root, "helm")
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	run(t, root, filepath.Join(root, "scripts", "gen-certs.sh"), "--secrets", secrets, filepath.Join(dir, "certs"))

	t0 := time.Now()
	c := cluster.UpWithImagesForTest(ctx, t, root, "chart", images.Options{},
		[]string{"get", "pods", "-A", "-o", "wide"},
		[]string{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		[]string{"-n", "skylb", "get", "all,configmaps,leases", "-o", "wide"},
		[]string{"-n", "skylb", "logs", "-l", "app.kubernetes.io/name=skylb", "--tail=40", "--prefix"})
	t.Logf("measure: cluster of %d nodes up in %v", len(c.Nodes), time.Since(t0).Round(time.Second))

	kubectl := func(args ...string) string {
		t.Helper()
		out, err := c.Kubectl(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// helm with the cluster's kubeconfig, and its cache and configuration in
	// the test's directory.
	helmRun := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = root
		cmd.Env = append(c.Env(), "HELM_CACHE_HOME="+filepath.Join(dir, "helm", "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(dir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(dir, "helm", "data"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	t0 = time.Now()
	kubectl("apply", "-k", filepath.Join(root, "etcd"))
	kubectl("apply", "-f", filepath.Join(secrets, "skylb-dns.yaml"))
	kubectl("-n", "skylb-dns", "rollout", "status", "statefulset/etcd", "--timeout=5m")
	kubectl("-n", "skylb-dns", "wait", "--for=condition=complete", "job/etcd-rbac-bootstrap", "--timeout=5m")
	kubectl("apply", "-k", filepath.Join(root, "coredns"))
	kubectl("apply", "-f", filepath.Join(secrets, "skylb-coredns.yaml"))
	kubectl("-n", "skylb-coredns", "rollout", "status", "deployment/coredns", "--timeout=3m")
	t.Logf("measure: etcd and CoreDNS up in %v", time.Since(t0).Round(time.Second))

	// The chart's README, "Install".
	t0 = time.Now()
	kubectl("create", "namespace", "skylb")
	kubectl("label", "namespace", "skylb", "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
	kubectl("apply", "-f", filepath.Join(secrets, "skylb.yaml"))
	helmRun("install", "skylb", "manifests/chart", "--namespace", "skylb")
	kubectl("-n", "skylb", "rollout", "status", "deployment/skylb", "--timeout=3m")
	t.Logf("measure: helm install -> skylb rolled out in %v", time.Since(t0).Round(time.Second))
	if holder := kubectl("-n", "skylb", "get", "lease", "skylb", "-o", "jsonpath={.spec.holderIdentity}"); holder == "" {
		t.Error("Got no holder of the Lease skylb, want a replica")
	}

	server := net.JoinHostPort(c.Nodes[0].IP.String(), strconv.Itoa(cluster.DNSNodePort))
	t0 = time.Now()
	want := c.ExposeWeb(ctx, t)
	cluster.WaitAnswer(ctx, t, server, "web.default.example.org", want)
	t.Logf("measure: LoadBalancer Service created -> its name answers %v through the NodePort in %v", want, time.Since(t0).Round(100*time.Millisecond))

	configMapRef := func() string {
		t.Helper()
		return kubectl("-n", "skylb", "get", "deployment", "skylb", "-o", "jsonpath={.spec.template.spec.containers[0].envFrom[0].configMapRef.name}")
	}
	old := configMapRef()
	t0 = time.Now()
	helmRun("upgrade", "skylb", "manifests/chart", "--namespace", "skylb", "--reuse-values", "--set", "settings.ttl=20")
	kubectl("-n", "skylb", "rollout", "status", "deployment/skylb", "--timeout=3m")
	t.Logf("measure: helm upgrade of a setting -> skylb rolled out in %v", time.Since(t0).Round(time.Second))
	fresh := configMapRef()
	if fresh == old {
		t.Errorf("Got the ConfigMap %s after a setting changed, want a new one", old)
	}
	if got := kubectl("-n", "skylb", "get", "configmap", fresh, "-o", "jsonpath={.data.SKYLB_TTL}"); got != "20" {
		t.Errorf("Got SKYLB_TTL %q in ConfigMap %s, want 20", got, fresh)
	}
	if out, err := c.Kubectl(ctx, "-n", "skylb", "get", "configmap", old); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("Got the old ConfigMap %s after the upgrade: %v, want NotFound\n%s", old, err, out)
	}
	cluster.WaitAnswer(ctx, t, server, "web.default.example.org", want)

	helmRun("uninstall", "skylb", "--namespace", "skylb", "--wait", "--timeout=3m")
	for _, obj := range []string{"clusterrole/skylb", "clusterrolebinding/skylb", "-n=skylb deployment/skylb",
		"-n=skylb configmap/" + fresh, "-n=skylb service/skylb-metrics"} {
		args := append([]string{"get"}, strings.Fields(obj)...)
		if out, err := c.Kubectl(ctx, args...); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("Got %s after helm uninstall: %v, want NotFound\n%s", obj, err, out)
		}
	}
}
