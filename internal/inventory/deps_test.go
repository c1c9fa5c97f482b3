package inventory

import (
	"testing"

	"github.com/skylb/skylb/internal/depstest"
)

// TestDependencies keeps "skylb records" a reader: it decodes records and
// claims with the packages that define them, never through the writer.
func TestDependencies(t *testing.T) {
	depstest.Only(t, "internal/inventory", "internal/skydns", "internal/dnsname", "internal/arbitrate")
}
