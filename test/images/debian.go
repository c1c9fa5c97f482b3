package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// debianPackages are the Debian packages of the debian stand-in: the
// commands etcd/rbac-bootstrap.sh runs (bash, coreutils, grep, sed, and awk
// from mawk) and the libraries they link. The packages' other dependencies
// (base-files, debianutils, dpkg, install-info) serve their maintainer
// scripts, which never run here.
var debianPackages = []string{
	"bash", "coreutils", "grep", "sed", "mawk",
	"libc6", "libgcc-s1", "libtinfo6", "libacl1", "libattr1", "libselinux1", "libgmp10", "libpcre2-8-0",
}

// debian is the stand-in for the slim Debian image the etcd RBAC Job runs
// its script in, unpacked from the packages of the release the host's apt
// sources serve (the tag must name that release). The packages' maintainer
// scripts do not run: the awk alternative is set as Debian's would set it.
func (b *builder) debian(ctx context.Context) (*spec, error) {
	if err := b.checkRelease(ctx); err != nil {
		return nil, err
	}
	entries, err := b.packageTree(ctx, "debian", debianPackages)
	if err != nil {
		return nil, err
	}
	entries = append(entries,
		symlink("/usr/bin/awk", "/etc/alternatives/awk"),
		symlink("/etc/alternatives/awk", "/usr/bin/mawk"),
		data("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", 0o644),
		data("/etc/group", "root:x:0:\nnogroup:x:65534:\n", 0o644),
		data("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", 0o644),
		dir("/tmp", 0o777|os.ModeSticky),
		dir("/root", 0o700),
	)
	return &spec{
		Name: "debian", Refs: []string{b.refs.Debian}, Entries: entries,
		Config: v1.Config{Cmd: []string{"bash"}, Env: []string{defaultPath}},
	}, nil
}

// packageTree downloads the packages (or finds them in the cache), unpacks
// them into a directory of the cache for the image name, and returns the
// entries of that tree.
func (b *builder) packageTree(ctx context.Context, name string, pkgs []string) ([]entry, error) {
	debs, err := b.debs(ctx, pkgs...)
	if err != nil {
		return nil, err
	}
	root, err := b.unpack(ctx, name, debs)
	if err != nil {
		return nil, err
	}
	return tree(root, "/")
}

// checkRelease fails unless the image's tag names the host's Debian release
// (e.g. "12-slim" on bookworm), whose apt sources the packages come from.
func (b *builder) checkRelease(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", "base-files").Output()
	if err != nil {
		return fmt.Errorf("debian image: host release: %w", err)
	}
	major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
	if tag := Tag(b.refs.Debian); !strings.HasPrefix(tag, major+"-") && tag != major {
		return fmt.Errorf("debian image %s: the packages come from Debian %s, not the tag's release", b.refs.Debian, major)
	}
	return nil
}

// debs downloads the packages into the cache (unless there already) and
// returns the .deb files, in the order of pkgs.
func (b *builder) debs(ctx context.Context, pkgs ...string) ([]string, error) {
	dir := b.cacheDir("debs")
	var missing []string
	found := map[string]string{}
	for _, p := range pkgs {
		m, _ := filepath.Glob(filepath.Join(dir, p+"_*.deb"))
		if len(m) == 0 {
			missing = append(missing, p)
			continue
		}
		found[p] = m[len(m)-1]
	}
	if len(missing) > 0 {
		b.logf("apt-get download %s", strings.Join(missing, " "))
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download", "-q"}, missing...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("apt-get download %s: %w: %s", strings.Join(missing, " "), err, out)
		}
		for _, p := range missing {
			m, _ := filepath.Glob(filepath.Join(dir, p+"_*.deb"))
			if len(m) == 0 {
				return nil, fmt.Errorf("apt-get download %s: no .deb written", p)
			}
			found[p] = m[len(m)-1]
		}
	}
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = found[p]
	}
	return out, nil
}

// unpack extracts the .deb files into a fresh directory of the cache named
// for them, and returns it.
func (b *builder) unpack(ctx context.Context, name string, debs []string) (string, error) {
	sum := sha256.Sum256([]byte(strings.Join(debs, "\n")))
	root := b.cacheDir("roots", name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.RemoveAll(root); err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	for _, deb := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
			return "", fmt.Errorf("dpkg-deb -x %s: %w: %s", deb, err, out)
		}
	}
	return root, nil
}
