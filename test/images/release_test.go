package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/skylb/skylb/test/stack"
)

// elfMachines are the ELF machines of the architectures the test builds.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestSkylbImage runs scripts/image.sh as a user would. First for
// linux/amd64 and linux/arm64: an OCI image layout tarball, pushed to a
// registry (go-containerregistry's, in the test), and where a containerd of
// the test's own can run, imported into it and run. Then for the host's
// platform as a docker-archive tarball, under the manifests' repository. It
// reads the images back with go-containerregistry: the index's platforms,
// each image's configuration (user 65532:65532, entrypoint /skylb, the
// version and revision labels), the tag (the version of scripts/version.sh),
// and the ELF header of each /skylb, built for its platform's machine,
// static.
func TestSkylbImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root := stack.Root(t)
	dir := t.TempDir()
	version, commit := gitVersion(root)
	t.Cleanup(func() {
		if now, _ := gitVersion(root); now != version {
			t.Logf("The checkout's version changed during the test, from %s to %s: a version mismatch may come from that.", version, now)
		}
	})
	arches := []string{"amd64", "arm64"}
	if !slices.Contains(arches, runtime.GOARCH) {
		arches = append(arches, runtime.GOARCH)
	}
	platforms := make([]string, len(arches))
	for i, arch := range arches {
		platforms[i] = "linux/" + arch
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	pushed, err := name.NewTag(strings.TrimPrefix(reg.URL, "http://") + "/skylb:" + version)
	if err != nil {
		t.Fatal(err)
	}

	ctrd, noContainerd := startContainerd(t)
	ociTar := filepath.Join(dir, "skylb.tar")
	args := []string{"--out", ociTar, "--push", "--repo", pushed.Repository.Name(), "--platform", strings.Join(platforms, ",")}
	var env []string
	if ctrd != "" {
		args = append(args, "--import")
		env = append(env, "CONTAINERD_ADDRESS="+ctrd)
	}
	digest := runImageScript(ctx, t, root, env, args...)
	if !digestPattern.MatchString(digest) || !strings.HasPrefix(digest, pushed.Name()+"@") {
		t.Fatalf("Got scripts/image.sh printing %q, want %s@sha256:DIGEST", digest, pushed.Name())
	}
	idx := readLayout(t, ociTar, dir, pushed)
	if got, err := idx.Digest(); err != nil || pushed.Name()+"@"+got.String() != digest {
		t.Errorf("Got index digest %v (%v) in %s, want the printed %s", got, err, ociTar, digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var gotPlatforms, wantPlatforms []string
	for _, m := range im.Manifests {
		gotPlatforms = append(gotPlatforms, m.Platform.String())
	}
	for _, arch := range arches {
		wantPlatforms = append(wantPlatforms, Platform(arch).String())
	}
	if diff := cmp.Diff(wantPlatforms, gotPlatforms); diff != "" {
		t.Errorf("index platforms mismatch (-want +got):\n%s", diff)
	}
	for _, arch := range arches {
		t.Run("oci/"+arch, func(t *testing.T) {
			imgs, err := partial.FindImages(idx, match.Platforms(Platform(arch)))
			if err != nil || len(imgs) != 1 {
				t.Fatalf("Got %d images for %s (%v), want 1", len(imgs), Platform(arch), err)
			}
			checkSkylbImage(t, imgs[0], arch, version, commit)
		})
	}

	t.Run("registry", func(t *testing.T) {
		got, err := remote.Index(pushed, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("pull %s: %v", pushed, err)
		}
		if d, err := got.Digest(); err != nil || pushed.Name()+"@"+d.String() != digest {
			t.Errorf("Got %s@%v (%v) from the registry, want the printed %s", pushed, d, err, digest)
		}
	})

	t.Run("containerd", func(t *testing.T) {
		if ctrd == "" {
			t.Skip(noContainerd)
		}
		out := ctr(ctx, t, ctrd, "images", "ls", "-q")
		if !slices.Contains(strings.Fields(out), pushed.Name()) {
			t.Fatalf("Got images %q in containerd after --import, want %s", out, pushed.Name())
		}
		id := fmt.Sprintf("skylb-image-test-%d", os.Getpid())
		out = ctr(ctx, t, ctrd, "run", "--rm", pushed.Name(), id, "/skylb", "--version")
		if first, _, _ := strings.Cut(out, "\n"); first != "skylb "+version {
			t.Errorf("Got %q from skylb --version in the imported image, want skylb %s", first, version)
		}
	})

	t.Run("docker-archive", func(t *testing.T) {
		repo, err := SkylbRepo(root)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(repo + ":" + version)
		if err != nil {
			t.Fatal(err)
		}
		dockerTar := filepath.Join(dir, "skylb-docker.tar")
		if got := runImageScript(ctx, t, root, nil, "--format", "docker", "--platform", "linux/"+runtime.GOARCH, "--out", dockerTar); !strings.HasPrefix(got, ref.Name()+"@") {
			t.Errorf("Got scripts/image.sh printing %q, want %s@sha256:DIGEST", got, ref.Name())
		}
		img, err := tarball.ImageFromPath(dockerTar, &ref)
		if err != nil {
			t.Fatalf("read %s as %s: %v", dockerTar, ref, err)
		}
		checkSkylbImage(t, img, runtime.GOARCH, version, commit)
		// The same sources, flags and files make the same image: the
		// configuration (which names the layer by its digest) of the
		// OCI tarball's image for this platform.
		oci, err := partial.FindImages(idx, match.Platforms(Platform(runtime.GOARCH)))
		if err != nil || len(oci) != 1 {
			t.Fatalf("Got %d images for %s (%v), want 1", len(oci), Platform(runtime.GOARCH), err)
		}
		got, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		want, err := oci[0].ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Got configuration %s in the docker archive, want %s, the OCI image's: the build is not reproducible", got, want)
		}
	})
}

// gitVersion returns the version and commit scripts/version.sh stamps:
// "git describe --tags --always --dirty" and "git rev-parse HEAD", or
// "dev" and "" outside a Git checkout.
func gitVersion(root string) (version, commit string) {
	v, err := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		return "dev", ""
	}
	c, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "dev", ""
	}
	return strings.TrimSpace(string(v)), strings.TrimSpace(string(c))
}

// runImageScript runs scripts/image.sh with args and env added, and
// returns what it printed on stdout, trimmed.
func runImageScript(ctx context.Context, t *testing.T, root string, env []string, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "image.sh"), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/image.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("scripts/image.sh %s: %.1fs\n%s", strings.Join(args, " "), time.Since(start).Seconds(), stderr.String())
	return strings.TrimSpace(string(out))
}

// readLayout unpacks the OCI image layout tarball into dir/layout, checks
// that its index names ref as "ctr images import" reads it, and returns the
// image index it holds.
func readLayout(t *testing.T, tarPath, dir string, ref name.Tag) v1.ImageIndex {
	t.Helper()
	out := filepath.Join(dir, "layout")
	if err := untar(tarPath, out); err != nil {
		t.Fatal(err)
	}
	top, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatalf("read %s as an OCI image layout: %v", tarPath, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("Got %d manifests in index.json, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	want := map[string]string{"io.containerd.image.name": ref.Name(), "org.opencontainers.image.ref.name": ref.TagStr()}
	if diff := cmp.Diff(want, desc.Annotations); diff != "" {
		t.Errorf("index.json annotations mismatch (-want +got):\n%s", diff)
	}
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// untar unpacks the regular files and directories of the tar archive at
// tarPath into dir.
func untar(tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
					err = os.WriteFile(p, b, 0o644)
				}
			}
		default:
			err = fmt.Errorf("%s: unexpected type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

// imageConfig is the part of an image's configuration the test checks.
type imageConfig struct {
	OS, Architecture, Variant string
	User                      string
	Entrypoint                []string
	Labels                    map[string]string
}

// checkSkylbImage checks the image's configuration and its /skylb.
func checkSkylbImage(t *testing.T, img v1.Image, arch, version, commit string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  SkylbSource,
	}
	if commit != "" {
		labels["org.opencontainers.image.revision"] = commit
	}
	p := Platform(arch)
	want := imageConfig{OS: "linux", Architecture: arch, Variant: p.Variant, User: "65532:65532", Entrypoint: []string{"/skylb"}, Labels: labels}
	got := imageConfig{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant, User: cf.Config.User, Entrypoint: cf.Config.Entrypoint, Labels: cf.Config.Labels}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configuration mismatch (-want +got):\n%s", diff)
	}
	files, err := layerFiles(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"skylb", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "tmp/"} {
		if _, ok := files[f]; !ok {
			t.Errorf("%s not in the image", f)
		}
	}
	if h, ok := files["skylb"]; ok && h.Mode != 0o755 {
		t.Errorf("/skylb has mode %o, want 755", h.Mode)
	}
	bin, err := layerFile(img, "skylb")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/skylb: %v", err)
	}
	if f.Machine != elfMachines[arch] || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
		t.Errorf("Got /skylb %v %v %v, want %v %v %v", f.Class, f.Machine, f.Type, elf.ELFCLASS64, elfMachines[arch], elf.ET_EXEC)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("/skylb has a program interpreter: not static (CGO_ENABLED=0)")
		}
	}
}

// layerFile returns the content of the file named name in the image's
// layers.
func layerFile(img v1.Image, name string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s not in the image", name)
		}
		if err != nil {
			return nil, err
		}
		if filepath.Clean(h.Name) == name {
			return io.ReadAll(tr)
		}
	}
}

// startContainerd starts a containerd of the test's own (its own root,
// state and socket, without the CRI plugin) and returns its socket, or ""
// and why it cannot run here.
func startContainerd(t *testing.T) (addr, whyNot string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return "", "containerd needs root"
	}
	for _, bin := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Sprintf("no %s on PATH", bin)
		}
	}
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr = filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "version = 2\nroot = %q\nstate = %q\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), addr), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", config)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("containerd's log:\n%s", b)
		}
	})
	stack.Eventually(t, 30*time.Second, "containerd serves", func() (bool, string) {
		out, err := exec.Command("ctr", "-a", addr, "version").CombinedOutput()
		return err == nil, string(out)
	})
	return addr, ""
}

// ctr runs ctr on the containerd at addr in the namespace k8s.io, and
// returns its output.
func ctr(ctx context.Context, t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"-a", addr, "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// digestPattern is what scripts/image.sh prints: REPO:TAG@sha256:HEX.
var digestPattern = regexp.MustCompile(`^[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}$`)
