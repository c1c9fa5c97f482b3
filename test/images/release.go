package images

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SkylbSource is the repository skylb's images are built from, the label
// org.opencontainers.image.source of BuildSkylb's images.
const SkylbSource = "https://github.com/skylb/skylb"

// SkylbOptions configures BuildSkylb.
type SkylbOptions struct {
	// Root is the repository root. Required.
	Root string
	// Ref is the reference the images are tagged with (repository:tag).
	// Required.
	Ref string
	// Version and Commit are the Dockerfile's build arguments VERSION and
	// COMMIT. Version is required.
	Version, Commit string
	// Arches are the architectures (GOARCH) to build for, on linux.
	// Required.
	Arches []string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// BuildSkylb builds skylb's image for linux and each of o.Arches as
// skylbFor does (the Dockerfile's go build command, cross-compiled, on the
// files of distroless static:nonroot that skylb needs), with the OCI labels
// version, revision and source, and returns their image index.
func BuildSkylb(ctx context.Context, o SkylbOptions) (v1.ImageIndex, error) {
	if o.Root == "" || o.Ref == "" || o.Version == "" || len(o.Arches) == 0 {
		return nil, fmt.Errorf("images: SkylbOptions.Root, Ref, Version and Arches are required")
	}
	tmp, err := os.MkdirTemp("", "skylb-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	b := &builder{Options: Options{Root: o.Root, Cache: tmp, Log: o.Log}, start: time.Now()}
	if err := os.MkdirAll(b.cacheDir("bin"), 0o755); err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.version": o.Version,
		"org.opencontainers.image.source":  SkylbSource,
	}
	if o.Commit != "" {
		labels["org.opencontainers.image.revision"] = o.Commit
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range o.Arches {
		s, err := b.skylbFor(ctx, o.Ref, o.Version, o.Commit, arch, labels)
		if err != nil {
			return nil, fmt.Errorf("skylb for linux/%s: %w", arch, err)
		}
		img, err := s.image()
		if err != nil {
			return nil, fmt.Errorf("skylb for linux/%s: %w", arch, err)
		}
		p := s.platform()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		b.logf("%s: built for %s", o.Ref, p)
	}
	return idx, nil
}

// Platform returns the platform of BuildSkylb's image for arch, as Docker
// and containerd name it: linux/arch, and the variant v8 for arm64.
func Platform(arch string) v1.Platform {
	return (&spec{Arch: arch}).platform()
}

// SkylbRepo returns the repository manifests/kustomization.yaml names
// skylb's image by (ghcr.io/skylb/skylb), without its tag.
func SkylbRepo(root string) (string, error) {
	ref, err := kustomizedRef(filepath.Join(root, "manifests", "kustomization.yaml"), "ghcr.io/skylb/skylb")
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(ref, ":"+Tag(ref)), nil
}

// WriteLayout writes the index as an OCI image layout tarball at out
// (through a temporary file, so that out is complete or absent). The
// layout's index names it ref twice: org.opencontainers.image.ref.name (the
// tag, as the OCI specification has it) and io.containerd.image.name (the
// whole reference, which "ctr images import" names the image by).
func WriteLayout(out string, idx v1.ImageIndex, ref name.Tag) error {
	dir, err := os.MkdirTemp("", "skylb-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return fmt.Errorf("write layout: %w", err)
	}
	tmp := out + ".tmp"
	if err := tarDir(tmp, dir); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}

// tarDir writes the files and directories of dir into a tar archive at out,
// in lexical order, owned by root, with modes 0644 and 0755 and no
// modification time, so that the same files make the same archive.
func tarDir(out, dir string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Size = info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(tw, in)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// WriteDockerArchive writes the index's image for linux/arch as a
// docker-archive tarball (the format of "docker save" and "docker load") at
// out, tagged ref.
func WriteDockerArchive(out string, idx v1.ImageIndex, arch string, ref name.Tag) error {
	p := Platform(arch)
	imgs, err := partial.FindImages(idx, match.Platforms(p))
	if err != nil {
		return err
	}
	if len(imgs) != 1 {
		return fmt.Errorf("docker archive: %d images for %s, want 1", len(imgs), p)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, imgs[0]); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}
