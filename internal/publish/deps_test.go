package publish

import (
	"testing"

	"github.com/skylb/skylb/internal/depstest"
)

// TestDependencies keeps the etcd writer apart from Kubernetes: it depends on
// the record type (and through it on the syntax of names) and the
// cross-cluster arbitration, never on the object types, the ranking of
// objects or the health checks.
func TestDependencies(t *testing.T) {
	depstest.Only(t, "internal/publish", "internal/skydns", "internal/dnsname", "internal/arbitrate")
}
