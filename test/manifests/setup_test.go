package manifests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skylb/skylb/test/stack"
)

type logWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (l *logWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

// startStack starts the stack in the background; the returned function waits
// for it. The stack is stopped when the test ends.
func startStack(ctx context.Context, t *testing.T, root string) func() (*stack.Stack, error) {
	dir := t.TempDir()
	lw := &logWriter{t: t}
	var (
		s    *stack.Stack
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		s, err = stack.Start(ctx, stack.Options{Root: root, Dir: dir, Log: lw})
		if err == nil {
			// The RBAC checks ask about the Gateway API's resources and
			// DNSEndpoints by name.
			err = s.InstallGatewayAPI(ctx)
		}
		if err == nil {
			err = s.InstallCRDs(ctx, "manifests/dnsendpoint/crd.yaml", schema.GroupVersion{Group: "externaldns.k8s.io", Version: "v1alpha1"}, "dnsendpoints")
		}
	}()
	t.Cleanup(func() {
		<-done
		if s != nil {
			s.Stop()
		}
		lw.mu.Lock()
		lw.done = true
		lw.mu.Unlock()
	})
	return func() (*stack.Stack, error) { <-done; return s, err }
}

// fetchCRDs downloads the modules of crdSources in the background (from the
// module cache when they are there) and returns a function that waits for the
// CRD file paths.
func fetchCRDs(ctx context.Context, t *testing.T) func() ([]string, error) {
	var (
		files []string
		err   error
		done  = make(chan struct{})
	)
	tmp := t.TempDir()
	go func() {
		defer close(done)
		args := []string{"mod", "download", "-json"}
		for _, c := range crdSources {
			args = append(args, c.module+"@"+c.version)
		}
		cctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, stack.GoTool(), args...)
		cmd.Dir = tmp // outside any module: go.mod and go.sum stay untouched
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, runErr := cmd.Output()
		dirs := map[string]string{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var m struct{ Path, Version, Dir, Error string }
			if e := dec.Decode(&m); e != nil {
				break
			}
			if m.Error != "" {
				err = fmt.Errorf("%s@%s: %s", m.Path, m.Version, m.Error)
				return
			}
			dirs[m.Path] = m.Dir
		}
		for _, c := range crdSources {
			if dirs[c.module] == "" {
				err = fmt.Errorf("go mod download: %v %s", runErr, strings.TrimSpace(stderr.String()))
				return
			}
			for _, f := range c.files {
				files = append(files, filepath.Join(dirs[c.module], f))
			}
		}
	}()
	return func() ([]string, error) { <-done; return files, err }
}

// kubectlPath is the kubectl of the Kubernetes version the stack runs:
// <root>/bin/kubectl, which scripts/build-bins.sh builds.
func kubectlPath(root string) string { return filepath.Join(root, "bin", "kubectl") }

// kubectl runs kubectlPath's kubectl against the stack's API server.
type kubectl struct{ path, kubeconfig string }

// run runs kubectl with stdin and returns stdout and stderr.
func (k kubectl) run(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	args = append([]string{"--kubeconfig=" + k.kubeconfig, "--request-timeout=30s"}, args...)
	cmd := exec.CommandContext(ctx, k.path, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args[2:], " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

func installCRDs(ctx context.Context, t *testing.T, k kubectl, files []string) {
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Server-side: the CRDs are too large for client-side apply's annotation.
		if _, _, err := k.run(ctx, b, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		for _, o := range decode(t, b) {
			names = append(names, "crd/"+o.GetName())
		}
	}
	args := append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, names...)
	if _, _, err := k.run(ctx, nil, args...); err != nil {
		t.Fatal(err)
	}
	t.Logf("installed %d upstream CRDs", len(names))
}
