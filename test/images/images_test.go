package images

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/test/stack"
)

// TestDockerfileBuild pins the shape of the Dockerfile's go build: if it
// changes, the image built here must be checked against it again.
func TestDockerfileBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(stack.Root(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			got, err := dockerfileBuild(string(b), "v9.9.9", "0123abc", arch)
			if err != nil {
				t.Fatal(err)
			}
			want := goBuildCommand{
				Env:   []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch},
				Flags: []string{"-trimpath", "-tags", "grpcnotrace", "-ldflags", "-s -w -X github.com/skylb/skylb/internal/cli.version=v9.9.9 -X github.com/skylb/skylb/internal/cli.commit=0123abc"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("dockerfileBuild(Dockerfile, %s) mismatch (-want +got):\n%s", arch, diff)
			}
		})
	}
}

func TestReadRefs(t *testing.T) {
	got, err := ReadRefs(stack.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	want := Refs{
		Skylb:   "ghcr.io/skylb/skylb:v0.1.0",
		Etcd:    "registry.k8s.io/etcd:3.6.8-0",
		Debian:  "docker.io/library/debian:12-slim",
		CoreDNS: "docker.io/coredns/coredns:1.15.0",
		Pause:   PauseRef,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadRefs() mismatch (-want +got):\n%s", diff)
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"debian", "docker.io/library/debian"},
		{"coredns/coredns", "docker.io/coredns/coredns"},
		{"registry.k8s.io/etcd", "registry.k8s.io/etcd"},
		{"localhost/x", "localhost/x"},
		{"host:5000/x", "host:5000/x"},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
