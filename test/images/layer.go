package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file, directory or symlink of an image's single layer.
type entry struct {
	Path string      `json:"path"` // absolute path in the image
	Mode fs.FileMode `json:"mode"` // permission bits, plus fs.ModeDir or fs.ModeSymlink
	UID  int         `json:"uid,omitempty"`
	GID  int         `json:"gid,omitempty"`
	Link string      `json:"link,omitempty"` // symlink target
	Src  string      `json:"-"`              // host file with the content, or
	Data []byte      `json:"-"`              // the content itself
	Sum  string      `json:"sum,omitempty"`  // sha256 of the content, for the cache key
}

// file is a regular file copied from the host.
func file(p, src string, mode fs.FileMode) entry { return entry{Path: p, Src: src, Mode: mode} }

// data is a regular file with the given content.
func data(p, content string, mode fs.FileMode) entry {
	return entry{Path: p, Data: []byte(content), Mode: mode}
}

// dir is a directory.
func dir(p string, mode fs.FileMode) entry { return entry{Path: p, Mode: mode | fs.ModeDir} }

// symlink is a symbolic link.
func symlink(p, target string) entry {
	return entry{Path: p, Link: target, Mode: 0o777 | fs.ModeSymlink}
}

// spec describes one image: its references, its platform, the entries of its
// layer and its configuration.
type spec struct {
	Name    string    `json:"name"` // file name of the tarball, without the hash
	Refs    []string  `json:"refs"`
	Arch    string    `json:"arch,omitempty"` // GOARCH of its programs (OS linux); empty: the host's
	Entries []entry   `json:"entries"`
	Config  v1.Config `json:"config"`
}

// key returns a hash of everything that goes into the image's tarball,
// reading (and summing) the content of every entry.
func (s *spec) key() (string, error) {
	for i := range s.Entries {
		e := &s.Entries[i]
		if !e.Mode.IsRegular() {
			continue
		}
		content := e.Data
		if e.Src != "" {
			b, err := os.ReadFile(e.Src)
			if err != nil {
				return "", err
			}
			content = b
		}
		sum := sha256.Sum256(content)
		e.Sum = hex.EncodeToString(sum[:])
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// layer returns the uncompressed tar of the entries, sorted by path, with
// every missing parent directory added (0755, root).
func (s *spec) layer() ([]byte, error) {
	entries := map[string]entry{}
	for _, e := range s.Entries {
		entries[path.Clean(e.Path)] = e
		for d := path.Dir(path.Clean(e.Path)); d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = dir(d, 0o755)
			}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := entries[p]
		h := &tar.Header{
			Name: p[1:], Mode: tarMode(e.Mode), Uid: e.UID, Gid: e.GID, Format: tar.FormatPAX,
		}
		var content []byte
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case e.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		default:
			content = e.Data
			if e.Src != "" {
				b, err := os.ReadFile(e.Src)
				if err != nil {
					return nil, err
				}
				content = b
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(content))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer of %s: %s: %w", s.Name, p, err)
		}
		if _, err := tw.Write(content); err != nil {
			return nil, fmt.Errorf("layer of %s: %s: %w", s.Name, p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarMode returns the tar header mode bits of m.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	return mode
}

// image returns the image: one layer and the configuration, for linux and
// the spec's architecture, with OCI media types (which a docker-archive
// tarball does not record).
func (s *spec) image() (v1.Image, error) {
	tarLayer, err := s.layer()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarLayer)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	p := s.platform()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = s.Config
	return mutate.ConfigFile(img, cf)
}

// platform returns the image's platform: linux, the spec's architecture,
// and for arm64 the variant v8, as Docker and containerd name it.
func (s *spec) platform() v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: s.Arch}
	if p.Architecture == "" {
		p.Architecture = runtime.GOARCH
	}
	if p.Architecture == "arm64" {
		p.Variant = "v8"
	}
	return p
}

// write writes the image as a docker-archive tarball at out (through a
// temporary file, so that out is complete or absent).
func (s *spec) write(out string) error {
	img, err := s.image()
	if err != nil {
		return err
	}
	tags := map[name.Reference]v1.Image{}
	for _, ref := range s.Refs {
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.Name, err)
		}
		tags[tag] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, tags); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write image %s: %w", s.Name, err)
	}
	return os.Rename(tmp, out)
}

// tree returns the entries of the host directory root (files, directories
// and symlinks, owned by root), placed under the image path at.
func tree(root, at string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		ip := path.Join(at, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			out = append(out, dir(ip, info.Mode().Perm()))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, symlink(ip, target))
		case info.Mode().IsRegular():
			out = append(out, file(ip, p, info.Mode().Perm()))
		}
		return nil
	})
	return out, err
}
