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
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	// readme, in place of dir, is an overlay of manifests/README.md: its
	// yaml blocks of "# <readme>/<file>" (see stack.ReadmeOverlay).
	readme string
}

// nsOverlay is the namespace of the overlay that moves skylb out of its own.
const nsOverlay = "dns-lb"

// The namespaces the README's scoped overlay watches, and its name here.
var teamNamespaces = []string{"team-a", "team-b"}

const namespacedSpec = "skylb watching two namespaces"

var renderSpecs = []renderSpec{
	{name: "skylb", dir: "manifests"},
	{name: "skylb in " + nsOverlay, dir: "manifests", namespace: nsOverlay},
	{name: "skylb+cert-manager", dir: "manifests", components: []string{"manifests/cert-manager"}, crd: true},
	{name: namespacedSpec, readme: "my-skylb-scoped"},
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
	if _, err := os.Stat(kubectlPath(root)); err != nil {
		t.Skip("skipped: bin/kubectl is missing; run scripts/build-bins.sh kubectl")
	}
	for _, tool := range []string{"openssl", "bash"} {
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
	k := kubectl{path: kubectlPath(root), kubeconfig: s.Kubeconfig}

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
	t.Run("RBAC can-i the views' ConfigMap", func(t *testing.T) { viewsRBACChecks(ctx, t, k, r["coredns"]) })
	t.Run("etcd flags", func(t *testing.T) { etcdFlags(ctx, t, bin, r["etcd"]) })
	t.Run("rbac-bootstrap Job", func(t *testing.T) { rbacBootstrap(ctx, t, s, bin, r["etcd"]) })
	t.Run("CoreDNS Corefile", func(t *testing.T) { coreDNS(ctx, t, s, bin, r["coredns"]) })
	t.Run("documented settings through skylb check", func(t *testing.T) {
		bin, err := s.BuildSkylb(ctx)
		if err != nil {
			t.Fatal(err)
		}
		documentedSettings(ctx, t, root, bin, r["skylb"])
	})
	var published string
	t.Run("skylb as its ServiceAccount", func(t *testing.T) {
		if !rbacOK {
			t.Skip("the RBAC checks failed")
		}
		published = skylbRuns(ctx, t, s, r["skylb"], workload{ns: "default", svc: "manifests-web",
			node: "manifests-node-1", nodeIP: "192.0.2.61", podIP: "10.244.61.5", podCIDR: "10.244.61.0/24"})
	})
	// Last: the namespaced RBAC takes the cluster-wide grants back.
	nsOK := t.Run("RBAC can-i watching two namespaces", func(t *testing.T) { namespacedRBACChecks(ctx, t, k, r[namespacedSpec]) })
	t.Run("skylb watching two namespaces as its ServiceAccount", func(t *testing.T) {
		if !nsOK || published == "" {
			t.Skip("the RBAC checks or the unscoped skylb failed")
		}
		skylbRuns(ctx, t, s, r[namespacedSpec], workload{ns: teamNamespaces[0], svc: "manifests-team",
			node: "manifests-node-2", nodeIP: "192.0.2.62", podIP: "10.244.62.5", podCIDR: "10.244.62.0/24"})
		// Its first full pass is in etcd: the record of the Service of
		// default, of its owner id but outside its scope, is still there.
		if ips, err := s.LookupA(ctx, published); err != nil || !slices.Equal(ips, []string{"192.0.2.61"}) {
			t.Errorf("%s after the scoped skylb published: %q, %v; want 192.0.2.61 kept", published, ips, err)
		}
	})
	t.Logf("done in %.1fs", time.Since(t0).Seconds())
}
