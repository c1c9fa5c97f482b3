package images

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// etcd is the image registry.k8s.io/etcd at the tag the etcd kustomization
// pins (VERSION-N). It has the layout of upstream's image, built by
// kubernetes/kubernetes cluster/images/etcd/Dockerfile: distroless static,
// etcd, etcdctl and etcdutl in /usr/local/bin, bash-static as /bin/sh and a
// small static /bin/cp, ports 2379 2380 4001 7001 exposed, no entrypoint and
// no user (the manifests set both). The binaries must be of the tag's etcd
// version.
func (b *builder) etcd(ctx context.Context) (*spec, error) {
	version, _, _ := strings.Cut(Tag(b.refs.Etcd), "-")
	entries := distrolessFiles()
	for _, name := range []string{"etcd", "etcdctl", "etcdutl"} {
		bin := filepath.Join(b.EtcdBin, name)
		arg := "version" // etcdctl and etcdutl: a command; etcd: a flag
		if name == "etcd" {
			arg = "--version"
		}
		if err := checkVersion(ctx, bin, "ersion: "+version+"\n", arg); err != nil {
			return nil, fmt.Errorf("image %s needs %s %s: %w", b.refs.Etcd, name, version, err)
		}
		entries = append(entries, file("/usr/local/bin/"+name, bin, 0o755))
	}
	cp, err := b.staticTool(ctx, "cp")
	if err != nil {
		return nil, err
	}
	debs, err := b.debs(ctx, "bash-static")
	if err != nil {
		return nil, err
	}
	root, err := b.unpack(ctx, "bash-static", debs)
	if err != nil {
		return nil, err
	}
	entries = append(entries,
		file("/bin/sh", filepath.Join(root, "bin", "bash-static"), 0o755),
		file("/bin/cp", cp, 0o755))
	return &spec{
		Name: "etcd", Refs: []string{b.refs.Etcd}, Entries: entries,
		Config: v1.Config{
			Env:        []string{defaultPath},
			WorkingDir: "/",
			ExposedPorts: map[string]struct{}{
				"2379/tcp": {}, "2380/tcp": {}, "4001/tcp": {}, "7001/tcp": {},
			},
		},
	}, nil
}

// coredns is the image coredns/coredns at the tag the coredns kustomization
// pins, with the layout of upstream's (coredns/coredns Dockerfile):
// distroless static:nonroot with the CA bundle, /coredns as the entrypoint,
// run as nonroot, ports 53 exposed.
func (b *builder) coredns(ctx context.Context) (*spec, error) {
	version := Tag(b.refs.CoreDNS)
	bin := filepath.Join(b.Bin, "coredns")
	if err := checkVersion(ctx, bin, "CoreDNS-"+version+"\n", "-version"); err != nil {
		return nil, fmt.Errorf("image %s: %w", b.refs.CoreDNS, err)
	}
	return &spec{
		Name: "coredns", Refs: []string{b.refs.CoreDNS},
		Entries: append(distrolessFiles(), file("/coredns", bin, 0o755)),
		Config: v1.Config{
			Entrypoint:   []string{"/coredns"},
			User:         "65532:65532",
			WorkingDir:   "/",
			Env:          []string{defaultPath},
			ExposedPorts: map[string]struct{}{"53/tcp": {}, "53/udp": {}},
		},
	}, nil
}
