package flux

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// gitHTTPBackend is Git's CGI program for the smart HTTP protocol.
const gitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// gitServer serves bare repositories over Git's smart HTTP protocol (git
// http-backend under net/http/cgi).
type gitServer struct {
	dir string // the bare repositories, NAME.git
	url string // http://HOST:PORT
}

// serveGit starts a gitServer on a free port of host (the cluster bridge's
// host address, where the pods reach it). The test's clean-up stops it.
func serveGit(t *testing.T, host string) *gitServer {
	t.Helper()
	dir := t.TempDir()
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
	return &gitServer{dir: dir, url: "http://" + ln.Addr().String()}
}

// gitRepo is a repository the server serves, with a working copy where the
// test commits and pushes, as a user would.
type gitRepo struct {
	url  string // what a GitRepository's spec.url names
	work string // the working copy
}

// repo creates the bare repository name.git and a working copy of it in
// which from (a directory, or "" for none) has been cloned, with branch main.
func (s *gitServer) repo(ctx context.Context, t *testing.T, name, from string) *gitRepo {
	t.Helper()
	bare := filepath.Join(s.dir, name+".git")
	r := &gitRepo{url: s.url + "/" + name + ".git", work: filepath.Join(t.TempDir(), name)}
	git(ctx, t, "", "init", "-q", "--bare", "--initial-branch=main", bare)
	if from != "" {
		git(ctx, t, "", "clone", "-q", "--no-local", from, r.work)
		git(ctx, t, r.work, "checkout", "-q", "-B", "main")
	} else {
		git(ctx, t, "", "init", "-q", "--initial-branch=main", r.work)
	}
	git(ctx, t, r.work, "remote", "add", "served", bare)
	git(ctx, t, r.work, "config", "user.name", "skylb test")
	git(ctx, t, r.work, "config", "user.email", "test@skylb.invalid")
	return r
}

// commit commits every change of the working copy with message and pushes
// it; it returns the commit's hash.
func (r *gitRepo) commit(ctx context.Context, t *testing.T, message string) string {
	t.Helper()
	git(ctx, t, r.work, "add", "-A")
	git(ctx, t, r.work, "commit", "-q", "--allow-empty", "-m", message)
	return r.push(ctx, t)
}

// push pushes branch main and returns its head.
func (r *gitRepo) push(ctx context.Context, t *testing.T) string {
	t.Helper()
	git(ctx, t, r.work, "push", "-q", "served", "main")
	return git(ctx, t, r.work, "rev-parse", "HEAD")
}

// edit replaces old by new in the file rel of the working copy; old must be
// there.
func (r *gitRepo) edit(t *testing.T, rel, old, new string) {
	t.Helper()
	path := filepath.Join(r.work, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", rel, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestServeGit clones from a gitServer the commit pushed, then a commit
// made afterwards.
func TestServeGit(t *testing.T) {
	if _, err := exec.LookPath(gitHTTPBackend); err != nil {
		t.Skipf("skipped: no %s", gitHTTPBackend)
	}
	root := stack.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := serveGit(t, "127.0.0.1").repo(ctx, t, "skylb", root)
	if got, want := r.push(ctx, t), git(ctx, t, root, "rev-parse", "HEAD"); got != want {
		t.Errorf("Got head %s pushed, want %s", got, want)
	}
	r.edit(t, "README.md", "skylb", "skylb, changed")
	head := r.commit(ctx, t, "change")
	clone := filepath.Join(t.TempDir(), "clone")
	git(ctx, t, "", "clone", "-q", "--depth=1", "--branch=main", r.url, clone)
	if got := git(ctx, t, clone, "rev-parse", "HEAD"); got != head {
		t.Errorf("Got commit %s from %s, want %s", got, r.url, head)
	}
	if got := git(ctx, t, clone, "show", "-s", "--format=%s"); got != "change" {
		t.Errorf("Got commit %q, want %q", got, "change")
	}
}
