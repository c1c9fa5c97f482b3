package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skylb/skylb/test/stack"
)

// bench is the running stack and the benchmark's clients.
type bench struct {
	o     options
	root  string
	dir   string
	st    *stack.Stack
	kube  kubernetes.Interface // high QPS, for populating the cluster
	etcd  *clientv3.Client     // as root, to read revisions and watch
	rec   *recorder            // every change under /skydns/
	skylb *stack.Proc
	ext   *extProc // external-dns, in its phase
	// dns is CoreDNS without its cache, for the latency phases.
	dns    *prober
	closed bool
	stopMu sync.Mutex
}

// skylbArgs are the flags of skylb besides those the stack sets; the defaults
// otherwise (address source auto, TTL 30, resync 5m, info logs).
var skylbArgs = []string{"--log-level=info"}

// srvPerPort is the number of SRV records skylb publishes for a named port:
// 1, or 0 when the last --srv among skylbArgs turns them off.
func srvPerPort() int {
	n := 1
	for _, a := range skylbArgs {
		switch a {
		case "--srv", "--srv=true":
			n = 1
		case "--srv=false":
			n = 0
		}
	}
	return n
}

func newBench(ctx context.Context, o options) (*bench, error) {
	root, err := stack.FindRoot()
	if err != nil {
		return nil, err
	}
	if missing := stack.MissingBinaries(""); len(missing) > 0 {
		return nil, fmt.Errorf("missing %s in bin/: run scripts/build-bins.sh", strings.Join(missing, ", "))
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "external-dns")); o.externalDNS && err != nil {
		return nil, errNoExternalDNS
	}
	dir, err := os.MkdirTemp("", "skylb-bench-")
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, root: root, dir: dir}
	// Starting the stack and building skylb (minutes on a cold build cache,
	// or on a busy machine) have their own bound; the callers' limits are
	// the measuring's.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	// Latency is measured against a CoreDNS without its cache, which would
	// hide a change for up to its TTL: coredns/Corefile minus the cache line.
	corefile, err := noCacheCorefile(filepath.Join(root, "coredns", "Corefile"), dir)
	if err != nil {
		return b, err
	}
	sctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	t := time.Now()
	// skylb is built as the Dockerfile builds it: static (the go command
	// inherits CGO_ENABLED), without gRPC's tracing, stripped.
	if err := os.Setenv("CGO_ENABLED", "0"); err != nil {
		return b, err
	}
	b.st, err = stack.Start(sctx, stack.Options{
		Root: root, Dir: filepath.Join(dir, "stack"), Zone: "example.org",
		Corefile: corefile, EtcdMetrics: true, Log: stderrLog{},
		SkylbBuildFlags: []string{"-trimpath", "-tags=grpcnotrace", "-ldflags=-s -w"},
	})
	if err != nil {
		return b, err
	}
	logf("stack up in %.1fs (dir %s)", time.Since(t).Seconds(), dir)

	cfg := rest.CopyConfig(b.st.RestConfig)
	cfg.QPS, cfg.Burst = 2000, 4000
	cfg.UserAgent = "skylb-bench"
	if b.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return b, err
	}
	if b.etcd, err = b.st.EtcdClient("root"); err != nil {
		return b, err
	}
	rev, err := b.revision(ctx)
	if err != nil {
		return b, err
	}
	b.rec = record(context.WithoutCancel(ctx), b.etcd, "/skydns/", rev+1)
	if b.dns, err = newProber(b.st.DNSAddr); err != nil {
		return b, err
	}
	if _, err := b.st.BuildSkylb(ctx); err != nil {
		return b, err
	}
	return b, nil
}

// close stops the stack and removes its directory (unless -keep). It is idempotent.
func (b *bench) close() {
	b.stopMu.Lock()
	defer b.stopMu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	if b.ext != nil {
		b.ext.stop()
	}
	if b.dns != nil {
		b.dns.Close()
	}
	if b.etcd != nil {
		b.etcd.Close()
	}
	if b.st != nil {
		t := time.Now()
		b.st.Stop()
		logf("stack stopped in %.1fs", time.Since(t).Seconds())
	}
	if b.o.keep {
		logf("logs kept in %s", b.dir)
		return
	}
	os.RemoveAll(b.dir)
}

type stderrLog struct{}

func (stderrLog) Write(p []byte) (int, error) {
	logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// noCacheCorefile writes the Corefile without its cache directive into dir.
func noCacheCorefile(src, dir string) (string, error) {
	lines, err := corefileWithout(src, "cache")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "Corefile.nocache")
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// corefileWithout returns the lines of the Corefile src without the given
// plugins' lines and their blocks of options; each must be there.
func corefileWithout(src string, plugins ...string) ([]string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	var out []string
	dropped := map[string]bool{}
	depth := 0 // inside a dropped plugin's block
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if depth > 0 {
			depth += strings.Count(t, "{") - strings.Count(t, "}")
			continue
		}
		if f := strings.Fields(t); len(f) > 0 && slices.Contains(plugins, f[0]) {
			dropped[f[0]] = true
			depth = strings.Count(t, "{") - strings.Count(t, "}")
			continue
		}
		out = append(out, line)
	}
	for _, p := range plugins {
		if !dropped[p] {
			return nil, fmt.Errorf("%s has no %s plugin to drop", src, p)
		}
	}
	return out, nil
}

// versions names what ran: skylb's commit and the pinned binaries' stamps.
func (b *bench) versions() map[string]string {
	v := map[string]string{}
	if out, err := exec.Command("git", "-C", b.root, "describe", "--always", "--dirty").Output(); err == nil {
		v["skylb"] = strings.TrimSpace(string(out))
	}
	names := []string{"etcd", "kube-apiserver", "coredns"}
	if b.o.externalDNS {
		names = append(names, "external-dns")
	}
	for _, name := range names {
		if s := binVersion(b.root, name); s != "" {
			v[name] = s
		}
	}
	return v
}

func (b *bench) revision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := b.etcd.Get(ctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// countKeys returns the number of keys under prefix.
func (b *bench) countKeys(ctx context.Context, prefix string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := b.etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// startSkylb starts skylb, with extra flags after skylbArgs, and returns
// when the process runs.
func (b *bench) startSkylb(ctx context.Context, extra ...string) error {
	p, err := b.st.StartSkylb(ctx, append(slices.Clone(skylbArgs), extra...)...)
	if err != nil {
		return err
	}
	b.skylb = p
	return nil
}

func (b *bench) skylbURL(path string) string {
	addr := b.skylb.HTTPAddr()
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr + path
}

func (b *bench) skylbMetrics(ctx context.Context) (scrape, error) {
	return fetchMetrics(ctx, b.skylbURL("/metrics"))
}

// skylbUsage reads skylb's /proc figures and its metrics.
func (b *bench) skylbUsage(ctx context.Context) (procUsage, scrape, error) {
	u, err := readProc(b.skylb.PID())
	if err != nil {
		return u, nil, err
	}
	m, err := b.skylbMetrics(ctx)
	return u, m, err
}

func (b *bench) etcdMetrics(ctx context.Context) (scrape, error) {
	if b.st.EtcdMetricsURL == "" {
		return nil, errors.New("the stack's etcd has no metrics listener")
	}
	return fetchMetrics(ctx, b.st.EtcdMetricsURL+"/metrics")
}

// waitSkylbReady polls /readyz every 10 ms and returns when it first answered 200.
func (b *bench) waitSkylbReady(ctx context.Context, limit time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	url := b.skylbURL("/readyz")
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		if !b.skylb.Running() {
			return time.Time{}, fmt.Errorf("skylb exited (%v); see %s", b.skylb.ExitError(), b.skylb.LogFile())
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("skylb not ready after %v", limit)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logWatch follows skylb's log from an offset and notes when lines appear.
type logWatch struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	lines map[string]string
	stop  chan struct{}
	done  chan struct{}
}

// watchLog polls the log file every 5 ms from offset on for lines whose msg
// contains one of the given strings.
func watchLog(path string, offset int64, msgs ...string) *logWatch {
	w := &logWatch{seen: map[string]time.Time{}, lines: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var partial []byte
		for {
			f, err := os.Open(path)
			if err == nil {
				if _, err := f.Seek(offset, 0); err == nil {
					buf := new(bytes.Buffer)
					n, _ := buf.ReadFrom(f)
					offset += n
					partial = append(partial, buf.Bytes()...)
				}
				f.Close()
			}
			now := time.Now()
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				line := string(partial[:i])
				partial = partial[i+1:]
				for _, m := range msgs {
					if strings.Contains(line, `msg="`+m) {
						w.mu.Lock()
						if _, ok := w.seen[m]; !ok {
							w.seen[m], w.lines[m] = now, line
						}
						w.mu.Unlock()
					}
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *logWatch) close() {
	close(w.stop)
	<-w.done
}

// wait returns when a line with msg appeared, and the line, waiting up to limit.
func (w *logWatch) wait(msg string, limit time.Duration) (time.Time, string, error) {
	deadline := time.Now().Add(limit)
	for {
		w.mu.Lock()
		t, ok := w.seen[msg]
		line := w.lines[msg]
		w.mu.Unlock()
		if ok {
			return t, line, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, "", fmt.Errorf("no %q in skylb's log after %v", msg, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncedMsg is what skylb logs once its caches have synced and the desired
// records of every object are computed; its took field is how long the
// computing took.
const syncedMsg = "caches synced; desired records computed"

// watchSynced follows skylb's log from its current end for syncedMsg, so
// that a start that follows can be timed.
func (b *bench) watchSynced() *logWatch {
	path := b.st.LogFile("skylb")
	return watchLog(path, fileSize(path), syncedMsg)
}

// synced waits up to limit for syncedMsg and returns when the caches synced
// and when the desired records were computed.
func (w *logWatch) synced(limit time.Duration) (cachesSynced, computed time.Time, err error) {
	at, line, err := w.wait(syncedMsg, limit)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	took, _ := time.ParseDuration(logField(line, "took"))
	return at.Add(-took), at, nil
}

// logField returns the value of key=value in a logrus text line.
func logField(line, key string) string {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(key) + `=("[^"]*"|\S+)`)
	m := re.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"`)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// microBenchmarks runs the Go micro-benchmarks of the hot paths.
func microBenchmarks(ctx context.Context, root, benchtime string) ([]microResult, error) {
	pkgs := []string{"./internal/skydns", "./internal/source", "./internal/publish", "./internal/controller"}
	args := append([]string{"test", "-run=^$", "-bench=.", "-benchmem", "-benchtime=" + benchtime}, pkgs...)
	cmd := exec.CommandContext(ctx, stack.GoTool(), args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	var res []microResult
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "pkg: ") {
			pkg = strings.TrimPrefix(strings.TrimPrefix(line, "pkg: "), stack.Module+"/")
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		m := microResult{Package: pkg, Name: strings.TrimPrefix(f[0], "Benchmark")}
		if i := strings.LastIndexByte(m.Name, '-'); i > 0 {
			m.Name = m.Name[:i]
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseFloat(f[i], 64)
			switch f[i+1] {
			case "ns/op":
				m.NsPerOp = v
			case "B/op":
				m.BPerOp = v
			case "allocs/op":
				m.AllocsOp = v
			}
		}
		res = append(res, m)
	}
	return res, nil
}
