// Package flux runs Flux's own source-controller and kustomize-controller in
// the real three-node cluster of test/cluster, installed as Flux installs
// them: namespace flux-system, the CRDs, RBAC and Deployments of the
// controllers' modules (config/ of github.com/fluxcd/NAME at the version
// test/tools/flux/NAME/go.mod requires), with the images test/images builds
// from the binaries of scripts/build-bins.sh. Then it deploys skylb the way
// the README's "With Flux" does: the Secrets of scripts/gen-certs.sh
// --secrets, and manifests/flux, its GitRepository pointed at the commit
// checked out, served over Git's smart HTTP protocol by the test.
package flux

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

// controllers are the Flux controllers the test installs, by module name.
var controllers = []string{"source-controller", "kustomize-controller"}

func TestFlux(t *testing.T) {
	ctx := cluster.RootTest(t, 10*time.Minute)
	root := stack.Root(t)

	install, err := writeInstall(ctx, root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	c := upCluster(ctx, t, root)
	t.Logf("measure: cluster of %d nodes up in %v", len(c.Nodes), time.Since(t0).Round(time.Second))

	t0 = time.Now()
	if out, err := c.Kubectl(ctx, "apply", "--server-side", "-k", install); err != nil {
		t.Fatalf("install Flux: %v\n%s", err, out)
	}
	for _, name := range controllers {
		if out, err := c.Kubectl(ctx, "-n", "flux-system", "rollout", "status", "deployment/"+name, "--timeout=3m"); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	t.Logf("measure: Flux installed -> source-controller and kustomize-controller Ready in %v", time.Since(t0).Round(time.Second))
	for _, name := range controllers {
		out, err := c.Kubectl(ctx, "-n", "flux-system", "get", "pods", "-l", "app="+name,
			"-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(out), "ghcr.io/fluxcd/"+name+":v1.9.6 True"; got != want {
			t.Errorf("Got %s pods %q, want %q", name, got, want)
		}
	}
	if t.Failed() {
		return
	}

	t.Run("deploy skylb from Git", func(t *testing.T) {
		u, err := url.Parse(c.APIServer)
		if err != nil {
			t.Fatal(err)
		}
		repo := serveGit(ctx, t, root, u.Hostname())
		t0 := time.Now()
		ready := deployFromGit(ctx, t, c, root, repo)
		for i, name := range kustomizations {
			t.Logf("measure: manifests/flux applied -> Kustomization %s Ready in %v", name, ready[name].Sub(t0).Round(time.Second))
			if i > 0 && ready[name].Before(ready[kustomizations[i-1]]) {
				t.Errorf("Got %s Ready at %v, before %s (%v), which it depends on", name, ready[name], kustomizations[i-1], ready[kustomizations[i-1]])
			}
		}
		head, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Kubectl(ctx, "-n", "flux-system", "get", "gitrepository/skylb", "-o", "jsonpath={.status.artifact.revision}")
		if err != nil {
			t.Fatal(err)
		}
		if want := "main@sha1:" + strings.TrimSpace(string(head)); got != want {
			t.Errorf("Got GitRepository skylb at revision %q, want %q", got, want)
		}
		t0 = time.Now()
		want := c.ExposeWeb(ctx, t)
		cluster.WaitAnswer(ctx, t, net.JoinHostPort(c.Nodes[0].IP.String(), fmt.Sprint(cluster.DNSNodePort)), webName, want)
		t.Logf("measure: LoadBalancer Service created -> %s answers %v through the NodePort in %v", webName, want, time.Since(t0).Round(time.Second))
	})
}

// upCluster starts a three-node cluster in <root>/.cluster/flux with the
// images (the Flux controllers' too), which the test's clean-up removes.
func upCluster(ctx context.Context, t *testing.T, root string) *cluster.Cluster {
	t.Helper()
	return cluster.UpWithImagesForTest(ctx, t, root, "flux", images.Options{Flux: true},
		[]string{"get", "pods", "-A", "-o", "wide"},
		[]string{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		[]string{"-n", "flux-system", "get", "gitrepositories,kustomizations", "-o", "wide"},
		[]string{"-n", "flux-system", "logs", "-l", "app in (source-controller,kustomize-controller)", "--tail=40", "--prefix"})
}

// writeInstall writes into dir a kustomization of the controllers' install
// from each controller's own config/ (the kustomizations its config/default
// assembles): its CRDs, RBAC and Deployment, in the namespace flux-system as
// Flux installs them, with the images test/images builds. It returns dir.
func writeInstall(ctx context.Context, root, dir string) (string, error) {
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"namespace: flux-system\nresources:\n- namespace.yaml\n")
	for _, name := range controllers {
		config, err := moduleConfig(ctx, root, name)
		if err != nil {
			return "", err
		}
		// Relative: kustomize takes no absolute directory as a resource.
		rel, err := filepath.Rel(dir, config)
		if err != nil {
			return "", err
		}
		for _, sub := range []string{"crd", "rbac", "manager"} {
			fmt.Fprintf(&b, "- %s\n", filepath.Join(rel, sub))
		}
	}
	b.WriteString("images:\n")
	for _, ref := range []string{images.SourceControllerRef, images.KustomizeControllerRef} {
		repo, tag, _ := strings.Cut(ref, ":")
		fmt.Fprintf(&b, "- name: fluxcd/%s\n  newName: %s\n  newTag: %s\n", filepath.Base(repo), repo, tag)
	}
	files := map[string]string{
		"kustomization.yaml": b.String(),
		"namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// moduleConfig returns the config/ directory of the module
// github.com/fluxcd/name at the version test/tools/flux/name/go.mod
// requires.
func moduleConfig(ctx context.Context, root, name string) (string, error) {
	dir, err := stack.ModuleDir(ctx, filepath.Join(root, "test", "tools", "flux", name), "github.com/fluxcd/"+name)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config"), nil
}

// kustomizations are the Kustomizations of manifests/flux, in their
// dependsOn order.
var kustomizations = []string{"skylb-etcd", "skylb-coredns", "skylb"}

// deployFromGit applies manifests/flux with the GitRepository's URL pointed
// at repo, after the Secrets the README's Flux section asks for, and waits
// until every Kustomization is Ready. It returns when each became Ready.
func deployFromGit(ctx context.Context, t *testing.T, c *cluster.Cluster, root, repo string) map[string]time.Time {
	t.Helper()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "gen-certs.sh"), "--secrets", secrets, filepath.Join(dir, "certs"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-certs.sh: %v\n%s", err, out)
	}
	for _, ns := range []string{"skylb-dns", "skylb-coredns", "skylb"} {
		if out, err := c.Kubectl(ctx, "create", "namespace", ns); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if out, err := c.Kubectl(ctx, "apply", "-f", filepath.Join(secrets, ns+".yaml")); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	rel, err := filepath.Rel(dir, filepath.Join(root, "manifests", "flux"))
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + rel + "\n" +
		"patches:\n- target:\n    kind: GitRepository\n    name: skylb\n  patch: |\n" +
		"    - op: replace\n      path: /spec/url\n      value: " + repo + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Kubectl(ctx, "apply", "-k", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ready := map[string]time.Time{}
	for _, name := range kustomizations {
		if out, err := c.Kubectl(ctx, "-n", "flux-system", "wait", "kustomization/"+name,
			"--for=condition=Ready", "--timeout=5m"); err != nil {
			out2, _ := c.Kubectl(ctx, "-n", "flux-system", "get", "gitrepositories,kustomizations", "-o", "wide")
			t.Fatalf("%v\n%s\n%s", err, out, out2)
		}
		out, err := c.Kubectl(ctx, "-n", "flux-system", "get", "kustomization/"+name,
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].lastTransitionTime}`)
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("kustomization %s: Ready at %q: %v", name, out, err)
		}
		ready[name] = at
	}
	return ready
}

// webName is the name skylb publishes for the Service web of the namespace
// default, in the zone of manifests/flux.
const webName = "web.default.example.org"
