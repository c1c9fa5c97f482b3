package images

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// AgnhostRef is the image upstream's e2e specs run their servers and
// clients in, at the tag k8s.io/kubernetes/test/utils/image gives it in the
// version test/tools/e2e/go.mod pins (v1.34.10: agnhost 2.56).
const AgnhostRef = "registry.k8s.io/e2e-test-images/agnhost:2.56"

// agnhostModule is the module the agnhost command is built from.
const agnhostModule = "k8s.io/kubernetes"

// agnhostRoots are the Debian packages of the commands the LoadBalancer
// specs run in agnhost's containers (kubectl exec ... /bin/sh -c): sh,
// curl, nc and wget. Upstream's image installs curl and nc from Alpine
// (bind-tools curl netcat-openbsd iproute2 iperf bash), and wget comes
// with Alpine's busybox. Their dependencies are added by apt-cache.
var agnhostRoots = []string{"dash", "bash", "coreutils", "curl", "netcat-openbsd", "wget"}

// agnhostSkip are dependencies that only the packages' maintainer scripts
// use, which never run here.
var agnhostSkip = []string{"dpkg", "debianutils", "tar", "base-files", "install-info"}

// agnhost is upstream's e2e test image (test/images/agnhost/Dockerfile):
// /agnhost as the entrypoint with "pause" as its command, the agnhost-2
// link, /uploads, the user and group the image defines, on the Debian
// packages of agnhostRoots instead of Alpine's. The binary is
// scripts/build-bins.sh's agnhost, from the k8s.io/kubernetes that
// test/tools/e2e pins.
func (b *builder) agnhost(ctx context.Context) (*spec, error) {
	bin := filepath.Join(b.Bin, "agnhost")
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w (scripts/build-bins.sh agnhost builds it)", AgnhostRef, err)
	}
	if info.Main.Path != agnhostModule && !slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == agnhostModule }) {
		return nil, fmt.Errorf("image %s: %s is not built from %s", AgnhostRef, bin, agnhostModule)
	}
	pkgs, err := b.closure(ctx, agnhostRoots, agnhostSkip)
	if err != nil {
		return nil, err
	}
	entries, err := b.packageTree(ctx, "agnhost", pkgs)
	if err != nil {
		return nil, err
	}
	// Debian's /etc/wgetrc (all comments) gives way to the one below.
	entries = slices.DeleteFunc(entries, func(e entry) bool { return e.Path == "/etc/wgetrc" })
	entries = append(entries,
		// The alternative Debian's maintainer script would set.
		symlink("/bin/nc", "/etc/alternatives/nc"),
		symlink("/etc/alternatives/nc", "/bin/nc.openbsd"),
		file("/agnhost", bin, 0o755),
		symlink("/agnhost-2", "agnhost"),
		dir("/uploads", 0o755),
		data("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"+
			"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n", 0o644),
		data("/etc/group", "root:x:0:\nnogroup:x:65534:\nuser-defined-in-image:x:1000:\n"+
			"group-defined-in-image:x:50000:user-defined-in-image\n", 0o644),
		data("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", 0o644),
		// busybox's wget tries once; GNU wget would try 20 times, and a
		// spec that expects a refusal would wait minutes for each.
		data("/etc/wgetrc", "tries = 1\n", 0o644),
		dir("/tmp", 0o777|os.ModeSticky),
		dir("/root", 0o700),
	)
	return &spec{
		Name: "agnhost", Refs: []string{AgnhostRef}, Entries: entries,
		Config: v1.Config{
			Entrypoint:   []string{"/agnhost"},
			Cmd:          []string{"pause"},
			Env:          []string{defaultPath},
			WorkingDir:   "/",
			ExposedPorts: map[string]struct{}{"80/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9376/tcp": {}, "5000/tcp": {}},
		},
	}, nil
}

// closure returns roots and the packages they depend on, recursively
// (Depends and Pre-Depends, as apt-cache lists them for the host's
// release), without the virtual packages and those of skip.
func (b *builder) closure(ctx context.Context, roots, skip []string) ([]string, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests",
		"--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"}, roots...)
	out, err := exec.CommandContext(ctx, "apt-cache", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache %s: %w", strings.Join(args, " "), err)
	}
	var pkgs []string
	for _, line := range strings.Split(string(out), "\n") {
		// Package names start a line; their dependencies are indented,
		// virtual packages in angle brackets.
		if line == "" || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "<") {
			continue
		}
		if !slices.Contains(skip, line) && !slices.Contains(pkgs, line) {
			pkgs = append(pkgs, line)
		}
	}
	slices.Sort(pkgs)
	return pkgs, nil
}
