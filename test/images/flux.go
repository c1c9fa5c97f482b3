package images

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The Flux controllers' images, at the version of the modules whose CRDs
// test/manifests checks manifests/flux against and whose binaries
// scripts/build-bins.sh builds (test/tools/flux/NAME/go.mod).
const (
	SourceControllerRef    = "ghcr.io/fluxcd/source-controller:v1.9.6"
	KustomizeControllerRef = "ghcr.io/fluxcd/kustomize-controller:v1.9.6"
)

// sourceController is the image of Flux's source-controller, with the layout
// of upstream's (fluxcd/source-controller Dockerfile, final stage FROM
// alpine): the binary in /usr/local/bin, the CA bundle, run as 65534:65534
// with the binary as the entrypoint.
func (b *builder) sourceController(ctx context.Context) (*spec, error) {
	bin, err := b.fluxBinary("source-controller", SourceControllerRef)
	if err != nil {
		return nil, err
	}
	return &spec{
		Name: "source-controller", Refs: []string{SourceControllerRef},
		Entries: append(distrolessFiles(), file("/usr/local/bin/source-controller", bin, 0o755)),
		Config: v1.Config{
			Entrypoint: []string{"source-controller"},
			User:       "65534:65534",
			WorkingDir: "/",
			Env:        []string{defaultPath},
		},
	}, nil
}

// kustomizeController is the image of Flux's kustomize-controller, with the
// layout of upstream's (fluxcd/kustomize-controller Dockerfile, final stage
// FROM alpine): the binary in /usr/local/bin, tini as /sbin/tini (Debian's
// tini-static) running it, GNUPGHOME=/tmp, run as 65534:65534. Upstream's
// git, openssh-client and gnupg, which only SOPS decryption with PGP keys
// uses, are left out.
func (b *builder) kustomizeController(ctx context.Context) (*spec, error) {
	bin, err := b.fluxBinary("kustomize-controller", KustomizeControllerRef)
	if err != nil {
		return nil, err
	}
	debs, err := b.debs(ctx, "tini")
	if err != nil {
		return nil, err
	}
	root, err := b.unpack(ctx, "tini", debs)
	if err != nil {
		return nil, err
	}
	return &spec{
		Name: "kustomize-controller", Refs: []string{KustomizeControllerRef},
		Entries: append(distrolessFiles(),
			file("/usr/local/bin/kustomize-controller", bin, 0o755),
			file("/sbin/tini", filepath.Join(root, "usr", "bin", "tini-static"), 0o755)),
		Config: v1.Config{
			Entrypoint: []string{"/sbin/tini", "--", "kustomize-controller"},
			User:       "65534:65534",
			WorkingDir: "/",
			Env:        []string{defaultPath, "GNUPGHOME=/tmp"},
		},
	}, nil
}

// fluxBinary returns <Bin>/name after checking from its build information
// that it is the module github.com/fluxcd/name at the reference's tag.
func (b *builder) fluxBinary(name, ref string) (string, error) {
	bin := filepath.Join(b.Bin, name)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("image %s: %w (scripts/build-bins.sh %s builds it)", ref, err, name)
	}
	module, version := "github.com/fluxcd/"+name, Tag(ref)
	if info.Path != module || info.Main.Path != module || info.Main.Version != version {
		return "", fmt.Errorf("image %s: %s is %s of %s %s, want %s %s", ref, bin, info.Path, info.Main.Path, info.Main.Version, module, version)
	}
	return bin, nil
}
