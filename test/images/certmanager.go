package images

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// CertManagerControllerRef is the image of cert-manager's controller, at the
// version of the module github.com/cert-manager/cert-manager that
// scripts/build-bins.sh builds it from (test/tools/cert-manager/go.mod).
const CertManagerControllerRef = "quay.io/jetstack/cert-manager-controller:v1.21.2"

// certManagerModule is the module the controller's binary is built from.
const certManagerModule = "github.com/cert-manager/cert-manager"

// certManagerController is the image of cert-manager's controller, with the
// layout of upstream's (distroless static, non-root): the binary in
// /app/cmd/controller/controller as its entrypoint, the CA bundle, run as
// 1000:1000 as upstream's image does (USER 1000).
func (b *builder) certManagerController(ctx context.Context) (*spec, error) {
	bin := filepath.Join(b.Bin, "cert-manager-controller")
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w (scripts/build-bins.sh cert-manager-controller builds it)", CertManagerControllerRef, err)
	}
	version := ""
	for _, d := range info.Deps {
		if d.Path == certManagerModule {
			version = d.Version
		}
	}
	if want := Tag(CertManagerControllerRef); version != want {
		return nil, fmt.Errorf("image %s: %s is built from %s %q, want %s", CertManagerControllerRef, bin, certManagerModule, version, want)
	}
	return &spec{
		Name: "cert-manager-controller", Refs: []string{CertManagerControllerRef},
		Entries: append(distrolessFiles(), file("/app/cmd/controller/controller", bin, 0o755)),
		Config: v1.Config{
			Entrypoint: []string{"/app/cmd/controller/controller"},
			User:       "1000:1000",
			WorkingDir: "/",
			Env:        []string{defaultPath},
		},
	}, nil
}
