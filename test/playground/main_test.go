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

// TestKubectlCommand checks which kubectl the instructions name: the stack's
// own once built, else one on PATH, else the stack's with how to build it.
func TestKubectlCommand(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	path := filepath.Join(root, "path")
	for _, dir := range []string{bin, path} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", path)
	executable := func(file string) {
		t.Helper()
		if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func(wantCommand string, wantHint bool) {
		t.Helper()
		command, hint := kubectlCommand(root, bin)
		if command != wantCommand || (hint != "") != wantHint {
			t.Errorf("kubectlCommand = %q, %q; want %q, a hint %v", command, hint, wantCommand, wantHint)
		}
	}
	check("bin/kubectl", true)
	executable(filepath.Join(path, "kubectl"))
	check("kubectl", false)
	executable(filepath.Join(bin, "kubectl"))
	check("bin/kubectl", false)
}
