package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestPrintVersion(t *testing.T) {
	stamped, stampedCommit := version, commit
	t.Cleanup(func() { version, commit = stamped, stampedCommit })
	goLine := "go: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"

	version, commit = "v1.2.3-4-gabcdef0-dirty", "abcdef0123456789"
	var out strings.Builder
	printVersion(&out)
	if want := "skylb v1.2.3-4-gabcdef0-dirty\ncommit: abcdef0123456789\n" + goLine; out.String() != want {
		t.Errorf("printVersion() stamped = %q, want %q", out.String(), want)
	}

	// Unstamped, as "go build" or "go test" leave it.
	version, commit = "", ""
	v := currentVersion()
	if v.Version != "dev" || v.Commit == "" || v.Go != runtime.Version() {
		t.Errorf("currentVersion() unstamped = %+v, want version dev, a commit or unknown, and %s", v, runtime.Version())
	}
}

// TestBinary builds skylb as the build scripts do, its version stamped by
// scripts/version.sh from the checkout, and runs it as a user would.
func TestBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		if err != nil {
			t.Fatalf("git %q: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	stamp := exec.CommandContext(ctx, "scripts/version.sh")
	stamp.Dir = repoRoot
	ldflags, err := stamp.Output()
	if err != nil {
		t.Fatalf("scripts/version.sh: %v", err)
	}
	wantVersion, wantCommit := git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "skylb")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "-ldflags="+strings.TrimSpace(string(ldflags)), ".")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var base []string // the test's environment without skylb's settings
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			base = append(base, kv)
		}
	}
	skylb := func(env []string, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(base, env...)
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("skylb %q: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errs.String()
	}

	t.Run("version stamped by scripts/version.sh", func(t *testing.T) {
		for _, args := range [][]string{{"version"}, {"--version"}} {
			code, out, _ := skylb(nil, args...)
			want := "skylb " + wantVersion + "\ncommit: " + wantCommit + "\ngo: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
			if code != 0 || out != want {
				t.Errorf("skylb %q = %d, %q; want 0, %q", args, code, out, want)
			}
		}
	})
	t.Run("settings from the environment", func(t *testing.T) {
		code, out, stderr := skylb([]string{"SKYLB_ZONE=k8s.example.com", "SKYLB_NAMESERVER=192.0.2.11,192.0.2.12"}, "delegation")
		for _, want := range []string{"ns1.ns.dns.k8s.example.com.\tIN\tA\t192.0.2.11\n", "ns2.ns.dns.k8s.example.com.\tIN\tA\t192.0.2.12\n"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("skylb delegation = %d, lacks %q:\n%s%s", code, want, out, stderr)
			}
		}
	})
	t.Run("the command line wins over the environment", func(t *testing.T) {
		code, out, stderr := skylb([]string{"SKYLB_ZONE=env.example.com", "SKYLB_NAMESERVER=192.0.2.11,192.0.2.12"}, "delegation", "--zone=cli.example.com")
		if code != 0 || !strings.Contains(out, "; Delegation of cli.example.com:") || strings.Contains(out, "env.example.com") {
			t.Errorf("skylb delegation --zone=cli.example.com with SKYLB_ZONE=env.example.com = %d:\n%s%s", code, out, stderr)
		}
	})
	t.Run("a value refused names its variable", func(t *testing.T) {
		code, _, stderr := skylb([]string{"SKYLB_TTL=0"}, "--zone=example.org")
		if want := "skylb: --ttl: 0 is outside 1 to 86400 seconds (from SKYLB_TTL)\n"; code != 2 || stderr != want {
			t.Errorf("skylb with SKYLB_TTL=0 = %d, %q; want 2, %q", code, stderr, want)
		}
		code, _, stderr = skylb([]string{"SKYLB_RESYNC_INTERVAL=often"}, "--zone=example.org")
		if code != 2 || !strings.HasPrefix(stderr, `skylb: --resync-interval: "often" is not a duration such as 30s, 2m or 1h (from SKYLB_RESYNC_INTERVAL)`) {
			t.Errorf("skylb with SKYLB_RESYNC_INTERVAL=often = %d, %q; want 2 and an error naming the variable", code, stderr)
		}
	})
}
