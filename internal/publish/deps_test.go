package publish

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDependencies keeps the etcd writer apart from Kubernetes: it depends on
// the record type (and through it on the syntax of names) and the
// cross-cluster arbitration, never on the object types, the ranking of
// objects or the health checks.
func TestDependencies(t *testing.T) {
	const module = "github.com/skylb/skylb/"
	allowed := map[string]bool{
		module + "internal/publish":   true,
		module + "internal/skydns":    true,
		module + "internal/dnsname":   true,
		module + "internal/arbitrate": true,
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
		if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, module) && !allowed[dep] {
			t.Errorf("internal/publish depends on %s", dep)
		}
	}
}
