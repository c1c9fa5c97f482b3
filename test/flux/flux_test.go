// Package flux runs Flux's own source-controller and kustomize-controller in
// the real three-node cluster of test/cluster, installed as Flux installs
// them: namespace flux-system, the CRDs, RBAC and Deployments of the
// controllers' modules (config/ of github.com/fluxcd/NAME at the version
// test/tools/flux/NAME/go.mod requires), with the images test/images builds
// from the binaries of scripts/build-bins.sh. Then it deploys skylb the way
// manifests/README.md's "With Flux" does: the Secrets of scripts/gen-certs.sh
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
	ctx := cluster.RootTest(t, 20*time.Minute)
	root := stack.Root(t)

	install, err := writeInstall(ctx, root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	c := upCluster(ctx, t, root)
	t.Logf("measure: cluster of %d nodes up in %v", len(c.Nodes), time.Since(t0).Round(time.Second))

	t0 = time.Now()
	c.MustKubectl(ctx, t, "apply", "--server-side", "-k", install)
	for _, name := range controllers {
		c.MustKubectl(ctx, t, "-n", "flux-system", "rollout", "status", "deployment/"+name, "--timeout=3m")
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

	u, err := url.Parse(c.APIServer)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveGit(t, u.Hostname())
	f := &fleet{c: c, skylb: srv.repo(ctx, t, "skylb", root), config: srv.repo(ctx, t, "fleet", "")}
	f.skylb.push(ctx, t)
	var want []string // the addresses of web's nodes
	if !t.Run("deploy skylb from Git", func(t *testing.T) { want = f.deploy(ctx, t, root) }) {
		return
	}
	if !t.Run("a commit changes the zone", func(t *testing.T) { f.changeZone(ctx, t, want) }) {
		return
	}
	if !t.Run("a broken commit leaves skylb running", func(t *testing.T) { f.breakManifest(ctx, t, want) }) {
		return
	}
	t.Run("pruning keeps etcd's data", func(t *testing.T) { f.prune(ctx, t, want) })
}

// fleet is the setup of `flux bootstrap`: the repository Flux syncs the
// cluster from (the GitRepository and Kustomization flux-system, path
// ./clusters/lab), into which the user copied manifests/flux with spec.url
// pointed at their fork of skylb.
type fleet struct {
	c      *cluster.Cluster
	skylb  *gitRepo // the fork of skylb, which the GitRepository skylb follows
	config *gitRepo // the repository flux-system follows
	zone   string   // the zone of clusters/lab/settings.yaml
}

// fleetPath is where, in the fleet repository, manifests/flux is copied.
const fleetPath = "clusters/lab"

// deploy commits manifests/flux into the fleet repository, applies the
// objects `flux bootstrap` would, after the Secrets the Flux step of
// manifests/README.md asks for, and waits until the Kustomizations are Ready
// in order and the name of a LoadBalancer Service answers through the
// NodePort. It returns the answer: the addresses of the nodes that run the
// Service's pods.
func (f *fleet) deploy(ctx context.Context, t *testing.T, root string) []string {
	dst := filepath.Join(f.config.work, fleetPath)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(root, "manifests", "flux"))); err != nil {
		t.Fatal(err)
	}
	f.config.edit(t, filepath.Join(fleetPath, "gitrepository.yaml"), "url: https://github.com/skylb/skylb", "url: "+f.skylb.url)
	f.config.commit(ctx, t, "Deploy skylb")
	f.zone = "example.org"

	applySecrets(ctx, t, f.c, root)
	sync := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n" +
		"metadata:\n  name: flux-system\n  namespace: flux-system\n" +
		"spec:\n  interval: 10m\n  url: " + f.config.url + "\n  ref:\n    branch: main\n---\n" +
		"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n" +
		"metadata:\n  name: flux-system\n  namespace: flux-system\n" +
		"spec:\n  interval: 10m\n  path: ./" + fleetPath + "\n  prune: true\n" +
		"  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
	file := filepath.Join(t.TempDir(), "gotk-sync.yaml")
	if err := os.WriteFile(file, []byte(sync), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	f.c.MustKubectl(ctx, t, "apply", "-f", file)
	ready := map[string]time.Time{}
	for _, name := range append([]string{"flux-system"}, kustomizations...) {
		ready[name] = waitReady(ctx, t, f.c, name)
	}
	for i, name := range kustomizations {
		t.Logf("measure: sync applied -> Kustomization %s Ready in %v", name, ready[name].Sub(t0).Round(time.Second))
		if i > 0 && ready[name].Before(ready[kustomizations[i-1]]) {
			t.Errorf("Got %s Ready at %v, before %s (%v), which it depends on", name, ready[name], kustomizations[i-1], ready[kustomizations[i-1]])
		}
	}
	if got, want := get(ctx, t, f.c, "flux-system", "gitrepository/skylb", "{.status.artifact.revision}"), "main@sha1:"+git(ctx, t, root, "rev-parse", "HEAD"); got != want {
		t.Errorf("Got GitRepository skylb at revision %q, want %q", got, want)
	}
	t0 = time.Now()
	want := f.c.ExposeWeb(ctx, t)
	cluster.WaitAnswer(ctx, t, f.nodePort(), f.web(), want)
	t.Logf("measure: LoadBalancer Service created -> %s answers %v through the NodePort in %v", f.web(), want, time.Since(t0).Round(time.Second))
	return want
}

// changeZone commits a new zone in settings.yaml, as manifests/README.md says,
// and measures the time from the push to the new name's answer: the
// ConfigMap reaches CoreDNS and skylb, whose pods roll.
func (f *fleet) changeZone(ctx context.Context, t *testing.T, want []string) {
	const zone = "lab.example.net"
	f.config.edit(t, filepath.Join(fleetPath, "settings.yaml"), "SKYLB_ZONE: "+f.zone, "SKYLB_ZONE: "+zone)
	f.config.commit(ctx, t, "Serve the zone "+zone)
	t0 := time.Now()
	requestReconcile(ctx, t, f.c, "gitrepository/flux-system")
	f.zone = zone
	cluster.WaitAnswer(ctx, t, f.nodePort(), f.web(), want)
	t.Logf("measure: commit of a new zone pushed -> %s answers %v in %v", f.web(), want, time.Since(t0).Round(time.Second))
	for _, d := range []string{"skylb-coredns/deployment/coredns", "skylb/deployment/skylb"} {
		ns, name, _ := strings.Cut(d, "/")
		f.c.MustKubectl(ctx, t, "-n", ns, "rollout", "status", name, "--timeout=3m")
		got := get(ctx, t, f.c, ns, name, `{.spec.template.metadata.annotations.skylb\.io/settings}`)
		if !strings.Contains(got, "zone="+zone) {
			t.Errorf("Got %s's pod template annotated %q, want the zone %s", d, got, zone)
		}
	}
}

// breakManifest commits a manifest the API server refuses into the fork of
// skylb: the Kustomization skylb becomes not Ready with Flux's message while
// skylb keeps running and answering; a revert makes it Ready again.
func (f *fleet) breakManifest(ctx context.Context, t *testing.T, want []string) {
	pods := func() string {
		return get(ctx, t, f.c, "skylb", "pods -l app.kubernetes.io/name=skylb", "{.items[*].metadata.uid}")
	}
	// The pods of the last rollout, once those it replaced are gone.
	var before string
	for start := time.Now(); len(strings.Fields(before)) != 2 && time.Since(start) < time.Minute; time.Sleep(time.Second) {
		before = pods()
	}
	generation := get(ctx, t, f.c, "skylb", "deployment/skylb", "{.metadata.generation}")
	f.skylb.edit(t, "manifests/deployment.yaml", "replicas: 2", "replicas: two")
	broken := f.skylb.commit(ctx, t, "Break the Deployment")
	t0 := time.Now()
	requestReconcile(ctx, t, f.c, "gitrepository/skylb")
	msg := waitCondition(ctx, t, f.c, "skylb", "main@sha1:"+broken, "False")
	t.Logf("measure: broken commit pushed -> Kustomization skylb not Ready in %v: %s", time.Since(t0).Round(time.Second), msg)
	if !strings.Contains(msg, "replicas") {
		t.Errorf("Got Flux's message %q, want one that names the field replicas", msg)
	}
	if got := pods(); got != before {
		t.Errorf("Got skylb's pods %s after the broken commit, want them untouched: %s", got, before)
	}
	if got := get(ctx, t, f.c, "skylb", "deployment/skylb", "{.metadata.generation}"); got != generation {
		t.Errorf("Got skylb's Deployment at generation %s after the broken commit, want %s", got, generation)
	}
	cluster.WaitAnswer(ctx, t, f.nodePort(), f.web(), want)

	git(ctx, t, f.skylb.work, "revert", "--no-edit", "HEAD")
	fixed := f.skylb.push(ctx, t)
	requestReconcile(ctx, t, f.c, "gitrepository/skylb")
	waitCondition(ctx, t, f.c, "skylb", "main@sha1:"+fixed, "True")
}

// prune removes etcd.yaml and skylb.yaml from the fleet repository: Flux
// deletes those Kustomizations and, as they prune, everything they applied,
// except the namespace skylb-dns, which keeps the members' volumes. With
// etcd.yaml back, the members start on their volumes and CoreDNS answers
// the records skylb wrote, while skylb is still gone.
func (f *fleet) prune(ctx context.Context, t *testing.T, want []string) {
	pvcs := func() string {
		return get(ctx, t, f.c, "skylb-dns", "pvc", "{.items[*].metadata.uid}")
	}
	volumes := pvcs()
	if n := len(strings.Fields(volumes)); n != 3 {
		t.Fatalf("Got %d PersistentVolumeClaims in skylb-dns, want 3", n)
	}
	for _, file := range []string{"etcd.yaml", "skylb.yaml"} {
		git(ctx, t, f.config.work, "rm", "-q", filepath.Join(fleetPath, file))
	}
	f.config.edit(t, filepath.Join(fleetPath, "kustomization.yaml"), "- etcd.yaml\n", "")
	f.config.edit(t, filepath.Join(fleetPath, "kustomization.yaml"), "- skylb.yaml\n", "")
	f.config.commit(ctx, t, "Remove etcd and skylb")
	t0 := time.Now()
	requestReconcile(ctx, t, f.c, "gitrepository/flux-system")
	for _, args := range [][]string{
		{"-n", "flux-system", "wait", "--for=delete", "kustomization/skylb-etcd", "kustomization/skylb", "--timeout=3m"},
		{"wait", "--for=delete", "namespace/skylb", "--timeout=3m"},
		{"-n", "skylb-dns", "wait", "--for=delete", "statefulset/etcd", "job/etcd-rbac-bootstrap", "--timeout=3m"},
	} {
		if out, err := f.c.Kubectl(ctx, args...); err != nil && !strings.Contains(out, "NotFound") {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	t.Logf("measure: commit removing etcd and skylb pushed -> both pruned in %v", time.Since(t0).Round(time.Second))
	if got := get(ctx, t, f.c, "", "namespace/skylb-dns", "{.status.phase}"); got != "Active" {
		t.Errorf("Got namespace skylb-dns %q after pruning, want it kept (Active)", got)
	}
	if got := pvcs(); got != volumes {
		t.Errorf("Got the PersistentVolumeClaims %s after pruning, want them kept: %s", got, volumes)
	}

	git(ctx, t, f.config.work, "revert", "--no-edit", "HEAD")
	git(ctx, t, f.config.work, "rm", "-q", filepath.Join(fleetPath, "skylb.yaml"))
	f.config.edit(t, filepath.Join(fleetPath, "kustomization.yaml"), "- skylb.yaml\n", "")
	f.config.commit(ctx, t, "Bring etcd back")
	t0 = time.Now()
	requestReconcile(ctx, t, f.c, "gitrepository/flux-system")
	waitReady(ctx, t, f.c, "skylb-etcd")
	cluster.WaitAnswer(ctx, t, f.nodePort(), f.web(), want)
	t.Logf("measure: commit bringing etcd back pushed -> %s answers %v from the kept volumes, skylb absent, in %v", f.web(), want, time.Since(t0).Round(time.Second))
	if got := pvcs(); got != volumes {
		t.Errorf("Got the PersistentVolumeClaims %s, want the members back on theirs: %s", got, volumes)
	}
}

// web is the name skylb publishes for the Service web of the namespace
// default.
func (f *fleet) web() string { return "web.default." + f.zone }

// nodePort is CoreDNS's NodePort (coredns/deploy/service.yaml) on the first
// node.
func (f *fleet) nodePort() string {
	return net.JoinHostPort(f.c.Nodes[0].IP.String(), fmt.Sprint(cluster.DNSNodePort))
}

// applySecrets applies the Secrets of scripts/gen-certs.sh --secrets in
// the namespaces they belong to, which it creates.
func applySecrets(ctx context.Context, t *testing.T, c *cluster.Cluster, root string) {
	t.Helper()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "gen-certs.sh"), "--secrets", secrets, filepath.Join(dir, "certs"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-certs.sh: %v\n%s", err, out)
	}
	for _, ns := range []string{"skylb-dns", "skylb-coredns", "skylb"} {
		c.MustKubectl(ctx, t, "create", "namespace", ns)
		c.MustKubectl(ctx, t, "apply", "-f", filepath.Join(secrets, ns+".yaml"))
	}
}

// requestReconcile asks Flux to reconcile the object now, as `flux
// reconcile` does (and a notification-controller Receiver on a push).
func requestReconcile(ctx context.Context, t *testing.T, c *cluster.Cluster, object string) {
	t.Helper()
	at := time.Now().Format(time.RFC3339Nano)
	c.MustKubectl(ctx, t, "-n", "flux-system", "annotate", "--overwrite", object, "reconcile.fluxcd.io/requestedAt="+at)
}

// get returns the trimmed output of kubectl get object (its arguments,
// separated by spaces) -o jsonpath=template in the namespace ns, "" for
// objects of the cluster.
func get(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, object, template string) string {
	t.Helper()
	args := append([]string{"get"}, strings.Fields(object)...)
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	return strings.TrimSpace(c.MustKubectl(ctx, t, append(args, "-o", "jsonpath="+template)...))
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

// waitReady waits until the Kustomization name is Ready and returns when it
// became so.
func waitReady(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) time.Time {
	t.Helper()
	// kubectl wait fails on an object that does not exist yet.
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(time.Second) {
		if _, err := c.Kubectl(ctx, "-n", "flux-system", "get", "kustomization/"+name); err == nil {
			break
		}
	}
	if out, err := c.Kubectl(ctx, "-n", "flux-system", "wait", "kustomization/"+name,
		"--for=condition=Ready", "--timeout=5m"); err != nil {
		out2, _ := c.Kubectl(ctx, "-n", "flux-system", "get", "gitrepositories,kustomizations", "-o", "wide")
		t.Fatalf("%v\n%s\n%s", err, out, out2)
	}
	out := get(ctx, t, c, "flux-system", "kustomization/"+name, `{.status.conditions[?(@.type=="Ready")].lastTransitionTime}`)
	at, err := time.Parse(time.RFC3339, out)
	if err != nil {
		t.Fatalf("kustomization %s: Ready at %q: %v", name, out, err)
	}
	return at
}

// waitCondition waits until the Kustomization name has attempted revision
// and its Ready condition has status; it returns the condition's message.
func waitCondition(ctx context.Context, t *testing.T, c *cluster.Cluster, name, revision, status string) string {
	t.Helper()
	const template = `{.status.lastAttemptedRevision} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`
	var last string
	for start := time.Now(); time.Since(start) < 3*time.Minute && ctx.Err() == nil; time.Sleep(500 * time.Millisecond) {
		last = get(ctx, t, c, "flux-system", "kustomization/"+name, template)
		if rev, rest, _ := strings.Cut(last, " "); rev == revision {
			if got, msg, _ := strings.Cut(rest, " "); got == status {
				return msg
			}
		}
	}
	t.Fatalf("Kustomization %s: %q, want revision %s with Ready %s", name, last, revision, status)
	return ""
}
