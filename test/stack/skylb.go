package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SkylbBinary returns the path skylb is built to, <Dir>/bin/skylb.
func (s *Stack) SkylbBinary() string { return filepath.Join(s.Dir, "bin", "skylb") }

// buildSkylbInBackground starts building skylb while the stack starts, so that
// StartSkylb usually finds it built.
func (s *Stack) buildSkylbInBackground() {
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		_, _ = s.BuildSkylb(s.bgCtx)
	}()
}

// BuildSkylb builds skylb from the repository root once per Stack
// (go build -o <Dir>/bin/skylb <Root>, with Options.SkylbBuildFlags) and
// returns the binary's path. A failed build is tried again on the next call.
func (s *Stack) BuildSkylb(ctx context.Context) (string, error) {
	s.build.Lock()
	defer s.build.Unlock()
	if s.skylbPath != "" {
		return s.skylbPath, nil
	}
	t := time.Now()
	out := s.SkylbBinary()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	args := append([]string{"build", "-o", out}, s.SkylbBuildFlags...)
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, GoTool(), args...)
	cmd.Dir = s.Root
	if err := s.runStep(ctx, "build-skylb", cmd); err != nil {
		return "", err
	}
	s.skylbPath = out
	s.logf("skylb built in %.1fs", time.Since(t).Seconds())
	return out, nil
}

// GoTool returns the go command: from PATH, else the usual install location.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// StartSkylb starts skylb as process "skylb"; see StartSkylbNamed.
func (s *Stack) StartSkylb(ctx context.Context, args ...string) (*Proc, error) {
	return s.StartSkylbNamed(ctx, "skylb", args...)
}

// StartSkylbNamed builds skylb (once) and runs it as the named process (use
// distinct names for several replicas), logging to <Dir>/logs/<name>.log. It
// passes --http-address (127.0.0.1 and Ports.Skylb for "skylb", a free port
// for other names), --kubeconfig (admin), --zone, --etcd-endpoints (every
// member) and the
// skylb client certificate (--etcd-ca-file, --etcd-cert-file,
// --etcd-key-file), each only when args do not set that flag themselves, then
// args. It returns once the process runs and has not failed at once (flag
// errors); WaitSkylbReady waits for its /readyz.
func (s *Stack) StartSkylbNamed(ctx context.Context, name string, args ...string) (*Proc, error) {
	bin, err := s.BuildSkylb(ctx)
	if err != nil {
		return nil, err
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", s.Ports.Skylb)
	if name != "skylb" || s.Ports.Skylb == 0 {
		port, err := freePort(nil)
		if err != nil {
			return nil, err
		}
		httpAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	defaults := [][2]string{
		{"http-address", httpAddr},
		{"kubeconfig", s.Kubeconfig},
		{"zone", s.Zone},
		{"etcd-endpoints", strings.Join(s.EtcdURLs, ",")},
		{"etcd-ca-file", filepath.Join(s.Certs, "ca.crt")},
		{"etcd-cert-file", filepath.Join(s.Certs, "skylb.crt")},
		{"etcd-key-file", filepath.Join(s.Certs, "skylb.key")},
	}
	var full []string
	for _, d := range defaults {
		if !hasFlag(args, d[0]) {
			full = append(full, "--"+d[0]+"="+d[1])
		}
	}
	full = append(full, args...)
	p := s.newProc(name, bin, full, nil)
	if err := s.launch(p); err != nil {
		return nil, err
	}
	// A flag or configuration error ends skylb at once.
	select {
	case <-p.Exited():
		time.Sleep(50 * time.Millisecond)
		return p, fmt.Errorf("stack: %s exited at once (%v)%s", name, p.ExitError(), Tail(p.log, 30))
	case <-time.After(250 * time.Millisecond):
	case <-ctx.Done():
	}
	return p, nil
}

// hasFlag reports whether args set the long flag name ("--name value" or "--name=value").
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// HTTPAddr returns the address a skylb process serves /healthz, /readyz and
// /metrics on: the last --http-address of its arguments ("" if none).
func (p *Proc) HTTPAddr() string {
	addr := ""
	for i, a := range p.args {
		switch {
		case a == "--":
			return addr
		case a == "--http-address" && i+1 < len(p.args):
			addr = p.args[i+1]
		case strings.HasPrefix(a, "--http-address="):
			addr = strings.TrimPrefix(a, "--http-address=")
		}
	}
	return addr
}

// WaitSkylbReady waits until the skylb process p answers 200 on /readyz, and
// fails early when p exits (with the tail of its log).
func (s *Stack) WaitSkylbReady(ctx context.Context, p *Proc) error {
	addr := p.HTTPAddr()
	if addr == "" {
		return fmt.Errorf("stack: %s has no --http-address", p.Name)
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	url := "http://" + addr + "/readyz"
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := httpGet(cctx, http.DefaultClient, url, "")
		cancel()
		if err == nil {
			return nil
		}
		if !p.Running() {
			time.Sleep(50 * time.Millisecond)
			return fmt.Errorf("stack: %s exited before it was ready (%v)%s", p.Name, p.ExitError(), Tail(p.log, 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: %s not ready: %w (last: %v)", p.Name, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
