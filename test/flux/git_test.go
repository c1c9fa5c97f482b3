package flux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// gitHTTPBackend is Git's CGI program for the smart HTTP protocol.
const gitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// serveGit serves the commit checked out at root as branch main of the
// repository skylb.git, over Git's smart HTTP protocol (git http-backend
// under net/http/cgi), on a free port of host (the cluster bridge's host
// address, where the pods reach it). It returns the repository's URL; the
// test's clean-up stops the server.
func serveGit(ctx context.Context, t *testing.T, root, host string) string {
	t.Helper()
	dir := t.TempDir()
	bare := filepath.Join(dir, "skylb.git")
	for _, args := range [][]string{
		{"init", "-q", "--bare", bare},
		{"-C", root, "push", "-q", bare, "HEAD:refs/heads/main"},
	} {
		if out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: &cgi.Handler{
			Path: gitHTTPBackend,
			Dir:  dir,
			Env:  []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"},
		},
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("git server: %v", err)
		}
	})
	return fmt.Sprintf("http://%s/skylb.git", ln.Addr())
}

// TestServeGit clones from serveGit and finds the commit checked out.
func TestServeGit(t *testing.T) {
	if _, err := exec.LookPath(gitHTTPBackend); err != nil {
		t.Skipf("skipped: no %s", gitHTTPBackend)
	}
	root := stack.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := serveGit(ctx, t, root, "127.0.0.1")
	clone := filepath.Join(t.TempDir(), "clone")
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("clone", "-q", "--depth=1", "--branch=main", repo, clone)
	if got, want := git("-C", clone, "rev-parse", "HEAD"), git("-C", root, "rev-parse", "HEAD"); got != want {
		t.Errorf("Got commit %s from %s, want %s", got, repo, want)
	}
}
