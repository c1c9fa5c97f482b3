package manifests

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startProcess runs path with args and env added to the test's environment; it
// is stopped when the test ends.
func startProcess(t *testing.T, name string, env map[string]string, path string, args ...string) *process {
	t.Helper()
	p := &process{name: name, logPath: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *process) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// tail returns the last lines of the log, as an error message suffix.
func (p *process) tail() string {
	lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return fmt.Sprintf("\n----- last lines of %s's log -----\n%s", p.name, strings.Join(lines, "\n"))
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitHTTP waits until url answers 200, failing early when the process exits.
func (p *process) waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%v)%s", p.name, p.err, p.tail())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready at %s after %v%s", p.name, url, timeout, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, p *process, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if p.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("waiting for %s: gave up%s", what, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
