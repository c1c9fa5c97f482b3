package manifests

import (
	"context"
	"os"
	"strings"
	"testing"
)

func dryRun(ctx context.Context, t *testing.T, k kubectl, r map[string]*rendering, certs *certSet, haveCRDs bool) {
	// Namespaced objects need their namespace: the manifests' own, applied for
	// real (with their Pod Security labels), those of Flux and cert-manager,
	// and those a scoped skylb watches.
	for _, ns := range append([]string{"flux-system", "cert-manager"}, teamNamespaces...) {
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
