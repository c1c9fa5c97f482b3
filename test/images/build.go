package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Options configures Build.
type Options struct {
	// Root is the repository root. Required.
	Root string
	// Bin holds coredns (and etcd, etcdctl, etcdutl unless EtcdBin is set).
	// Default <Root>/bin.
	Bin string
	// EtcdBin holds etcd, etcdctl and etcdutl of the version the etcd
	// kustomization pins. Default Bin.
	EtcdBin string
	// Cache keeps built binaries, downloaded Debian packages and the image
	// tarballs. Default <Root>/.cluster/cache.
	Cache string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Flux adds the images of Flux's source-controller and
	// kustomize-controller (SourceControllerRef, KustomizeControllerRef),
	// from source-controller and kustomize-controller in Bin.
	Flux bool
	// CertManager adds the image of cert-manager's controller
	// (CertManagerControllerRef), from cert-manager-controller in Bin.
	CertManager bool
	// Agnhost adds upstream's e2e test image (AgnhostRef), from agnhost in
	// Bin, for the Kubernetes e2e specs of test/conformance.
	Agnhost bool
}

// Image is one built image.
type Image struct {
	Name    string   // short name: skylb, etcd, debian, coredns, pause, source-controller, kustomize-controller, cert-manager-controller, agnhost
	Refs    []string // the references it is tagged with
	Tarball string   // docker-archive tarball
}

// Tarballs returns the tarball of every image.
func Tarballs(imgs []Image) []string {
	out := make([]string, len(imgs))
	for i, img := range imgs {
		out[i] = img.Tarball
	}
	return out
}

// builder holds what the image specs of one Build share.
type builder struct {
	Options
	refs  Refs
	start time.Time
}

// Build builds (or finds in the cache) every image the manifests run, plus
// the pause image (and Flux's controllers with Options.Flux, cert-manager's
// with Options.CertManager), and returns them.
func Build(ctx context.Context, o Options) ([]Image, error) {
	if o.Root == "" {
		return nil, fmt.Errorf("images: Options.Root is required")
	}
	if o.Bin == "" {
		o.Bin = filepath.Join(o.Root, "bin")
	}
	if o.EtcdBin == "" {
		o.EtcdBin = o.Bin
	}
	if o.Cache == "" {
		o.Cache = filepath.Join(o.Root, ".cluster", "cache")
	}
	refs, err := ReadRefs(o.Root)
	if err != nil {
		return nil, err
	}
	b := &builder{Options: o, refs: refs, start: time.Now()}
	for _, d := range []string{b.cacheDir("bin"), b.cacheDir("images"), b.cacheDir("debs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	makers := []func(context.Context) (*spec, error){b.pause, b.skylb, b.etcd, b.debian, b.coredns}
	if o.Flux {
		makers = append(makers, b.sourceController, b.kustomizeController)
	}
	if o.CertManager {
		makers = append(makers, b.certManagerController)
	}
	if o.Agnhost {
		makers = append(makers, b.agnhost)
	}
	var out []Image
	for _, mk := range makers {
		s, err := mk(ctx)
		if err != nil {
			return nil, err
		}
		img, err := b.writeCached(s)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

func (b *builder) cacheDir(elem ...string) string {
	return filepath.Join(append([]string{b.Cache}, elem...)...)
}

func (b *builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, "[%6.1fs] images: %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
	}
}

// writeCached writes the image's tarball unless the cache has it already.
func (b *builder) writeCached(s *spec) (Image, error) {
	key, err := s.key()
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", s.Name, err)
	}
	img := Image{Name: s.Name, Refs: s.Refs, Tarball: b.cacheDir("images", s.Name+"-"+key+".tar")}
	if _, err := os.Stat(img.Tarball); err == nil {
		b.logf("%s: cached (%s)", strings.Join(s.Refs, ", "), filepath.Base(img.Tarball))
		return img, nil
	}
	if err := s.write(img.Tarball); err != nil {
		return Image{}, err
	}
	b.logf("%s: built (%s)", strings.Join(s.Refs, ", "), filepath.Base(img.Tarball))
	return img, nil
}

// goBuild builds the main package pkg of the repository into the cache as a
// static binary named out, with the given environment and flags, and returns
// its path.
func (b *builder) goBuild(ctx context.Context, pkg, out string, env []string, flags ...string) (string, error) {
	bin := b.cacheDir("bin", out)
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	// The go command of PATH: go test puts its own first there, and the
	// scripts that run this package's commands (cluster.sh, image.sh) add
	// Go's usual install location. Not test/stack's GoTool: a command of
	// this package (cmd/skylb-image) would then compile all of the test
	// stack's dependencies.
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.Root
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// staticTool builds one of this package's commands (cmd/NAME) static.
func (b *builder) staticTool(ctx context.Context, name string) (string, error) {
	return b.goBuild(ctx, "./test/images/cmd/"+name, name, []string{"CGO_ENABLED=0"},
		"-trimpath", "-ldflags=-s -w")
}

// pause is the sandbox image.
func (b *builder) pause(ctx context.Context) (*spec, error) {
	bin, err := b.staticTool(ctx, "pause")
	if err != nil {
		return nil, err
	}
	return &spec{
		Name: "pause", Refs: []string{b.refs.Pause},
		Entries: []entry{file("/pause", bin, 0o755)},
		Config:  v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535", WorkingDir: "/"},
	}, nil
}

// distrolessFiles are the files of distroless static:nonroot that the
// images' programs use: users root, nobody and nonroot (65532), a /tmp,
// nonroot's home, the host's CA bundle and an nsswitch.conf that resolves
// names through files, then DNS.
func distrolessFiles() []entry {
	return []entry{
		data("/etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"+
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n", 0o644),
		data("/etc/group", "root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n", 0o644),
		data("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", 0o644),
		file("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt", 0o644),
		dir("/tmp", 0o777|fs.ModeSticky),
		{Path: "/home/nonroot", Mode: 0o700 | fs.ModeDir, UID: 65532, GID: 65532},
		dir("/root", 0o700),
	}
}

// defaultPath is the PATH of the images' configurations.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// checkVersion runs "bin args..." and fails unless its output contains want.
func checkVersion(ctx context.Context, bin, want string, args ...string) error {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, out)
	}
	if !bytes.Contains(out, []byte(want)) {
		first, _, _ := strings.Cut(string(out), "\n")
		return fmt.Errorf("%s reports %q, want version %s", bin, first, want)
	}
	return nil
}
