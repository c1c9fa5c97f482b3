package images

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/skylb/skylb/test/stack"
)

// TestBuild builds every image (into the repository's cache) and reads the
// tarballs back: references, configuration and the files the manifests
// use. The etcd image needs etcd, etcdctl and etcdutl of its tag's version
// in bin/ (or in $SKYLB_ETCD_BIN).
func TestBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := stack.Root(t)
	o := Options{Root: root, EtcdBin: os.Getenv("SKYLB_ETCD_BIN"), Log: testLog{t}}
	imgs, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := ReadRefs(root)
	if err != nil {
		t.Fatal(err)
	}
	wants := map[string]want{
		"pause":   {ref: refs.Pause, user: "65535:65535", entrypoint: []string{"/pause"}, files: []string{"pause"}},
		"skylb":   {ref: refs.Skylb, user: "65532:65532", entrypoint: []string{"/skylb"}, files: []string{"skylb", "etc/passwd", "etc/group", "etc/nsswitch.conf", "etc/ssl/certs/ca-certificates.crt", "tmp/"}},
		"etcd":    {ref: refs.Etcd, files: []string{"usr/local/bin/etcd", "usr/local/bin/etcdctl", "usr/local/bin/etcdutl", "bin/sh", "bin/cp"}},
		"debian":  {ref: refs.Debian, files: []string{"bin/bash", "usr/bin/awk", "usr/bin/mawk", "bin/sed", "bin/grep", "bin/sleep", "lib/x86_64-linux-gnu/libc.so.6"}},
		"coredns": {ref: refs.CoreDNS, user: "65532:65532", entrypoint: []string{"/coredns"}, files: []string{"coredns", "etc/ssl/certs/ca-certificates.crt"}},
	}
	checkImages(t, imgs, wants)
	again, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(imgs, again); diff != "" {
		t.Errorf("a second Build() made other tarballs (-first +second):\n%s", diff)
	}
}

// want is what an image built must hold.
type want struct {
	ref        string
	user       string
	entrypoint []string
	files      []string // paths that must be in the layer
}

// checkImages reads the tarballs of imgs back and compares each with wants,
// by image name.
func checkImages(t *testing.T, imgs []Image, wants map[string]want) {
	t.Helper()
	if len(imgs) != len(wants) {
		t.Fatalf("Build() returned %d images, want %d", len(imgs), len(wants))
	}
	for _, img := range imgs {
		t.Run(img.Name, func(t *testing.T) {
			w, ok := wants[img.Name]
			if !ok {
				t.Fatalf("unexpected image %s", img.Name)
			}
			if diff := cmp.Diff([]string{w.ref}, img.Refs); diff != "" {
				t.Errorf("Refs mismatch (-want +got):\n%s", diff)
			}
			tag, err := name.NewTag(w.ref)
			if err != nil {
				t.Fatal(err)
			}
			image, err := tarball.ImageFromPath(img.Tarball, &tag)
			if err != nil {
				t.Fatalf("read %s as %s: %v", img.Tarball, w.ref, err)
			}
			cf, err := image.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.User != w.user || !slices.Equal(cf.Config.Entrypoint, w.entrypoint) {
				t.Errorf("Got user %q, entrypoint %q; want %q, %q", cf.Config.User, cf.Config.Entrypoint, w.user, w.entrypoint)
			}
			files, err := layerFiles(image)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range w.files {
				if _, ok := files[f]; !ok {
					t.Errorf("%s not in the image", f)
				}
			}
			if h, ok := files["tmp/"]; ok && h.Mode != 0o1777 {
				t.Errorf("/tmp has mode %o, want 1777", h.Mode)
			}
		})
	}
}

// TestBuildFlux builds the images of Options.Flux too and reads the Flux
// controllers' back. It needs bin/source-controller and
// bin/kustomize-controller (scripts/build-bins.sh).
func TestBuildFlux(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := Options{Root: stack.Root(t), EtcdBin: os.Getenv("SKYLB_ETCD_BIN"), Log: testLog{t}, Flux: true}
	imgs, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var flux []Image
	for _, img := range imgs {
		if strings.HasSuffix(img.Name, "-controller") {
			flux = append(flux, img)
		}
	}
	checkImages(t, flux, map[string]want{
		"source-controller": {ref: SourceControllerRef, user: "65534:65534", entrypoint: []string{"source-controller"},
			files: []string{"usr/local/bin/source-controller", "etc/ssl/certs/ca-certificates.crt", "tmp/"}},
		"kustomize-controller": {ref: KustomizeControllerRef, user: "65534:65534", entrypoint: []string{"/sbin/tini", "--", "kustomize-controller"},
			files: []string{"usr/local/bin/kustomize-controller", "sbin/tini", "etc/ssl/certs/ca-certificates.crt", "tmp/"}},
	})
}

// TestBuildCertManager builds the image of Options.CertManager too and reads
// it back. It needs bin/cert-manager-controller (scripts/build-bins.sh).
func TestBuildCertManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := Options{Root: stack.Root(t), EtcdBin: os.Getenv("SKYLB_ETCD_BIN"), Log: testLog{t}, CertManager: true}
	imgs, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, imgs[len(imgs)-1:], map[string]want{
		"cert-manager-controller": {ref: CertManagerControllerRef, user: "1000:1000", entrypoint: []string{"/app/cmd/controller/controller"},
			files: []string{"app/cmd/controller/controller", "etc/ssl/certs/ca-certificates.crt", "tmp/"}},
	})
}

// layerFiles returns the tar headers of the image's layers, by name.
func layerFiles(img v1.Image) (map[string]*tar.Header, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := map[string]*tar.Header{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			out[filepath.Clean(h.Name)+map[bool]string{true: "/"}[h.Typeflag == tar.TypeDir]] = h
		}
		rc.Close()
	}
	return out, nil
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// TestBuildAgnhost builds the image of Options.Agnhost too and reads it
// back: agnhost and the commands upstream's network specs run in it. It
// needs bin/agnhost (scripts/build-bins.sh agnhost).
func TestBuildAgnhost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := Options{Root: stack.Root(t), EtcdBin: os.Getenv("SKYLB_ETCD_BIN"), Log: testLog{t}, Agnhost: true}
	imgs, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, imgs[len(imgs)-1:], map[string]want{
		"agnhost": {ref: AgnhostRef, entrypoint: []string{"/agnhost"},
			files: []string{"agnhost", "agnhost-2", "bin/sh", "bin/bash", "usr/bin/curl", "usr/bin/wget", "etc/wgetrc", "bin/nc", "bin/nc.openbsd", "uploads/", "tmp/"}},
	})
}
