package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skylb/skylb/test/stack"
)

// TestScriptBuildsTheStackBinaries checks that scripts/playground.sh builds
// exactly the binaries the stack runs: it builds only those, for a short
// first start, so one the stack starts to run would be missing there.
func TestScriptBuildsTheStackBinaries(t *testing.T) {
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "playground.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^STACK_BINS=\(([^)]*)\)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/playground.sh has no line STACK_BINS=(...)")
	}
	got := strings.Fields(string(m[1]))
	want := slices.Clone(stack.Binaries)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("scripts/playground.sh builds %v, the stack runs %v (stack.Binaries)", got, want)
	}
}
