// Package manifests proves the Kubernetes manifests skylb is deployed with
// (manifests/, etcd/, coredns/ and manifests/flux/) against the real local
// stack of package stack:
//
//   - every kustomization and component renders with "kubectl kustomize";
//   - the real kube-apiserver accepts every rendered object in a server-side
//     dry run with strict field validation, without a warning (the namespaces
//     enforce the "restricted" Pod Security Standard); Flux and cert-manager
//     objects are checked against the upstream CRDs, taken from the Go modules
//     that ship them;
//   - skylb's RBAC, applied for real, allows what skylb does and denies the
//     rest (kubectl auth can-i), and skylb itself runs with the rendered
//     arguments and its ServiceAccount's token: it leads, writes a Service's
//     status, sends an Event and publishes the name;
//   - CoreDNS runs the Corefile of the ConfigMap with the Deployment's
//     environment, and answers from etcd over TLS as the user coredns;
//   - the RBAC bootstrap Job's script and environment work against etcd, and
//     etcd accepts the StatefulSet's flags;
//   - the certificates of scripts/gen-certs.sh --secrets, the Secrets the
//     workloads mount and the cert-manager Certificates agree.
package manifests

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skylb/skylb/test/stack"
)

// The namespaces of the manifests.
const (
	nsSkylb   = "skylb"
	nsEtcd    = "skylb-dns"
	nsCoreDNS = "skylb-coredns"
)

// crdSource names CRD files in a Go module that ships them.
type crdSource struct {
	module, version string
	files           []string
}

// crdSources are the upstream CRDs of the Flux and cert-manager objects.
// (source-controller and kustomize-controller 1.10 need a newer Go than this
// repository's to be downloaded; 1.9 has the same v1 APIs.)
var crdSources = []crdSource{
	{"github.com/fluxcd/source-controller", "v1.9.6", []string{
		"config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml"}},
	{"github.com/fluxcd/kustomize-controller", "v1.9.6", []string{
		"config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"}},
	{"github.com/cert-manager/cert-manager", "v1.21.2", []string{
		"deploy/crds/cert-manager.io_certificates.yaml",
		"deploy/crds/cert-manager.io_issuers.yaml",
		"deploy/crds/cert-manager.io_clusterissuers.yaml"}},
}

// rendering is the output of one kustomization.
type rendering struct {
	name string
	yaml []byte
	objs []*unstructured.Unstructured
	crd  bool // holds objects of CRDs (Flux, cert-manager)
}

// renderSpec says what to render: a kustomization directory of the
// repository, plus components through an overlay in a temporary directory.
type renderSpec struct {
	name       string
	dir        string
	components []string
	crd        bool
	// namespace is an overlay's "namespace:", which moves every object.
	namespace string
}

// nsOverlay is the namespace of the overlay that moves skylb out of its own.
const nsOverlay = "dns-lb"

var renderSpecs = []renderSpec{
	{name: "skylb", dir: "manifests"},
	{name: "skylb in " + nsOverlay, dir: "manifests", namespace: nsOverlay},
	{name: "skylb+cert-manager", dir: "manifests", components: []string{"manifests/cert-manager"}, crd: true},
	{name: "etcd", dir: "etcd"},
	{name: "etcd+cert-manager", dir: "etcd", components: []string{"etcd/deploy/cert-manager"}, crd: true},
	{name: "coredns", dir: "coredns"},
	{name: "coredns+cert-manager", dir: "coredns", components: []string{"coredns/deploy/cert-manager"}, crd: true},
	{name: "coredns+hostnetwork", dir: "coredns", components: []string{"coredns/deploy/hostnetwork"}},
	{name: "flux", dir: "manifests/flux", crd: true},
}

func TestManifests(t *testing.T) {
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(bin, "kube-apiserver")); err != nil {
		t.Skip("skipped: bin/kube-apiserver is missing; run scripts/build-bins.sh")
	}
	if missing := stack.MissingBinaries(bin); len(missing) > 0 {
		t.Skipf("skipped: %s missing in bin/; run scripts/build-bins.sh", strings.Join(missing, ", "))
	}
	for _, tool := range []string{"kubectl", "openssl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not on PATH", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()

	// The stack and the CRDs come in the background, while the manifests render.
	waitStack := startStack(ctx, t, root)
	waitCRDs := fetchCRDs(ctx, t)

	r := map[string]*rendering{}
	for _, spec := range renderSpecs {
		r[spec.name] = render(t, root, spec)
	}
	certs := genCerts(t, root)

	t.Run("static", func(t *testing.T) { staticChecks(t, root, r, certs) })
	t.Run("flux patches", func(t *testing.T) { fluxPatches(t, root, r["flux"]) })

	s, err := waitStack()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stack ready after %.1fs", time.Since(t0).Seconds())
	k := kubectl{kubeconfig: s.Kubeconfig}

	crdFiles, crdErr := waitCRDs()
	haveCRDs := false
	t.Run("CRDs", func(t *testing.T) {
		if crdErr != nil {
			t.Logf("upstream CRDs unavailable (%v): Flux and cert-manager objects are checked client-side only", crdErr)
			return
		}
		installCRDs(ctx, t, k, crdFiles)
		haveCRDs = !t.Failed()
	})

	t.Run("server dry-run", func(t *testing.T) { dryRun(ctx, t, k, r, certs, haveCRDs) })
	// An overlay in another namespace first: the base's RBAC, applied next,
	// takes the cluster-wide binding back.
	t.Run("RBAC can-i in "+nsOverlay, func(t *testing.T) { rbacChecks(ctx, t, k, r["skylb in "+nsOverlay], nsOverlay) })
	rbacOK := t.Run("RBAC can-i", func(t *testing.T) { rbacChecks(ctx, t, k, r["skylb"], nsSkylb) })
	t.Run("etcd flags", func(t *testing.T) { etcdFlags(ctx, t, bin, r["etcd"]) })
	t.Run("rbac-bootstrap Job", func(t *testing.T) { rbacBootstrap(ctx, t, s, bin, r["etcd"]) })
	t.Run("CoreDNS Corefile", func(t *testing.T) { coreDNS(ctx, t, s, bin, r["coredns"]) })
	t.Run("skylb as its ServiceAccount", func(t *testing.T) {
		if !rbacOK {
			t.Skip("the RBAC checks failed")
		}
		skylbRuns(ctx, t, s, r["skylb"])
	})
	t.Logf("done in %.1fs", time.Since(t0).Seconds())
}

// --- stack, CRDs, kubectl ----------------------------------------------------------

type logWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (l *logWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

// startStack starts the stack in the background; the returned function waits
// for it. The stack is stopped when the test ends.
func startStack(ctx context.Context, t *testing.T, root string) func() (*stack.Stack, error) {
	dir := t.TempDir()
	lw := &logWriter{t: t}
	var (
		s    *stack.Stack
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		s, err = stack.Start(ctx, stack.Options{Root: root, Dir: dir, Log: lw})
		if err == nil {
			// The RBAC checks ask about the Gateway API's resources by name.
			err = s.InstallGatewayAPI(ctx)
		}
	}()
	t.Cleanup(func() {
		<-done
		if s != nil {
			s.Stop()
		}
		lw.mu.Lock()
		lw.done = true
		lw.mu.Unlock()
	})
	return func() (*stack.Stack, error) { <-done; return s, err }
}

// fetchCRDs downloads the modules of crdSources in the background (from the
// module cache when they are there) and returns a function that waits for the
// CRD file paths.
func fetchCRDs(ctx context.Context, t *testing.T) func() ([]string, error) {
	var (
		files []string
		err   error
		done  = make(chan struct{})
	)
	tmp := t.TempDir()
	go func() {
		defer close(done)
		args := []string{"mod", "download", "-json"}
		for _, c := range crdSources {
			args = append(args, c.module+"@"+c.version)
		}
		cctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, stack.GoTool(), args...)
		cmd.Dir = tmp // outside any module: go.mod and go.sum stay untouched
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, runErr := cmd.Output()
		dirs := map[string]string{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var m struct{ Path, Version, Dir, Error string }
			if e := dec.Decode(&m); e != nil {
				break
			}
			if m.Error != "" {
				err = fmt.Errorf("%s@%s: %s", m.Path, m.Version, m.Error)
				return
			}
			dirs[m.Path] = m.Dir
		}
		for _, c := range crdSources {
			if dirs[c.module] == "" {
				err = fmt.Errorf("go mod download: %v %s", runErr, strings.TrimSpace(stderr.String()))
				return
			}
			for _, f := range c.files {
				files = append(files, filepath.Join(dirs[c.module], f))
			}
		}
	}()
	return func() ([]string, error) { <-done; return files, err }
}

type kubectl struct{ kubeconfig string }

// run runs kubectl with stdin and returns stdout and stderr.
func (k kubectl) run(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	args = append([]string{"--kubeconfig=" + k.kubeconfig, "--request-timeout=30s"}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args[2:], " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

func installCRDs(ctx context.Context, t *testing.T, k kubectl, files []string) {
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Server-side: the CRDs are too large for client-side apply's annotation.
		if _, _, err := k.run(ctx, b, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		for _, o := range decode(t, b) {
			names = append(names, "crd/"+o.GetName())
		}
	}
	args := append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, names...)
	if _, _, err := k.run(ctx, nil, args...); err != nil {
		t.Fatal(err)
	}
	t.Logf("installed %d upstream CRDs", len(names))
}

// --- rendering ---------------------------------------------------------------------

func render(t *testing.T, root string, spec renderSpec) *rendering {
	t.Helper()
	dir := filepath.Join(root, spec.dir)
	if len(spec.components) > 0 || spec.namespace != "" {
		// kustomize takes relative paths only.
		overlay := t.TempDir()
		rel := func(p string) string {
			r, err := filepath.Rel(overlay, filepath.Join(root, p))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var comps []string
		for _, c := range spec.components {
			comps = append(comps, rel(c))
		}
		k := map[string]any{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"resources":  []string{rel(spec.dir)},
			"components": comps,
		}
		if spec.namespace != "" {
			k["namespace"] = spec.namespace
		}
		b, err := json.Marshal(k) // JSON is YAML
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		dir = overlay
	}
	out, err := exec.Command("kubectl", "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize (%s): %v\n%s", spec.name, err, ee.Stderr)
		}
		t.Fatalf("kubectl kustomize (%s): %v", spec.name, err)
	}
	objs := decode(t, out)
	if len(objs) == 0 {
		t.Fatalf("%s renders nothing", spec.name)
	}
	return &rendering{name: spec.name, yaml: out, objs: objs, crd: spec.crd}
}

func decode(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return objs
			}
			t.Fatalf("decode: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// encode writes objects as a YAML stream of JSON documents.
func encode(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
		buf.WriteString("\n")
	}
	return buf.Bytes()
}

func (r *rendering) filter(keep func(*unstructured.Unstructured) bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

func (r *rendering) ofKind(kind string) []*unstructured.Unstructured {
	return r.filter(func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
}

// get returns the object of that kind, namespace and name, failing the test
// when there is none.
func (r *rendering) get(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("%s: no %s %s/%s", r.name, kind, ns, name)
	return nil
}

// as converts an object to its typed form.
func as[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

// env resolves a container's environment as the kubelet would, for plain values
// and ConfigMaps of the rendering; values from fields and resources are absent.
func (r *rendering) env(t *testing.T, ns string, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("container %s: envFrom other than a ConfigMap", c.Name)
		}
		cm := as[corev1.ConfigMap](t, r.get(t, "ConfigMap", ns, from.ConfigMapRef.Name))
		maps.Copy(env, cm.Data)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return env
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) in args with values of env, as the kubelet does.
func expand(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	return out
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// setFlag replaces --name=... in args, or appends it.
func setFlag(args []string, name, value string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if strings.HasPrefix(a, "--"+name+"=") {
			out[i] = "--" + name + "=" + value
			return out
		}
	}
	return append(out, "--"+name+"="+value)
}

// secretMount returns the mount path of the Secret volume secretName in c.
func secretMount(t *testing.T, pod corev1.PodSpec, c corev1.Container, secretName string) string {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secretName {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	t.Fatalf("container %s does not mount the Secret %s", c.Name, secretName)
	return ""
}

// configMapMount returns the ConfigMap of the volume mounted at path in c.
func configMapMount(t *testing.T, pod corev1.PodSpec, c corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
		}
	}
	t.Fatalf("container %s has no ConfigMap mounted at %s", c.Name, path)
	return ""
}

// --- certificates ------------------------------------------------------------------

// certSet is the output of scripts/gen-certs.sh --secrets.
type certSet struct {
	dir     string                       // certificates
	files   []string                     // Secret manifests
	secrets map[string]*corev1.Secret    // by namespace/name
	x509    map[string]*x509.Certificate // tls.crt by namespace/name
	pool    *x509.CertPool               // the CA
	objs    []*unstructured.Unstructured // all Secrets
	byFile  map[string][]*unstructured.Unstructured
}

func genCerts(t *testing.T, root string) *certSet {
	t.Helper()
	tmp := t.TempDir()
	cs := &certSet{dir: filepath.Join(tmp, "certs"), secrets: map[string]*corev1.Secret{},
		x509: map[string]*x509.Certificate{}, byFile: map[string][]*unstructured.Unstructured{}}
	out := filepath.Join(tmp, "secrets")
	script := filepath.Join(root, "scripts", "gen-certs.sh")
	for i := range 2 {
		b, err := exec.Command("bash", script, "--secrets", out, cs.dir).CombinedOutput()
		if err != nil {
			t.Fatalf("gen-certs.sh --secrets: %v\n%s", err, b)
		}
		if i == 1 && (bytes.Contains(b, []byte("created")) || bytes.Contains(b, []byte("wrote"))) {
			t.Errorf("gen-certs.sh --secrets is not idempotent, second run:\n%s", b)
		}
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		path := filepath.Join(out, e.Name())
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600 (private keys)", e.Name(), fi.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cs.files = append(cs.files, path)
		for _, o := range decode(t, b) {
			sec := as[corev1.Secret](t, o)
			key := sec.Namespace + "/" + sec.Name
			if sec.Type != corev1.SecretTypeTLS {
				t.Errorf("Secret %s: type %q, want %q", key, sec.Type, corev1.SecretTypeTLS)
			}
			for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
				if len(sec.Data[k]) == 0 {
					t.Errorf("Secret %s: no %s", key, k)
				}
			}
			cs.secrets[key] = sec
			cs.objs = append(cs.objs, o)
			cs.byFile[e.Name()] = append(cs.byFile[e.Name()], o)
			blk, _ := pem.Decode(sec.Data["tls.crt"])
			if blk == nil {
				t.Fatalf("Secret %s: tls.crt is not PEM", key)
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatalf("Secret %s: %v", key, err)
			}
			cs.x509[key] = c
			if cs.pool == nil {
				cs.pool = x509.NewCertPool()
				if !cs.pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
					t.Fatalf("Secret %s: bad ca.crt", key)
				}
			}
		}
	}
	return cs
}

// verify checks that the certificate of Secret key is valid for usage and, if
// host is set, for host.
func (cs *certSet) verify(t *testing.T, key, host string, usage x509.ExtKeyUsage) {
	t.Helper()
	c, ok := cs.x509[key]
	if !ok {
		t.Errorf("gen-certs.sh --secrets wrote no Secret %s", key)
		return
	}
	_, err := c.Verify(x509.VerifyOptions{DNSName: host, Roots: cs.pool, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		t.Errorf("certificate of Secret %s for %q: %v", key, host, err)
	}
}

// --- static checks -----------------------------------------------------------------

var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ClusterIssuer": true, "CustomResourceDefinition": true,
}

func staticChecks(t *testing.T, root string, r map[string]*rendering, certs *certSet) {
	// Nothing lands in whatever namespace kubectl happens to use.
	for _, rr := range r {
		for _, o := range rr.objs {
			if !clusterScoped[o.GetKind()] && o.GetNamespace() == "" {
				t.Errorf("%s: %s %s has no namespace", rr.name, o.GetKind(), o.GetName())
			}
		}
	}

	// The ConfigMaps hold the repository's files themselves.
	same := func(rr *rendering, ns, cmName, key, file string) {
		cm := as[corev1.ConfigMap](t, rr.get(t, "ConfigMap", ns, cmName))
		want, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[key] != string(want) {
			t.Errorf("%s: ConfigMap %s key %s differs from %s", rr.name, cmName, key, file)
		}
	}
	job := as[batchv1.Job](t, r["etcd"].get(t, "Job", nsEtcd, "etcd-rbac-bootstrap"))
	jc := job.Spec.Template.Spec.Containers[0]
	same(r["etcd"], nsEtcd, configMapMount(t, job.Spec.Template.Spec, jc, "/scripts"), "rbac-bootstrap.sh", "etcd/rbac-bootstrap.sh")
	dep := as[appsv1.Deployment](t, r["coredns"].get(t, "Deployment", nsCoreDNS, "coredns"))
	dc := dep.Spec.Template.Spec.Containers[0]
	same(r["coredns"], nsCoreDNS, configMapMount(t, dep.Spec.Template.Spec, dc, "/etc/coredns/conf"), "Corefile", "coredns/Corefile")

	// The DaemonSet variant runs the Deployment's container, with host ports.
	ds := as[appsv1.DaemonSet](t, r["coredns+hostnetwork"].get(t, "DaemonSet", nsCoreDNS, "coredns"))
	hc := ds.Spec.Template.Spec.Containers[0]
	for _, p := range hc.Ports {
		if p.Name == "dns" || p.Name == "dns-tcp" {
			if p.HostPort != 53 || p.ContainerPort != 1053 {
				t.Errorf("DaemonSet port %s: host %d → container %d, want 53 → 1053", p.Name, p.HostPort, p.ContainerPort)
			}
		}
	}
	a, b := dc.DeepCopy(), hc.DeepCopy()
	a.Ports, b.Ports = nil, nil
	if !equalJSON(a, b) {
		t.Error("the DaemonSet's container differs from the Deployment's in more than its ports")
	}
	if !equalJSON(dep.Spec.Template.Spec.Volumes, ds.Spec.Template.Spec.Volumes) ||
		!equalJSON(dep.Spec.Template.Spec.SecurityContext, ds.Spec.Template.Spec.SecurityContext) {
		t.Error("the DaemonSet's volumes or security context differ from the Deployment's")
	}
	if ds.Spec.Template.Spec.NodeSelector["skylb.io/dns"] != "true" {
		t.Error("the DaemonSet does not select nodes labelled skylb.io/dns=true")
	}
	hn := r["coredns+hostnetwork"]
	if len(hn.ofKind("Deployment")) > 0 || len(hn.filter(func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Service" && o.GetName() == "coredns"
	})) > 0 {
		t.Error("the hostnetwork variant keeps the Deployment or the NodePort Service")
	}
	// skylb's --nameserver-selector finds the DaemonSet's pods.
	nsSvc := as[corev1.Service](t, hn.get(t, "Service", nsCoreDNS, "coredns-nameservers"))
	skylbArgs := as[appsv1.Deployment](t, r["skylb"].get(t, "Deployment", nsSkylb, "skylb")).Spec.Template.Spec.Containers[0].Args
	selector, _ := flagValue(skylbArgs, "nameserver-selector")
	if sel, err := labels.Parse(selector); err != nil || selector == "" || !sel.Matches(labels.Set(nsSvc.Labels)) {
		t.Errorf("skylb --nameserver-selector=%q does not select the Service coredns-nameservers (labels %v)", selector, nsSvc.Labels)
	}
	if !labels.SelectorFromSet(nsSvc.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) || nsSvc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Error("the Service coredns-nameservers is not a headless Service of the DaemonSet's pods")
	}
	// Nor of the Deployment's, which kubectl apply leaves beside the DaemonSet:
	// their nodes do not serve port 53.
	if labels.SelectorFromSet(nsSvc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) ||
		labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Error("the Service coredns-nameservers or the DaemonSet selects the Deployment's pods too")
	}
	if sel, _ := labels.Parse(selector); sel != nil && sel.Matches(labels.Set(r["coredns"].get(t, "Service", nsCoreDNS, "coredns").GetLabels())) {
		t.Error("skylb --nameserver-selector selects the NodePort Service, whose nodes do not serve port 53")
	}

	// The NodePort Service reaches the container's port.
	svc := as[corev1.Service](t, r["coredns"].get(t, "Service", nsCoreDNS, "coredns"))
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 2 {
		t.Errorf("CoreDNS Service: type %s with %d ports, want NodePort with UDP and TCP", svc.Spec.Type, len(svc.Spec.Ports))
	}
	for _, p := range svc.Spec.Ports {
		if p.Port != 53 || p.NodePort == 0 {
			t.Errorf("CoreDNS Service port %s: %d (node port %d), want 53 and a fixed node port", p.Name, p.Port, p.NodePort)
		}
	}

	// Services and PodDisruptionBudgets select pods, and target their ports.
	for _, rr := range r {
		checkSelectors(t, rr)
	}

	// skylb's RBAC is exactly what it uses.
	checkRBACRules(t, r["skylb"])

	// The images are set through kustomize.
	images := map[string]string{}
	for _, rr := range r {
		for _, o := range rr.filter(func(o *unstructured.Unstructured) bool {
			return slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet", "Job"}, o.GetKind())
		}) {
			pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			for _, field := range []string{"initContainers", "containers"} {
				cs, _, _ := unstructured.NestedSlice(pod, field)
				for _, c := range cs {
					img := c.(map[string]any)["image"].(string)
					images[img] = rr.name
				}
			}
		}
	}
	for _, want := range []string{"ghcr.io/skylb/skylb:v0.1.0", "registry.k8s.io/etcd:3.6.8-0", "coredns/coredns:1.15.0", "debian:12-slim"} {
		if _, ok := images[want]; !ok {
			t.Errorf("no workload runs image %s (images: %v)", want, slices.Sorted(maps.Keys(images)))
		}
	}
	// A version tag on every image: "latest" (or none) is pulled every time,
	// which fails in an air-gapped cluster.
	for img := range images {
		if _, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":"); !ok || tag == "latest" {
			t.Errorf("image %s has no version tag", img)
		}
	}

	// The Secrets the workloads mount are those gen-certs.sh writes and those
	// the cert-manager components issue.
	mounted := map[string]bool{}
	for _, name := range []string{"skylb", "etcd", "coredns", "coredns+hostnetwork"} {
		for _, o := range r[name].objs {
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				if s, ok := v.(map[string]any)["secret"].(map[string]any); ok {
					mounted[o.GetNamespace()+"/"+s["secretName"].(string)] = true
				}
			}
		}
	}
	issued := map[string]bool{}
	var certificates []*unstructured.Unstructured
	for _, name := range []string{"skylb+cert-manager", "etcd+cert-manager", "coredns+cert-manager"} {
		for _, o := range r[name].ofKind("Certificate") {
			if o.GetNamespace() == "cert-manager" { // the CA
				continue
			}
			sn, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
			issued[o.GetNamespace()+"/"+sn] = true
			certificates = append(certificates, o)
		}
	}
	written := map[string]bool{}
	for k := range certs.secrets {
		written[k] = true
	}
	if !maps.Equal(mounted, written) || !maps.Equal(mounted, issued) {
		t.Errorf("Secrets: mounted %v, written by gen-certs.sh %v, issued by cert-manager %v",
			slices.Sorted(maps.Keys(mounted)), slices.Sorted(maps.Keys(written)), slices.Sorted(maps.Keys(issued)))
	}
	want := map[string]string{ // Secret → CN
		nsEtcd + "/etcd-root-client": "root", nsSkylb + "/skylb-etcd-client": "skylb",
		nsCoreDNS + "/coredns-etcd-client": "coredns",
	}
	for _, o := range certificates {
		sn, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
		key := o.GetNamespace() + "/" + sn
		cn, _, _ := unstructured.NestedString(o.Object, "spec", "commonName")
		if want[key] != "" && cn != want[key] {
			t.Errorf("Certificate %s: CN %q, want %q (the etcd user)", key, cn, want[key])
		}
		if c := certs.x509[key]; c != nil && c.Subject.CommonName != cn {
			t.Errorf("Secret %s: CN %q from gen-certs.sh, %q from cert-manager", key, c.Subject.CommonName, cn)
		}
		if dns, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames"); len(dns) > 0 {
			if c := certs.x509[key]; c != nil && !equalSets(dns, c.DNSNames) {
				t.Errorf("Certificate %s: names %v, gen-certs.sh's %v", key, dns, c.DNSNames)
			}
		}
	}

	// Every address a client dials is in etcd's certificates.
	sts := as[appsv1.StatefulSet](t, r["etcd"].get(t, "StatefulSet", nsEtcd, "etcd"))
	hosts := map[string]bool{}
	addURL := func(u string) {
		u = strings.TrimPrefix(u, "https://")
		host, _, err := net.SplitHostPort(u)
		if err != nil {
			t.Errorf("URL %q: %v", u, err)
			return
		}
		hosts[host] = true
	}
	skylb := as[appsv1.Deployment](t, r["skylb"].get(t, "Deployment", nsSkylb, "skylb"))
	ep, _ := flagValue(skylb.Spec.Template.Spec.Containers[0].Args, "etcd-endpoints")
	addURL(ep)
	addURL(r["coredns"].env(t, nsCoreDNS, dc)["SKYLB_ETCD_ENDPOINT"])
	addURL(r["etcd"].env(t, nsEtcd, jc)["ETCDCTL_ENDPOINTS"])
	for i := range *sts.Spec.Replicas {
		args := expand(sts.Spec.Template.Spec.Containers[0].Args, map[string]string{"POD_NAME": fmt.Sprintf("%s-%d", sts.Name, i)})
		adv, _ := flagValue(args, "advertise-client-urls")
		addURL(adv)
		hosts[fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", sts.Name, i, sts.Spec.ServiceName, sts.Namespace)] = true
	}
	for h := range hosts {
		certs.verify(t, nsEtcd+"/etcd-server", h, x509.ExtKeyUsageServerAuth)
		if strings.HasPrefix(h, sts.Name+"-") {
			certs.verify(t, nsEtcd+"/etcd-peer", h, x509.ExtKeyUsageServerAuth)
			certs.verify(t, nsEtcd+"/etcd-peer", h, x509.ExtKeyUsageClientAuth)
		}
	}
	for key, cn := range want {
		certs.verify(t, key, "", x509.ExtKeyUsageClientAuth)
		if c := certs.x509[key]; c != nil && c.Subject.CommonName != cn {
			t.Errorf("Secret %s: CN %q, want %q", key, c.Subject.CommonName, cn)
		}
	}

	// Flux: the chain etcd → CoreDNS → skylb, each waiting for health, on
	// paths and components that exist.
	flux := r["flux"]
	paths := map[string]string{"skylb-etcd": "etcd", "skylb-coredns": "coredns", "skylb": "manifests"}
	deps := map[string]string{"skylb-coredns": "skylb-etcd", "skylb": "skylb-coredns"}
	comps := map[string][]string{"skylb-etcd": {"deploy/cert-manager"}, "skylb-coredns": {"deploy/cert-manager", "deploy/hostnetwork"}, "skylb": {"cert-manager"}}
	for name, path := range paths {
		k := flux.get(t, "Kustomization", "flux-system", name)
		p, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		if filepath.Clean(p) != path {
			t.Errorf("Flux Kustomization %s: path %q, want ./%s", name, p, path)
		}
		if w, _, _ := unstructured.NestedBool(k.Object, "spec", "wait"); !w {
			t.Errorf("Flux Kustomization %s does not wait for health", name)
		}
		d, _, _ := unstructured.NestedSlice(k.Object, "spec", "dependsOn")
		var got []string
		for _, x := range d {
			got = append(got, x.(map[string]any)["name"].(string))
		}
		if deps[name] != "" && !slices.Equal(got, []string{deps[name]}) || deps[name] == "" && len(got) > 0 {
			t.Errorf("Flux Kustomization %s depends on %v, want %q", name, got, deps[name])
		}
		src, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "name")
		flux.get(t, "GitRepository", "flux-system", src)
		for _, c := range comps[name] {
			if _, err := os.Stat(filepath.Join(root, path, c, "kustomization.yaml")); err != nil {
				t.Errorf("component %s of %s: %v", c, name, err)
			}
		}
	}
}

// checkSelectors checks that every Service and PodDisruptionBudget of rr
// selects the pods of a workload of rr, and that a Service's target ports are
// ports of those pods' containers.
func checkSelectors(t *testing.T, rr *rendering) {
	type podSet struct {
		ns     string
		labels map[string]string
		ports  []corev1.ContainerPort
	}
	var pods []podSet
	for _, o := range rr.objs {
		switch o.GetKind() {
		case "Deployment", "StatefulSet", "DaemonSet":
		default:
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
		pt := as[corev1.PodTemplateSpec](t, &unstructured.Unstructured{Object: tmpl})
		ps := podSet{ns: o.GetNamespace(), labels: pt.Labels}
		for _, c := range pt.Spec.Containers {
			ps.ports = append(ps.ports, c.Ports...)
		}
		pods = append(pods, ps)
	}
	selected := func(ns string, sel map[string]string) []podSet {
		var out []podSet
		for _, p := range pods {
			match := p.ns == ns && len(sel) > 0
			for k, v := range sel {
				match = match && p.labels[k] == v
			}
			if match {
				out = append(out, p)
			}
		}
		return out
	}
	for _, o := range rr.ofKind("Service") {
		svc := as[corev1.Service](t, o)
		ps := selected(svc.Namespace, svc.Spec.Selector)
		if len(ps) == 0 {
			t.Errorf("%s: Service %s selects no workload's pods", rr.name, svc.Name)
			continue
		}
		for _, sp := range svc.Spec.Ports {
			found := false
			for _, p := range ps {
				for _, cp := range p.ports {
					proto := cp.Protocol
					if proto == "" {
						proto = corev1.ProtocolTCP
					}
					sproto := sp.Protocol
					if sproto == "" {
						sproto = corev1.ProtocolTCP
					}
					byName := sp.TargetPort.StrVal != "" && sp.TargetPort.StrVal == cp.Name
					byNumber := sp.TargetPort.StrVal == "" && (sp.TargetPort.IntValue() == int(cp.ContainerPort) ||
						sp.TargetPort.IntValue() == 0 && sp.Port == cp.ContainerPort)
					found = found || (byName || byNumber) && proto == sproto
				}
			}
			if !found {
				t.Errorf("%s: Service %s port %s targets %s, which no selected container has", rr.name, svc.Name, sp.Name, sp.TargetPort.String())
			}
		}
	}
	for _, o := range rr.ofKind("PodDisruptionBudget") {
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		if len(selected(o.GetNamespace(), sel)) == 0 {
			t.Errorf("%s: PodDisruptionBudget %s selects no workload's pods", rr.name, o.GetName())
		}
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func equalSets(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// rule is one allowed (API group, resource, verb, resource name) of a role.
type rule struct{ scope, group, resource, verb, name string }

func (r rule) String() string {
	s := fmt.Sprintf("%s: %s %s.%s", r.scope, r.verb, r.resource, r.group)
	if r.name != "" {
		s += "/" + r.name
	}
	return s
}

func checkRBACRules(t *testing.T, rr *rendering) {
	got := map[rule]bool{}
	add := func(scope string, rules []rbacv1.PolicyRule) {
		for _, p := range rules {
			names := p.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range p.APIGroups {
				for _, res := range p.Resources {
					for _, v := range p.Verbs {
						for _, n := range names {
							if g == "*" || res == "*" || v == "*" {
								t.Errorf("%s: wildcard in %v", scope, p)
							}
							got[rule{scope, g, res, v, n}] = true
						}
					}
				}
			}
		}
	}
	for _, o := range rr.ofKind("ClusterRole") {
		add("cluster", as[rbacv1.ClusterRole](t, o).Rules)
	}
	for _, o := range rr.ofKind("Role") {
		role := as[rbacv1.Role](t, o)
		add("namespace "+role.Namespace, role.Rules)
	}
	want := map[rule]bool{}
	for _, w := range []rule{
		{"cluster", "", "services", "get", ""}, {"cluster", "", "services", "list", ""}, {"cluster", "", "services", "watch", ""},
		{"cluster", "networking.k8s.io", "ingresses", "list", ""}, {"cluster", "networking.k8s.io", "ingresses", "watch", ""},
		{"cluster", "discovery.k8s.io", "endpointslices", "list", ""}, {"cluster", "discovery.k8s.io", "endpointslices", "watch", ""},
		{"cluster", "", "nodes", "list", ""}, {"cluster", "", "nodes", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "gateways", "list", ""}, {"cluster", "gateway.networking.k8s.io", "gateways", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "httproutes", "list", ""}, {"cluster", "gateway.networking.k8s.io", "httproutes", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "grpcroutes", "list", ""}, {"cluster", "gateway.networking.k8s.io", "grpcroutes", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "tlsroutes", "list", ""}, {"cluster", "gateway.networking.k8s.io", "tlsroutes", "watch", ""},
		{"cluster", "apiextensions.k8s.io", "customresourcedefinitions", "list", ""}, {"cluster", "apiextensions.k8s.io", "customresourcedefinitions", "watch", ""},
		{"cluster", "", "services/status", "update", ""}, {"cluster", "", "services/status", "patch", ""},
		{"cluster", "", "events", "create", ""}, {"cluster", "", "events", "patch", ""},
		{"namespace skylb", "coordination.k8s.io", "leases", "create", ""},
		{"namespace skylb", "coordination.k8s.io", "leases", "get", "skylb"},
		{"namespace skylb", "coordination.k8s.io", "leases", "update", "skylb"},
	} {
		want[w] = true
	}
	for w := range want {
		if !got[w] {
			t.Errorf("RBAC lacks %s", w)
		}
	}
	for g := range got {
		if !want[g] {
			t.Errorf("RBAC grants more than skylb uses: %s", g)
		}
	}
	// The bindings bind the roles to skylb's ServiceAccount only.
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range rr.ofKind(kind) {
			b := as[rbacv1.RoleBinding](t, o)
			if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != "skylb" || b.Subjects[0].Namespace != nsSkylb {
				t.Errorf("%s %s binds %v", kind, b.Name, b.Subjects)
			}
		}
	}
}

// fluxPatches builds each Flux Kustomization the way kustomize-controller
// does (its patches and components added to the kustomization of its path,
// then postBuild's substitution from the ConfigMap skylb-settings), with the
// zone changed there, and checks that the new zone reaches the ConfigMaps and
// the pod templates: the substitution comes after kustomize has named the
// generated ConfigMaps, so only a changed pod template rolls the pods.
func fluxPatches(t *testing.T, root string, flux *rendering) {
	settings := as[corev1.ConfigMap](t, flux.get(t, "ConfigMap", "flux-system", "skylb-settings"))
	vars := maps.Clone(settings.Data)
	vars["SKYLB_ZONE"] = "flux.example.net"
	varRef := regexp.MustCompile(`\$\{([^}]*)\}`)
	for _, k := range flux.ofKind("Kustomization") {
		patches, _, _ := unstructured.NestedSlice(k.Object, "spec", "patches")
		if len(patches) == 0 {
			continue
		}
		from, _, _ := unstructured.NestedSlice(k.Object, "spec", "postBuild", "substituteFrom")
		if len(from) != 1 || from[0].(map[string]any)["name"] != "skylb-settings" {
			t.Errorf("Flux Kustomization %s: postBuild.substituteFrom %v, want the ConfigMap skylb-settings", k.GetName(), from)
		}
		path, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		src := filepath.Join(root, path)
		dst := filepath.Join(t.TempDir(), "src")
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		kfile := filepath.Join(dst, "kustomization.yaml")
		b, err := os.ReadFile(kfile)
		if err != nil {
			t.Fatal(err)
		}
		var kus map[string]any
		if err := utilyaml.Unmarshal(b, &kus); err != nil {
			t.Fatal(err)
		}
		kus["patches"] = patches
		if b, err = json.Marshal(kus); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kfile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("kubectl", "kustomize", dst).CombinedOutput()
		if err != nil {
			t.Fatalf("Flux Kustomization %s: build with its patches: %v\n%s", k.GetName(), err, out)
		}
		out = varRef.ReplaceAllFunc(out, func(ref []byte) []byte {
			name := string(varRef.FindSubmatch(ref)[1])
			v, ok := vars[name]
			if !ok {
				t.Errorf("Flux Kustomization %s: ${%s} is not in skylb-settings", k.GetName(), name)
			}
			return []byte(v)
		})
		inConfigMap, inTemplate := false, false
		for _, o := range decode(t, out) {
			switch o.GetKind() {
			case "ConfigMap":
				for _, v := range as[corev1.ConfigMap](t, o).Data {
					inConfigMap = inConfigMap || v == "flux.example.net"
				}
			case "Deployment", "DaemonSet":
				annotations, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
				for _, v := range annotations {
					inTemplate = inTemplate || strings.Contains(v, "zone=flux.example.net")
				}
			}
		}
		if !inConfigMap {
			t.Errorf("Flux Kustomization %s: the zone of skylb-settings does not reach the ConfigMap", k.GetName())
		}
		if !inTemplate {
			t.Errorf("Flux Kustomization %s: the zone of skylb-settings does not reach the pod template, so a change would not roll the pods", k.GetName())
		}
	}
}

// --- server-side dry run -----------------------------------------------------------

func dryRun(ctx context.Context, t *testing.T, k kubectl, r map[string]*rendering, certs *certSet, haveCRDs bool) {
	// Namespaced objects need their namespace: the manifests' own, applied for
	// real (with their Pod Security labels), and those of Flux and cert-manager.
	for _, ns := range []string{"flux-system", "cert-manager"} {
		if _, _, err := k.run(ctx, nil, "create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
	}
	applyNamespaces := func(rr *rendering) {
		if ns := rr.ofKind("Namespace"); len(ns) > 0 {
			if _, _, err := k.run(ctx, encode(t, ns), "apply", "-f", "-"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, spec := range renderSpecs {
		applyNamespaces(r[spec.name])
	}
	// The hostnetwork variant relaxes its namespace's Pod Security level: dry-run
	// it against that namespace, then restore the default.
	for _, spec := range renderSpecs {
		rr := r[spec.name]
		t.Run(spec.name, func(t *testing.T) {
			if rr.crd && !haveCRDs {
				clientSide(t, rr)
				return
			}
			applyNamespaces(rr)
			_, stderr, err := k.run(ctx, rr.yaml, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			if err != nil {
				t.Fatal(err)
			}
			noWarnings(t, stderr)
		})
	}
	applyNamespaces(r["coredns"])
	// The check for warnings sees them: a container without a security context
	// in a restricted namespace gets one.
	t.Run("canary", func(t *testing.T) {
		canary := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"canary","namespace":"skylb"},
"spec":{"selector":{"matchLabels":{"app":"canary"}},"template":{"metadata":{"labels":{"app":"canary"}},
"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)
		_, stderr, err := k.run(ctx, canary, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr, "would violate PodSecurity") {
			t.Errorf("no Pod Security warning for a container without a security context: %q", stderr)
		}
	})
	t.Run("gen-certs Secrets", func(t *testing.T) {
		for _, f := range certs.files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, stderr, err := k.run(ctx, b, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			if err != nil {
				t.Fatal(err)
			}
			noWarnings(t, stderr)
		}
	})
}

func noWarnings(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if strings.TrimSpace(line) != "" {
			t.Errorf("kubectl: %s", line)
		}
	}
}

// clientSide checks objects whose CRDs are not installed: well-formed, with a
// known API version, a name and, for namespaced kinds, a namespace.
func clientSide(t *testing.T, rr *rendering) {
	known := map[string]bool{
		"source.toolkit.fluxcd.io/v1": true, "kustomize.toolkit.fluxcd.io/v1": true, "cert-manager.io/v1": true,
	}
	for _, o := range rr.objs {
		gv := o.GetAPIVersion()
		if strings.Contains(gv, ".") && !strings.HasSuffix(strings.Split(gv, "/")[0], ".k8s.io") && !known[gv] {
			t.Errorf("%s: unknown API version %s", rr.name, gv)
		}
		if o.GetName() == "" {
			t.Errorf("%s: %s without a name", rr.name, o.GetKind())
		}
	}
	t.Logf("%s: checked client-side only (no CRDs)", rr.name)
}

// --- RBAC --------------------------------------------------------------------------

// access is one "kubectl auth can-i": verb on resource (group-qualified),
// optionally its subresource or one object's name, in namespace ns ("" means
// all namespaces).
type access struct {
	verb, resource, sub, name, ns string
	allowed                       bool
}

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.sub != "" {
		s += " --subresource=" + a.sub
	}
	if a.name != "" {
		s += "/" + a.name
	}
	if a.ns == "" {
		return s + " --all-namespaces"
	}
	return s + " -n " + a.ns
}

// rbacChecks applies the RBAC objects of rr, whose skylb runs in namespace
// ns, and asks the API server what skylb's ServiceAccount may do.
func rbacChecks(ctx context.Context, t *testing.T, k kubectl, rr *rendering, ns string) {
	saUser := "system:serviceaccount:" + ns + ":skylb"
	rbac := rr.filter(func(o *unstructured.Unstructured) bool {
		return slices.Contains([]string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind())
	})
	if _, _, err := k.run(ctx, encode(t, rbac), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	const (
		ing    = "ingresses.networking.k8s.io"
		eps    = "endpointslices.discovery.k8s.io"
		leases = "leases.coordination.k8s.io"
	)
	checks := []access{
		// What skylb does.
		{verb: "get", resource: "services", ns: "default", allowed: true},
		{verb: "list", resource: "services", allowed: true},
		{verb: "watch", resource: "services", allowed: true},
		{verb: "list", resource: ing, allowed: true},
		{verb: "watch", resource: ing, allowed: true},
		{verb: "list", resource: eps, allowed: true},
		{verb: "watch", resource: eps, allowed: true},
		{verb: "list", resource: "nodes", allowed: true},
		{verb: "watch", resource: "nodes", allowed: true},
		{verb: "list", resource: "gateways.gateway.networking.k8s.io", allowed: true},
		{verb: "watch", resource: "gateways.gateway.networking.k8s.io", allowed: true},
		{verb: "list", resource: "httproutes.gateway.networking.k8s.io", allowed: true},
		{verb: "watch", resource: "grpcroutes.gateway.networking.k8s.io", allowed: true},
		{verb: "watch", resource: "tlsroutes.gateway.networking.k8s.io", allowed: true},
		{verb: "list", resource: "customresourcedefinitions.apiextensions.k8s.io", allowed: true},
		{verb: "watch", resource: "customresourcedefinitions.apiextensions.k8s.io", allowed: true},
		{verb: "update", resource: "services", sub: "status", ns: "default", allowed: true},
		{verb: "patch", resource: "services", sub: "status", ns: "default", allowed: true},
		{verb: "create", resource: "events", ns: "default", allowed: true},
		{verb: "patch", resource: "events", ns: "default", allowed: true},
		{verb: "create", resource: leases, ns: ns, allowed: true},
		{verb: "get", resource: leases, name: "skylb", ns: ns, allowed: true},
		{verb: "update", resource: leases, name: "skylb", ns: ns, allowed: true},
		// What it must not.
		{verb: "get", resource: "secrets", ns: ns},
		{verb: "list", resource: "secrets"},
		{verb: "watch", resource: "secrets"},
		{verb: "delete", resource: "services", ns: "default"},
		{verb: "update", resource: "services", ns: "default"},
		{verb: "patch", resource: "services", ns: "default"},
		{verb: "create", resource: "services", ns: "default"},
		{verb: "list", resource: "pods"},
		{verb: "get", resource: "pods", ns: "default"},
		{verb: "get", resource: "nodes", name: "node-1"},
		{verb: "update", resource: "nodes", name: "node-1"},
		{verb: "update", resource: ing, sub: "status", ns: "default"},
		{verb: "update", resource: "httproutes.gateway.networking.k8s.io", sub: "status", ns: "default"},
		{verb: "update", resource: "gateways.gateway.networking.k8s.io", ns: "default"},
		{verb: "list", resource: "referencegrants.gateway.networking.k8s.io"},
		{verb: "update", resource: "customresourcedefinitions.apiextensions.k8s.io", name: "gateways.gateway.networking.k8s.io"},
		{verb: "delete", resource: "customresourcedefinitions.apiextensions.k8s.io", name: "gateways.gateway.networking.k8s.io"},
		{verb: "delete", resource: eps, ns: "default"},
		{verb: "delete", resource: "events", ns: "default"},
		{verb: "get", resource: leases, name: "other", ns: ns},
		{verb: "update", resource: leases, name: "other", ns: ns},
		{verb: "delete", resource: leases, name: "skylb", ns: ns},
		{verb: "create", resource: leases, ns: "kube-system"},
		{verb: "get", resource: "configmaps", ns: ns},
		{verb: "create", resource: "serviceaccounts", sub: "token", name: "skylb", ns: ns},
		{verb: "*", resource: "*"},
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			target := c.resource
			if c.name != "" {
				target += "/" + c.name
			}
			args := []string{"auth", "can-i", c.verb, target, "--as=" + saUser}
			if c.sub != "" {
				args = append(args, "--subresource="+c.sub)
			}
			if c.ns == "" {
				args = append(args, "--all-namespaces")
			} else {
				args = append(args, "--namespace="+c.ns)
			}
			out, stderr, err := k.run(ctx, nil, args...)
			answer := strings.TrimSpace(out)
			var ee *exec.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1 && answer == "no") {
				t.Errorf("%v", err)
				return
			}
			if stderr != "" {
				t.Errorf("can-i %s: %s", c, stderr)
			}
			if (answer == "yes") != c.allowed {
				t.Errorf("%s: can-i %s: %s, want allowed=%v", saUser, c, answer, c.allowed)
			}
		}()
	}
	wg.Wait()
}

// --- etcd, the RBAC bootstrap Job, CoreDNS ------------------------------------------

func etcdFlags(ctx context.Context, t *testing.T, bin string, rr *rendering) {
	sts := as[appsv1.StatefulSet](t, rr.get(t, "StatefulSet", nsEtcd, "etcd"))
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	if *sts.Spec.Replicas != 3 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("etcd: %d replicas, %s pod management, want 3 started in parallel", *sts.Spec.Replicas, sts.Spec.PodManagementPolicy)
	}
	headless := as[corev1.Service](t, rr.get(t, "Service", nsEtcd, sts.Spec.ServiceName))
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Error("etcd's peer Service must be headless and publish not-ready addresses")
	}
	var members []string
	for i := range *sts.Spec.Replicas {
		n := fmt.Sprintf("%s-%d", sts.Name, i)
		members = append(members, fmt.Sprintf("%s=https://%s.%s.%s.svc:2380", n, n, sts.Spec.ServiceName, sts.Namespace))
	}
	args := expand(c.Args, map[string]string{"POD_NAME": sts.Name + "-0"})
	if ic, _ := flagValue(args, "initial-cluster"); ic != strings.Join(members, ",") {
		t.Errorf("--initial-cluster=%s, want %s", ic, strings.Join(members, ","))
	}
	server := secretMount(t, pod, c, "etcd-server")
	peer := secretMount(t, pod, c, "etcd-peer")
	for flag, want := range map[string]string{
		"trusted-ca-file": server + "/ca.crt", "cert-file": server + "/tls.crt", "key-file": server + "/tls.key",
		"peer-trusted-ca-file": peer + "/ca.crt", "peer-cert-file": peer + "/tls.crt", "peer-key-file": peer + "/tls.key",
		"client-cert-auth": "true", "peer-client-cert-auth": "true",
	} {
		if got, _ := flagValue(args, flag); got != want {
			t.Errorf("etcd --%s=%s, want %s", flag, got, want)
		}
	}
	// etcd parses every flag before --version prints: a misspelt flag or a bad
	// value fails here.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "etcd"), append(args, "--version")...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "etcd Version") {
		t.Errorf("etcd does not accept the StatefulSet's flags: %v\n%s", err, out)
	}
}

// rbacBootstrap runs the Job's script, from its ConfigMap, with the Job's
// environment against the stack's etcd (bootstrapped already: the run must
// find everything in place).
func rbacBootstrap(ctx context.Context, t *testing.T, s *stack.Stack, bin string, rr *rendering) {
	job := as[batchv1.Job](t, rr.get(t, "Job", nsEtcd, "etcd-rbac-bootstrap"))
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	cm := as[corev1.ConfigMap](t, rr.get(t, "ConfigMap", nsEtcd, configMapMount(t, pod, c, "/scripts")))
	if want := []string{"bash", "/scripts/rbac-bootstrap.sh"}; !slices.Equal(c.Command, want) {
		t.Errorf("Job command %v, want %v", c.Command, want)
	}
	env := rr.env(t, nsEtcd, c)
	// etcdctl comes from the init container, into the shared volume.
	init := pod.InitContainers[0]
	if got := init.Command[len(init.Command)-1]; got != env["SKYLB_ETCDCTL"] {
		t.Errorf("the init container copies etcdctl to %s, the script runs %s", got, env["SKYLB_ETCDCTL"])
	}
	root := secretMount(t, pod, c, "etcd-root-client")
	local := map[string]string{
		"SKYLB_ETCDCTL":     filepath.Join(bin, "etcdctl"),
		"ETCDCTL_ENDPOINTS": s.EtcdURL,
		"ETCDCTL_CACERT":    filepath.Join(s.Certs, "ca.crt"),
		"ETCDCTL_CERT":      filepath.Join(s.Certs, "root.crt"),
		"ETCDCTL_KEY":       filepath.Join(s.Certs, "root.key"),
	}
	for name, want := range map[string]string{
		"ETCDCTL_CACERT": root + "/ca.crt", "ETCDCTL_CERT": root + "/tls.crt", "ETCDCTL_KEY": root + "/tls.key",
	} {
		if env[name] != want {
			t.Errorf("Job %s=%s, want %s", name, env[name], want)
		}
	}
	script := filepath.Join(t.TempDir(), "rbac-bootstrap.sh")
	if err := os.WriteFile(script, []byte(cm.Data["rbac-bootstrap.sh"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = os.Environ()
	for k, v := range env {
		if lv, ok := local[k]; ok {
			v = lv
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Job's script: %v\n%s", err, out)
	}
	for _, want := range []string{"rbac: user skylb has role skylb", "rbac: user coredns has role coredns", "rbac: authentication already enabled"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the Job's script did not report %q:\n%s", want, out)
		}
	}
}

var corefileVar = regexp.MustCompile(`\{\$([A-Za-z0-9_]+)\}`)

// coreDNS runs CoreDNS with the ConfigMap's Corefile and the Deployment's
// environment, moved to loopback ports and the stack's etcd and certificates,
// until it is ready, and asks it for a record put into etcd.
func coreDNS(ctx context.Context, t *testing.T, s *stack.Stack, bin string, rr *rendering) {
	dep := as[appsv1.Deployment](t, rr.get(t, "Deployment", nsCoreDNS, "coredns"))
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	cm := as[corev1.ConfigMap](t, rr.get(t, "ConfigMap", nsCoreDNS, configMapMount(t, pod, c, "/etc/coredns/conf")))
	if want := []string{"-conf", "/etc/coredns/conf/Corefile"}; !slices.Equal(c.Args, want) {
		t.Errorf("CoreDNS args %v, want %v", c.Args, want)
	}
	corefile := cm.Data["Corefile"]
	env := rr.env(t, nsCoreDNS, c)

	// Every {$VAR} of the Corefile (outside comments) is set: an unset one
	// would be empty.
	var directives []string
	for _, line := range strings.Split(corefile, "\n") {
		line, _, _ = strings.Cut(line, "#")
		directives = append(directives, line)
	}
	vars := corefileVar.FindAllStringSubmatch(strings.Join(directives, "\n"), -1)
	if len(vars) == 0 {
		t.Error("the Corefile uses no {$VAR}")
	}
	for _, m := range vars {
		if _, ok := env[m[1]]; !ok {
			t.Errorf("the Deployment does not set %s, which the Corefile uses", m[1])
		}
	}
	etcdTLS := secretMount(t, pod, c, "coredns-etcd-client")
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, want := range map[string]string{
		"SKYLB_ETCD_CA": etcdTLS + "/ca.crt", "SKYLB_ETCD_CERT": etcdTLS + "/tls.crt", "SKYLB_ETCD_KEY": etcdTLS + "/tls.key",
		"SKYLB_DNS_BIND": "0.0.0.0", "SKYLB_DNS_PORT": fmt.Sprint(ports["dns"]),
		"SKYLB_HEALTH_ADDR":  fmt.Sprintf(":%d", c.LivenessProbe.HTTPGet.Port.IntValue()),
		"SKYLB_READY_ADDR":   fmt.Sprintf(":%d", c.ReadinessProbe.HTTPGet.Port.IntValue()),
		"SKYLB_METRICS_ADDR": fmt.Sprintf(":%d", ports["metrics"]),
	} {
		if env[name] != want {
			t.Errorf("CoreDNS %s=%q, want %q", name, env[name], want)
		}
	}
	if c.LivenessProbe.HTTPGet.Path != "/health" || c.ReadinessProbe.HTTPGet.Path != "/ready" {
		t.Error("CoreDNS probes: want /health for liveness and /ready for readiness")
	}

	var free [4]int
	for i := range free {
		port, err := stack.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		free[i] = port
	}
	dnsPort, health, ready, metrics := free[0], free[1], free[2], free[3]
	local := map[string]string{
		"SKYLB_DNS_BIND":      "127.0.0.1",
		"SKYLB_DNS_PORT":      fmt.Sprint(dnsPort),
		"SKYLB_ETCD_ENDPOINT": s.EtcdURL,
		"SKYLB_ETCD_CA":       filepath.Join(s.Certs, "ca.crt"),
		"SKYLB_ETCD_CERT":     filepath.Join(s.Certs, "coredns.crt"),
		"SKYLB_ETCD_KEY":      filepath.Join(s.Certs, "coredns.key"),
		"SKYLB_HEALTH_ADDR":   fmt.Sprintf("127.0.0.1:%d", health),
		"SKYLB_READY_ADDR":    fmt.Sprintf("127.0.0.1:%d", ready),
		"SKYLB_METRICS_ADDR":  fmt.Sprintf("127.0.0.1:%d", metrics),
	}
	runEnv := maps.Clone(env)
	maps.Copy(runEnv, local)
	dir := t.TempDir()
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "coredns", runEnv, filepath.Join(bin, "coredns"), "-conf", conf)
	if err := p.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/ready", ready), 20*time.Second); err != nil {
		t.Fatalf("CoreDNS with the ConfigMap's Corefile: %v", err)
	}

	// A record written as skylb is served to DNS clients, read as coredns.
	zone := env["SKYLB_DNS_ZONE"]
	labels := strings.Split(zone, ".")
	slices.Reverse(labels)
	key := "/skydns/" + strings.Join(labels, "/") + "/manifests-test/x1"
	etcdctl := func(args ...string) {
		base := []string{"--endpoints=" + s.EtcdURL, "--cacert=" + filepath.Join(s.Certs, "ca.crt"),
			"--cert=" + filepath.Join(s.Certs, "skylb.crt"), "--key=" + filepath.Join(s.Certs, "skylb.key")}
		if out, err := exec.CommandContext(ctx, filepath.Join(bin, "etcdctl"), append(base, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
		}
	}
	etcdctl("put", key, `{"host":"192.0.2.55","ttl":30}`)
	defer etcdctl("del", key)
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", fmt.Sprintf("127.0.0.1:%d", dnsPort))
	}}
	name := "manifests-test." + zone + "."
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
		got, _ = res.LookupHost(lctx, name)
		lcancel()
		if slices.Equal(got, []string{"192.0.2.55"}) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.Equal(got, []string{"192.0.2.55"}) {
		t.Errorf("CoreDNS answers %s with %v, want [192.0.2.55]%s", name, got, p.tail())
	}
}

// --- skylb -------------------------------------------------------------------------

// skylbRuns runs skylb with the Deployment's arguments (its files and ports
// moved to the stack's) and a token of its ServiceAccount: everything it does
// must be allowed by the RBAC applied before.
func skylbRuns(ctx context.Context, t *testing.T, s *stack.Stack, rr *rendering) {
	dep := as[appsv1.Deployment](t, rr.get(t, "Deployment", nsSkylb, "skylb"))
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if pod.ServiceAccountName != "skylb" || *dep.Spec.Replicas != 2 {
		t.Errorf("skylb: ServiceAccount %q with %d replicas, want skylb with 2", pod.ServiceAccountName, *dep.Spec.Replicas)
	}
	env := rr.env(t, nsSkylb, c)
	args := expand(c.Args, env)
	for _, a := range args {
		if varRef.MatchString(a) {
			t.Errorf("skylb argument %q refers to an unset variable", a)
		}
	}
	tls := secretMount(t, pod, c, "skylb-etcd-client")
	for flag, want := range map[string]string{
		"etcd-ca-file": tls + "/ca.crt", "etcd-cert-file": tls + "/tls.crt", "etcd-key-file": tls + "/tls.key",
		"etcd-endpoints": "https://etcd-client.skylb-dns.svc:2379", "http-address": ":8080",
		"leader-elect": "true", "leader-elect-id": "skylb",
	} {
		if got, _ := flagValue(args, flag); got != want {
			t.Errorf("skylb --%s=%q, want %q", flag, got, want)
		}
	}
	// The Lease is in the pod's own namespace, wherever an overlay puts it.
	if got, ok := flagValue(args, "leader-elect-namespace"); ok {
		t.Errorf("skylb --leader-elect-namespace=%q, want it unset: the pod's namespace", got)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe.HTTPGet.Port.String() != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Error("skylb probes: want /healthz and /readyz on port 8080")
	}

	bin, err := s.BuildSkylb(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The flags parse.
	if out, err := exec.CommandContext(ctx, bin, append(slices.Clone(args), "--version")...).CombinedOutput(); err != nil {
		t.Fatalf("skylb does not accept the Deployment's arguments: %v\n%s", err, out)
	}

	// A kubeconfig with a token of skylb's ServiceAccount.
	tr, err := s.Kube.CoreV1().ServiceAccounts(nsSkylb).CreateToken(ctx, "skylb",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, ai := range cfg.AuthInfos {
		ai.Token, ai.TokenFile, ai.ClientCertificate, ai.ClientKey = tr.Status.Token, "", "", ""
		ai.ClientCertificateData, ai.ClientKeyData = nil, nil
		cfg.AuthInfos[name] = ai
	}
	kubeconfig := filepath.Join(t.TempDir(), "skylb.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	httpPort, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args = setFlag(args, "etcd-endpoints", s.EtcdURL)
	args = setFlag(args, "etcd-ca-file", filepath.Join(s.Certs, "ca.crt"))
	args = setFlag(args, "etcd-cert-file", filepath.Join(s.Certs, "skylb.crt"))
	args = setFlag(args, "etcd-key-file", filepath.Join(s.Certs, "skylb.key"))
	args = setFlag(args, "http-address", fmt.Sprintf("127.0.0.1:%d", httpPort))
	args = setFlag(args, "kubeconfig", kubeconfig)
	t0 := time.Now()
	// With the pod's environment too, where every SKYLB_<FLAG> of the
	// ConfigMap is a setting.
	p := startProcess(t, "skylb", env, bin, args...)
	if err := p.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort), 30*time.Second); err != nil {
		t.Fatalf("skylb as its ServiceAccount: %v", err)
	}
	t.Logf("skylb ready after %.1fs", time.Since(t0).Seconds())

	// It leads: the Lease of --leader-elect-id.
	waitFor(ctx, t, 20*time.Second, "skylb to hold the Lease skylb/skylb", p, func() bool {
		l, err := s.Kube.CoordinationV1().Leases(nsSkylb).Get(ctx, "skylb", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	})

	// It implements a LoadBalancer Service: status, Event, DNS.
	const node, nodeIP, svcName = "manifests-node-1", "192.0.2.61", "manifests-web"
	if err := s.CreateNodes(ctx, stack.NodeSpec{Name: node, InternalIP: []string{nodeIP}, PodCIDR: "10.244.61.0/24"}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := s.Kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svcName + "-1", Namespace: "default", Labels: map[string]string{
			discoveryv1.LabelServiceName: svcName, discoveryv1.LabelManagedBy: "manifests-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.61.5"}, NodeName: ptr(node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}}},
		Ports: []discoveryv1.EndpointPort{{Port: ptr(int32(80)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if _, err := s.Kube.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 20*time.Second, "skylb to write the Service's status", p, func() bool {
		got, err := s.Kube.CoreV1().Services("default").Get(ctx, svcName, metav1.GetOptions{})
		ing := got.Status.LoadBalancer.Ingress
		return err == nil && len(ing) == 1 && ing[0].IP == nodeIP
	})
	waitFor(ctx, t, 20*time.Second, "skylb's Event on the Service", p, func() bool {
		evs, err := s.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + svcName})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Source.Component == "skylb" {
				return true
			}
		}
		return false
	})
	name := fmt.Sprintf("%s.default.%s", svcName, env["SKYLB_ZONE"])
	waitFor(ctx, t, 20*time.Second, "CoreDNS to answer "+name, p, func() bool {
		ips, err := s.LookupA(ctx, name)
		return err == nil && slices.Equal(ips, []string{nodeIP})
	})
	t.Logf("skylb led, wrote the status, sent an Event and published %s after %.1fs", name, time.Since(t0).Seconds())
	if log := p.log(); strings.Contains(strings.ToLower(log), "forbidden") {
		t.Errorf("skylb was refused something:%s", p.tail())
	}
}

func ptr[T any](v T) *T { return &v }

// --- processes ---------------------------------------------------------------------

type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startProcess runs path with args and env added to the test's environment; it
// is stopped when the test ends.
func startProcess(t *testing.T, name string, env map[string]string, path string, args ...string) *process {
	t.Helper()
	p := &process{name: name, logPath: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *process) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// tail returns the last lines of the log, as an error message suffix.
func (p *process) tail() string {
	lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return fmt.Sprintf("\n----- last lines of %s's log -----\n%s", p.name, strings.Join(lines, "\n"))
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitHTTP waits until url answers 200, failing early when the process exits.
func (p *process) waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%v)%s", p.name, p.err, p.tail())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready at %s after %v%s", p.name, url, timeout, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, p *process, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if p.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("waiting for %s: gave up%s", what, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
