// Package depstest checks, in a package's tests, which of the module's
// packages it depends on: the layering the import graph alone would let
// drift.
package depstest

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Module is the import path prefix of skylb's packages.
const Module = "github.com/skylb/skylb/"

// Only fails t when the package in the current directory depends, directly
// or not, on a package of the module other than itself and allowed (paths
// below the module, e.g. "internal/skydns"), or on any Kubernetes package.
func Only(t *testing.T, self string, allowed ...string) {
	t.Helper()
	ok := map[string]bool{Module + self: true}
	for _, a := range allowed {
		ok[Module+a] = true
	}
	out, err := exec.Command(filepath.Join(build.Default.GOROOT, "bin", "go"), "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, Module) && !ok[dep] {
			t.Errorf("%s depends on %s", self, dep)
		}
	}
}
