// Package stack runs the real local stack skylb works in, on 127.0.0.1 only:
//
//   - etcd for DNS records ("etcd"), with mutual TLS and the roles of
//     etcd/rbac-bootstrap.sh (users skylb, coredns, root by certificate CN);
//     with Options.EtcdMembers 3, a cluster of three members ("etcd-1",
//     "etcd-2", "etcd-3") with mutual TLS between the peers too;
//   - a second, plain-HTTP etcd ("kube-etcd") for the API server;
//   - kube-apiserver with a static admin token and RBAC authorization;
//   - kube-controller-manager with the controllers a cluster without kubelets
//     can use (Deployments, ReplicaSets, EndpointSlices, garbage collection,
//     namespaces, service accounts), and without the node-lifecycle controller,
//     which would mark every Node NotReady for want of kubelet heartbeats;
//   - CoreDNS serving the zone from the DNS etcd with coredns/Corefile;
//   - skylb itself, built from the repository, started on demand.
//
// There is no kubelet and no scheduler: Nodes are plain API objects
// (CreateNodes, SetNodeReady) and RunKubelet binds Pods and reports them
// Running and Ready.
//
// The binaries come from scripts/build-bins.sh (bin/ of the repository). Each
// process logs to <Dir>/logs/<name>.log, and the state needed to find the
// processes again is kept in <Dir>/stack.json (see Load).
package stack

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skylb/skylb/internal/dnsname"
)

// Module is the Go module path of the repository the stack runs.
const Module = "github.com/skylb/skylb"

// StateFile is the name of the file in Options.Dir that describes a running
// stack, for Load.
const StateFile = "stack.json"

// Options configures Start.
type Options struct {
	// Root is the repository root. Default: the nearest directory, from the
	// working directory upwards, whose go.mod declares module
	// github.com/skylb/skylb.
	Root string
	// Dir is the working directory for certificates, data and logs; it is
	// created if needed. Required.
	Dir string
	// Zone is the DNS zone CoreDNS serves and skylb publishes in. Default
	// "example.org".
	Zone string
	// ReverseZones are the reverse zones CoreDNS serves beside Zone, as
	// CIDRs, the Corefile's SKYLB_REVERSE_ZONE. skylb
	// publishes PTR records there when started with --reverse-zone.
	ReverseZones []string
	// Detach starts the processes in sessions of their own so that they
	// outlive the caller (the playground). Otherwise they are killed by the
	// kernel (SIGKILL) when the caller dies.
	Detach bool
	// Ports are fixed ports; a zero field means a free loopback port.
	Ports Ports
	// CacheTTL caps CoreDNS's cache, in seconds (SKYLB_DNS_CACHE_TTL for the
	// Corefile). Default 1.
	CacheTTL int
	// Log receives progress lines such as "stack: etcd ready in 0.4s"; nil
	// discards them.
	Log io.Writer

	// BinDir holds the binaries of scripts/build-bins.sh. Default <Root>/bin.
	BinDir string
	// Corefile is CoreDNS's configuration. Default <Root>/coredns/Corefile.
	Corefile string
	// SkylbBuildFlags are extra flags for "go build" of skylb, e.g. -race.
	SkylbBuildFlags []string
	// EtcdMetrics gives the DNS etcd a plain-HTTP /metrics and /health
	// listener on loopback (--listen-metrics-urls, Ports.EtcdMetrics), so that
	// its request counters can be read without a client certificate.
	EtcdMetrics bool
	// EtcdMembers is the number of members of the DNS etcd: 0 or 1 runs one
	// member named "etcd"; more run a cluster of members named "etcd-1",
	// "etcd-2", ..., each with a plain-HTTP /metrics listener, and skylb and
	// CoreDNS are given every member's client URL. The API server keeps its
	// own etcd, so that a fault of the DNS etcd leaves it running.
	EtcdMembers int
	// EtcdFlags are extra flags for every member of the DNS etcd, after those
	// of etcd/etcd.flags (later flags win), e.g. --quota-backend-bytes.
	EtcdFlags []string
	// EtcdBinary is the DNS etcd's server. Default <BinDir>/etcd, the
	// version etcd/kustomization.yaml pins; scripts/build-bins.sh also builds
	// the other supported versions as <BinDir>/etcd-VERSION.
	EtcdBinary string
}

// EtcdPorts are the loopback ports of one member of the DNS etcd after the
// first (the first uses Ports.Etcd, Ports.EtcdPeer and Ports.EtcdMetrics).
type EtcdPorts struct {
	Client  int `json:"client"`
	Peer    int `json:"peer"`
	Metrics int `json:"metrics"`
}

// EtcdMember is one member of the DNS etcd.
type EtcdMember struct {
	Name       string `json:"name"`        // member and process name: "etcd", or "etcd-1", "etcd-2", ...
	ClientURL  string `json:"client_url"`  // https://127.0.0.1:port (mutual TLS)
	PeerURL    string `json:"peer_url"`    // https://127.0.0.1:port (mutual TLS)
	MetricsURL string `json:"metrics_url"` // http://127.0.0.1:port of /metrics and /health; empty without one
}

// Ports are the loopback ports of the stack's listeners.
type Ports struct {
	Etcd              int `json:"etcd"`               // DNS etcd, client (TLS)
	EtcdPeer          int `json:"etcd_peer"`          // DNS etcd, peer (TLS)
	KubeEtcd          int `json:"kube_etcd"`          // API server's etcd, client (HTTP)
	KubeEtcdPeer      int `json:"kube_etcd_peer"`     // API server's etcd, peer (HTTP)
	APIServer         int `json:"apiserver"`          // kube-apiserver (HTTPS)
	ControllerManager int `json:"controller_manager"` // kube-controller-manager /healthz (HTTPS)
	DNS               int `json:"dns"`                // CoreDNS, UDP and TCP
	DNSHealth         int `json:"dns_health"`         // CoreDNS /health
	DNSReady          int `json:"dns_ready"`          // CoreDNS /ready
	DNSMetrics        int `json:"dns_metrics"`        // CoreDNS /metrics
	Skylb             int `json:"skylb"`              // HTTP endpoint (/healthz, /readyz, /metrics) of the skylb named "skylb"
	// EtcdMetrics is the DNS etcd's plain-HTTP /metrics listener; used only
	// with Options.EtcdMetrics or a cluster (or when set).
	EtcdMetrics int `json:"etcd_metrics,omitempty"`
	// EtcdMore are the ports of the DNS etcd's members after the first, with
	// Options.EtcdMembers above 1.
	EtcdMore []EtcdPorts `json:"etcd_more,omitempty"`
}

// Stack is a running local stack.
type Stack struct {
	Options

	Certs        string               // output directory of scripts/gen-certs.sh: ca.crt, skylb.crt/key, coredns.crt/key, root.crt/key
	EtcdURL      string               // https://127.0.0.1:port, the DNS etcd (mutual TLS, RBAC enabled); its first member in a cluster
	EtcdURLs     []string             // the client URLs of every member of the DNS etcd
	EtcdCluster  []EtcdMember         // the members of the DNS etcd, in order
	KubeEtcdURL  string               // http://127.0.0.1:port, the API server's own etcd
	APIServerURL string               // https://127.0.0.1:port
	Kubeconfig   string               // admin kubeconfig file
	DNSAddr      string               // "127.0.0.1:port" of CoreDNS (UDP and TCP)
	Kube         kubernetes.Interface // admin client
	RestConfig   *rest.Config         // admin client configuration, for other clients
	// EtcdMetricsURL is http://127.0.0.1:port of the DNS etcd's plain-HTTP
	// /metrics listener; empty without Options.EtcdMetrics.
	EtcdMetricsURL string

	mu    sync.Mutex
	procs []*Proc // in start order

	logMu sync.Mutex // serialises writes to Log

	build     sync.Mutex
	skylbPath string // built skylb binary, once built

	bgCtx    context.Context // ends with Stop: background work of the stack
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup
	stopped  bool
}

// paths of the working directory.
func (s *Stack) logDir() string    { return filepath.Join(s.Dir, "logs") }
func (s *Stack) kubeDir() string   { return filepath.Join(s.Dir, "kube") }
func (s *Stack) statePath() string { return filepath.Join(s.Dir, StateFile) }
func (s *Stack) bin(name string) string {
	return filepath.Join(s.BinDir, name)
}

// LogFile returns the log file of the named process, <Dir>/logs/<name>.log.
func (s *Stack) LogFile(name string) string { return filepath.Join(s.logDir(), name+".log") }

func (s *Stack) logf(format string, args ...any) {
	if s.Log != nil {
		s.logMu.Lock()
		defer s.logMu.Unlock()
		fmt.Fprintf(s.Log, "stack: "+format+"\n", args...)
	}
}

// FindRoot returns the repository root: the nearest directory, from the
// working directory upwards, whose go.mod declares module github.com/skylb/skylb.
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", Module)
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == Module
		}
	}
	return false
}

// withDefaults fills in the defaults and makes the paths absolute.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("stack: Options.Dir is required")
	}
	var err error
	if o.Root == "" {
		if o.Root, err = FindRoot(); err != nil {
			return o, fmt.Errorf("stack: %w", err)
		}
	}
	if o.Root, err = filepath.Abs(o.Root); err != nil {
		return o, err
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return o, err
	}
	if o.Zone == "" {
		o.Zone = "example.org"
	}
	if _, err := dnsname.ParseReverseZones(o.ReverseZones); err != nil {
		return o, fmt.Errorf("stack: reverse zones: %w", err)
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 1
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "bin")
	}
	if o.Corefile == "" {
		o.Corefile = filepath.Join(o.Root, "coredns", "Corefile")
	}
	if o.EtcdBinary == "" {
		o.EtcdBinary = filepath.Join(o.BinDir, "etcd")
	}
	return o, nil
}

// Binaries are the programs of scripts/build-bins.sh the stack runs.
var Binaries = []string{"etcd", "etcdctl", "kube-apiserver", "kube-controller-manager", "coredns"}

// MissingBinaries returns the Binaries absent from binDir (default <root>/bin).
func MissingBinaries(binDir string) []string {
	if binDir == "" {
		root, err := FindRoot()
		if err != nil {
			return Binaries
		}
		binDir = filepath.Join(root, "bin")
	}
	var missing []string
	for _, b := range Binaries {
		if fi, err := os.Stat(filepath.Join(binDir, b)); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	return missing
}

func newStack(o Options) *Stack {
	s := &Stack{Options: o}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	s.Certs = filepath.Join(o.Dir, "certs")
	s.Kubeconfig = filepath.Join(o.Dir, "admin.kubeconfig")
	return s
}

func (s *Stack) setURLs() {
	p := s.Ports
	s.EtcdURL = fmt.Sprintf("https://127.0.0.1:%d", p.Etcd)
	s.setEtcdMembers()
	s.KubeEtcdURL = fmt.Sprintf("http://127.0.0.1:%d", p.KubeEtcd)
	s.APIServerURL = fmt.Sprintf("https://127.0.0.1:%d", p.APIServer)
	s.DNSAddr = fmt.Sprintf("127.0.0.1:%d", p.DNS)
	if p.EtcdMetrics != 0 {
		s.EtcdMetricsURL = fmt.Sprintf("http://127.0.0.1:%d", p.EtcdMetrics)
	}
}

// Start starts the stack and returns once every process serves: certificates
// (scripts/gen-certs.sh), the DNS etcd and its RBAC bootstrap
// (etcd/rbac-bootstrap.sh), CoreDNS; and in parallel the API server's etcd,
// kube-apiserver and kube-controller-manager. ctx bounds the start only; the
// processes run until Stop. On failure everything started is stopped and the
// error carries the tail of the failing process's log.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	t0 := time.Now()
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	if missing := MissingBinaries(o.BinDir); len(missing) > 0 {
		return nil, fmt.Errorf("stack: missing %s in %s: run scripts/build-bins.sh", strings.Join(missing, ", "), o.BinDir)
	}
	s := newStack(o)
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	for _, d := range []string{s.Dir, s.logDir(), s.kubeDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := s.Ports.allocate(o.EtcdMetrics || o.EtcdMembers > 1, max(o.EtcdMembers, 1)); err != nil {
		return nil, err
	}
	s.setURLs()
	s.buildSkylbInBackground()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		once sync.Once
		ferr error
	)
	branch := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil {
				once.Do(func() { ferr = err; cancel() })
			}
		}()
	}
	branch(s.startDNS)
	branch(s.startKube)
	wg.Wait()
	if ferr != nil {
		return nil, ferr
	}
	if err := s.save(); err != nil {
		return nil, err
	}
	s.logf("all ready in %.1fs (DNS %s, API server %s, dir %s)", time.Since(t0).Seconds(), s.DNSAddr, s.APIServerURL, s.Dir)
	return s, nil
}

// startDNS runs the DNS half: certificates, etcd, RBAC bootstrap, CoreDNS
// and, as in CoreDNS's pod, skylb coredns-reloader beside it.
func (s *Stack) startDNS(ctx context.Context) error {
	t := time.Now()
	if err := s.runStep(ctx, "gen-certs", exec.CommandContext(ctx, "bash", filepath.Join(s.Root, "scripts", "gen-certs.sh"), s.Certs)); err != nil {
		return err
	}
	s.logf("certificates ready in %.1fs", time.Since(t).Seconds())
	if err := s.startEtcd(ctx); err != nil {
		return err
	}
	t = time.Now()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(s.Root, "etcd", "rbac-bootstrap.sh"))
	cmd.Env = append(os.Environ(),
		"SKYLB_ETCDCTL="+s.bin("etcdctl"),
		"ETCDCTL_ENDPOINTS="+strings.Join(s.EtcdURLs, ","),
		"ETCDCTL_CACERT="+filepath.Join(s.Certs, "ca.crt"),
		"ETCDCTL_CERT="+filepath.Join(s.Certs, "root.crt"),
		"ETCDCTL_KEY="+filepath.Join(s.Certs, "root.key"),
		"ETCDCTL_DIAL_TIMEOUT=3s", "ETCDCTL_COMMAND_TIMEOUT=5s",
	)
	if err := s.runStep(ctx, "rbac-bootstrap", cmd); err != nil {
		return err
	}
	s.logf("etcd RBAC bootstrap done in %.1fs", time.Since(t).Seconds())
	if err := s.startComponent(ctx, "coredns"); err != nil {
		return err
	}
	if _, err := s.BuildSkylb(ctx); err != nil {
		return err
	}
	return s.startComponent(ctx, "coredns-reloader")
}

// startKube runs the Kubernetes half: etcd, kube-apiserver, kube-controller-manager.
func (s *Stack) startKube(ctx context.Context) error {
	if err := s.startComponent(ctx, "kube-etcd"); err != nil {
		return err
	}
	if err := s.writeKubeFiles(); err != nil {
		return err
	}
	if err := s.startComponent(ctx, "kube-apiserver"); err != nil {
		return err
	}
	if err := s.kubeClient(); err != nil {
		return err
	}
	return s.startComponent(ctx, "kube-controller-manager")
}

// startComponent starts one of the stack's own processes and waits until it serves.
func (s *Stack) startComponent(ctx context.Context, name string) error {
	return s.startComponents(ctx, name)
}

// startComponents starts several of the stack's own processes at once and
// waits until each serves: the members of an etcd cluster serve only once a
// quorum of them runs.
func (s *Stack) startComponents(ctx context.Context, names ...string) error {
	t := time.Now()
	var procs []*Proc
	for _, name := range names {
		spec, err := s.component(name)
		if err != nil {
			return err
		}
		p := s.newProc(name, spec.path, spec.args, spec.env)
		p.ready = s.readiness(name)
		if err := s.launch(p); err != nil {
			return err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := waitReady(ctx, p, readyTimeout(p.Name), p.ready); err != nil {
			return err
		}
		s.logf("%s ready in %.1fs (pid %d)", p.Name, time.Since(t).Seconds(), p.PID())
	}
	return nil
}

func (s *Stack) newProc(name, path string, args, env []string) *Proc {
	p := &Proc{
		Name: name, path: path, args: args, env: env, dir: s.Dir,
		log: s.LogFile(name), detach: s.Detach,
	}
	p.started = func() { _ = s.save() }
	return p
}

// launch registers p (replacing a stopped process of the same name) and starts it.
func (s *Stack) launch(p *Proc) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return errors.New("stack: stopped")
	}
	for i, q := range s.procs {
		if q.Name == p.Name {
			if q.Running() {
				s.mu.Unlock()
				return fmt.Errorf("stack: a process named %s runs already (pid %d)", p.Name, q.PID())
			}
			s.procs = slices.Delete(s.procs, i, i+1)
			break
		}
	}
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p.start()
}

// runStep runs a short command to completion, output in <Dir>/logs/<name>.log.
func (s *Stack) runStep(ctx context.Context, name string, cmd *exec.Cmd) error {
	path := s.LogFile(name)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.Dir == "" {
		cmd.Dir = s.Dir
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("stack: %s: %w%s", name, err, Tail(path, 30))
	}
	return nil
}

// readyTimeout is how long a component may take to serve after its start.
func readyTimeout(name string) time.Duration {
	switch name {
	case "kube-apiserver":
		return 120 * time.Second
	case "kube-controller-manager":
		return 60 * time.Second
	default:
		return 30 * time.Second
	}
}

// waitReady polls ready until it succeeds, the process exits, timeout passes
// or ctx ends.
func waitReady(ctx context.Context, p *Proc, timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = ready(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if !p.Running() {
			// The log may still be flushed by the dying process.
			time.Sleep(100 * time.Millisecond)
			return fmt.Errorf("stack: %s exited before it was ready (%v)%s", p.Name, p.ExitError(), Tail(p.log, 30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stack: %s not ready after %s: %v%s", p.Name, timeout, last, Tail(p.log, 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: %s: %w (last check: %v)", p.Name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Tail returns the last n lines of a log file written by the latest run
// (after the last "==== " line Proc writes), headed by the file's name, as an
// error message suffix; "" when the file cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	text := string(b)
	if i := strings.LastIndex(text, "\n==== "); i >= 0 {
		text = text[i+1:]
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("\n----- last lines of %s -----\n%s", path, strings.Join(lines, "\n"))
}

// Proc returns the process of the given name, or nil: "etcd" (or "etcd-1",
// "etcd-2", ... in a cluster), "kube-etcd",
// "kube-apiserver", "kube-controller-manager", "coredns", "skylb", or a name
// given to StartSkylbNamed or StartProcess.
func (s *Stack) Proc(name string) *Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Procs returns every process of the stack, in start order.
func (s *Stack) Procs() []*Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.procs)
}

// StartProcess runs another program as part of the stack: it logs to
// <Dir>/logs/<name>.log, is detached like the stack's processes, is recorded
// in stack.json and is stopped by Stop (before the processes started earlier).
func (s *Stack) StartProcess(name, path string, args ...string) (*Proc, error) {
	p := s.newProc(name, path, args, nil)
	if err := s.launch(p); err != nil {
		return nil, err
	}
	return p, nil
}

// Stop stops every process of the stack, the latest started first: SIGTERM,
// then SIGKILL after 10 s. It is idempotent; failures are written to Log.
func (s *Stack) Stop() {
	if err := s.Shutdown(); err != nil {
		s.logf("stop: %v", err)
	}
}

// Shutdown is Stop returning its failures.
func (s *Stack) Shutdown() error {
	s.mu.Lock()
	s.stopped = true
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	s.bgCancel()
	s.bgWG.Wait()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if !p.Running() {
			continue
		}
		t := time.Now()
		if err := p.Stop(); err != nil {
			errs = append(errs, err)
			continue
		}
		s.logf("%s stopped in %.1fs (pid %d)", p.Name, time.Since(t).Seconds(), p.PID())
	}
	return errors.Join(errs...)
}

// kubeClient makes the admin client from the kubeconfig.
func (s *Stack) kubeClient() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return fmt.Errorf("stack: %s: %w", s.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "skylb-stack"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	s.RestConfig, s.Kube = cfg, kube
	return nil
}

// allocate picks free loopback ports for the zero fields, all distinct.
// Ports.EtcdMetrics is allocated only with etcdMetrics, Ports.EtcdMore for
// etcdMembers above 1.
func (p *Ports) allocate(etcdMetrics bool, etcdMembers int) error {
	fields := []*int{&p.Etcd, &p.EtcdPeer, &p.KubeEtcd, &p.KubeEtcdPeer, &p.APIServer,
		&p.ControllerManager, &p.DNS, &p.DNSHealth, &p.DNSReady, &p.DNSMetrics, &p.Skylb}
	if etcdMetrics || p.EtcdMetrics != 0 {
		fields = append(fields, &p.EtcdMetrics)
	}
	for len(p.EtcdMore) < etcdMembers-1 {
		p.EtcdMore = append(p.EtcdMore, EtcdPorts{})
	}
	for i := range p.EtcdMore {
		m := &p.EtcdMore[i]
		fields = append(fields, &m.Client, &m.Peer, &m.Metrics)
	}
	taken := map[int]bool{}
	for _, f := range fields {
		if *f != 0 {
			taken[*f] = true
		}
	}
	for _, f := range fields {
		if *f != 0 {
			continue
		}
		port, err := freePort(taken)
		if err != nil {
			return err
		}
		taken[port] = true
		*f = port
	}
	return nil
}

// freePort returns a loopback port that is free for TCP and UDP and not in taken.
func freePort(taken map[int]bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, uerr := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if uerr != nil {
			continue
		}
		u.Close()
		if !taken[port] {
			return port, nil
		}
	}
	return 0, errors.New("stack: no free loopback port")
}

// --- state file ----------------------------------------------------------------

// state is the content of stack.json.
type state struct {
	Root            string      `json:"root"`
	Dir             string      `json:"dir"`
	Zone            string      `json:"zone"`
	ReverseZones    []string    `json:"reverse_zones,omitempty"`
	Detach          bool        `json:"detach"`
	CacheTTL        int         `json:"cache_ttl"`
	BinDir          string      `json:"bin_dir"`
	Corefile        string      `json:"corefile"`
	SkylbBuildFlags []string    `json:"skylb_build_flags,omitempty"`
	Ports           Ports       `json:"ports"`
	Certs           string      `json:"certs"`
	EtcdURL         string      `json:"etcd_url"`
	EtcdMembers     int         `json:"etcd_members,omitempty"`
	EtcdFlags       []string    `json:"etcd_flags,omitempty"`
	KubeEtcdURL     string      `json:"kube_etcd_url"`
	APIServerURL    string      `json:"apiserver_url"`
	Kubeconfig      string      `json:"kubeconfig"`
	DNSAddr         string      `json:"dns_addr"`
	Procs           []procState `json:"procs"`
}

// save writes stack.json atomically.
func (s *Stack) save() error {
	st := state{
		Root: s.Root, Dir: s.Dir, Zone: s.Zone, ReverseZones: s.ReverseZones, Detach: s.Detach, CacheTTL: s.CacheTTL,
		BinDir: s.BinDir, Corefile: s.Corefile, SkylbBuildFlags: s.SkylbBuildFlags,
		Ports: s.Ports, Certs: s.Certs, EtcdURL: s.EtcdURL, KubeEtcdURL: s.KubeEtcdURL,
		EtcdMembers: s.Options.EtcdMembers, EtcdFlags: s.EtcdFlags,
		APIServerURL: s.APIServerURL, Kubeconfig: s.Kubeconfig, DNSAddr: s.DNSAddr,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		st.Procs = append(st.Procs, p.state())
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.statePath() + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.statePath())
}

// Load reattaches to a stack started (usually detached) in dir, from its
// stack.json: Proc's Stop, Kill, Pause, Resume, Running and Restart then act
// on the recorded pids, Stop stops all of them, and Kube is an admin client.
// Log is nil; set it to see progress.
func Load(dir string) (*Stack, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	s := newStack(Options{
		Root: st.Root, Dir: st.Dir, Zone: st.Zone, ReverseZones: st.ReverseZones, Detach: st.Detach, Ports: st.Ports,
		CacheTTL: st.CacheTTL, BinDir: st.BinDir, Corefile: st.Corefile, SkylbBuildFlags: st.SkylbBuildFlags,
		EtcdMembers: st.EtcdMembers, EtcdFlags: st.EtcdFlags,
	})
	s.Certs, s.EtcdURL, s.KubeEtcdURL, s.APIServerURL = st.Certs, st.EtcdURL, st.KubeEtcdURL, st.APIServerURL
	s.setEtcdMembers()
	s.Kubeconfig, s.DNSAddr = st.Kubeconfig, st.DNSAddr
	if st.Ports.EtcdMetrics != 0 {
		s.EtcdMetricsURL = fmt.Sprintf("http://127.0.0.1:%d", st.Ports.EtcdMetrics)
	}
	for _, ps := range st.Procs {
		p := s.newProc(ps.Name, ps.Path, ps.Args, ps.Env)
		p.dir, p.log = ps.Dir, ps.Log
		p.pid, p.startTime = ps.PID, ps.StartTime
		p.ready = s.readiness(ps.Name)
		s.procs = append(s.procs, p)
	}
	if err := s.kubeClient(); err != nil {
		return nil, err
	}
	return s, nil
}
