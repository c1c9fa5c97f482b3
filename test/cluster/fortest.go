package cluster

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skylb/skylb/test/images"
)

// UpForTest starts a cluster for the test t in o.Dir, after removing the
// cluster a previous run left there, and removes it in t's clean-up. When t
// has failed, the clean-up first logs the output of kubectl with each of
// dump (e.g. {"get", "pods", "-A"}).
func UpForTest(ctx context.Context, t testing.TB, o Options, dump ...[]string) *Cluster {
	t.Helper()
	if old, err := Load(o.Dir); err == nil {
		t.Logf("removing the cluster a previous run left in %s", o.Dir)
		if err := old.Down(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Up(ctx, o)
	if err != nil {
		t.Fatalf("start the cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, args := range dump {
				out, _ := c.Kubectl(context.Background(), args...)
				t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
			}
		}
		if err := c.Down(); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	return c
}

// RootTest skips t unless it runs as root, which a cluster of kubelets
// needs, and returns a context that ends after limit or on an interrupt (so
// that the clean-up still removes the cluster) and with t.
func RootTest(t testing.TB, limit time.Duration) context.Context {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: a cluster of kubelets needs root (network and mount namespaces, cgroups)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	t.Cleanup(stop)
	return ctx
}

// UpWithImagesForTest builds the images of the repository at root (those
// the manifests name, plus what io adds: io's Root, Bin, Cache and Log are
// set here) and starts a three-node cluster with them in
// <root>/.cluster/<name> with UpForTest, its binaries from <root>/bin.
func UpWithImagesForTest(ctx context.Context, t testing.TB, root, name string, io images.Options, dump ...[]string) *Cluster {
	t.Helper()
	io.Root, io.Bin = root, filepath.Join(root, "bin")
	io.Cache, io.Log = filepath.Join(root, ".cluster", "cache"), TestLog(t)
	imgs, err := images.Build(ctx, io)
	if err != nil {
		t.Fatalf("build the images: %v", err)
	}
	o := Options{Dir: filepath.Join(root, ".cluster", name), Bin: io.Bin, Nodes: 3, Images: images.Tarballs(imgs), Log: io.Log}
	return UpForTest(ctx, t, o, dump...)
}

// TestLog returns a writer for Options.Log (and test/images' Options.Log)
// that sends each progress line to t's log.
func TestLog(t testing.TB) io.Writer { return testLog{t} }

// testLog sends progress lines to the test's log.
type testLog struct{ t testing.TB }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// MustKubectl runs kubectl against the cluster and fails t on an error, with
// kubectl's output.
func (c *Cluster) MustKubectl(ctx context.Context, t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(ctx, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
