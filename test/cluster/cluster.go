package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

// StateFile is the file in Options.Dir that records everything a running
// cluster consists of, for Load and Down.
const StateFile = "cluster.json"

// Options configures Up.
type Options struct {
	Dir    string    // state directory; created if needed. Required.
	Bin    string    // directory with etcd, kube-apiserver, kube-controller-manager, kube-node (+ symlinks), kubectl. Required.
	Nodes  int       // number of nodes; default 3, at most 9
	Images []string  // image tarballs imported into every node's containerd (ctr -n k8s.io images import)
	Log    io.Writer // progress lines with elapsed time; nil discards them
	// DNSImage is the CoreDNS image of the cluster DNS, which Images must
	// hold. Default: the image coredns/kustomization.yaml names (found from
	// the working directory upwards), the one skylb ships.
	DNSImage string
}

// Node is one node of the cluster.
type Node struct {
	Name    string       `json:"name"`     // Kubernetes node name, e.g. "node-1"
	IP      netip.Addr   `json:"ip"`       // InternalIP, on the bridge; reachable from the host
	PodCIDR netip.Prefix `json:"pod_cidr"` // the node's pod addresses (host-local IPAM)
	Netns   string       `json:"netns"`    // network namespace, /run/netns/<Netns>
	Dir     string       `json:"dir"`      // the node's directory under Options.Dir
	// MountPID is the process holding the node's mount namespace
	// (/proc/<MountPID>/ns/mnt).
	MountPID int `json:"mount_pid"`
}

// Cluster is a running cluster.
type Cluster struct {
	Dir        string
	Bin        string // Options.Bin: the binaries it runs, and kubectl
	Kubeconfig string // admin kubeconfig (system:masters)
	Nodes      []Node
	APIServer  string     // https://<bridge address>:6443
	DNSIP      netip.Addr // cluster DNS Service (kube-system/kube-dns)

	mu    sync.Mutex
	st    state
	log   io.Writer
	start time.Time
}

// state is what StateFile holds. Each resource is recorded before it is
// created, so that Down removes what a failed Up left.
type state struct {
	Bin     string   `json:"bin"`
	Nodes   []Node   `json:"nodes"`
	Procs   []proc   `json:"procs"`
	Bridge  string   `json:"bridge,omitempty"`
	Netns   []string `json:"netns,omitempty"`
	Routes  []string `json:"routes,omitempty"`  // host routes (destination prefixes)
	Cgroups []string `json:"cgroups,omitempty"` // cgroup names, one directory in every v1 hierarchy
}

// Up starts a cluster in o.Dir and returns once every node is Ready and the
// cluster DNS answers. On failure it removes what it started.
func Up(ctx context.Context, o Options) (*Cluster, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := clearStale(o.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	c := newCluster(o.Dir)
	c.Bin = o.Bin
	c.log, c.start = o.Log, time.Now()
	err = c.save()
	if err == nil {
		err = c.up(ctx, o)
	}
	if err != nil {
		c.logf("up failed, removing what was started: %v", err)
		if derr := c.Down(); derr != nil {
			return nil, fmt.Errorf("%w (and down: %v)", err, derr)
		}
		return nil, err
	}
	return c, nil
}

// withDefaults checks the options and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if os.Geteuid() != 0 {
		return o, errors.New("cluster: Up needs root (network and mount namespaces, cgroups, iptables)")
	}
	if o.Dir == "" || o.Bin == "" {
		return o, errors.New("cluster: Options.Dir and Options.Bin are required")
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 1 || o.Nodes > maxNodes {
		return o, fmt.Errorf("cluster: %d nodes, want 1 to %d", o.Nodes, maxNodes)
	}
	if o.DNSImage == "" {
		root, err := stack.FindRoot()
		if err != nil {
			return o, err
		}
		refs, err := images.ReadRefs(root)
		if err != nil {
			return o, err
		}
		o.DNSImage = refs.CoreDNS
	}
	var err error
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return o, err
	}
	o.Bin, err = filepath.Abs(o.Bin)
	return o, err
}

// clearStale removes what a cluster left in dir if none of its processes
// runs any more, and fails if some do.
func clearStale(dir string) error {
	old, err := Load(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, p := range old.st.Procs {
		if p.alive() {
			return fmt.Errorf("cluster: a cluster runs in %s (%s, pid %d): stop it first (scripts/cluster.sh down -dir %s)", dir, p.Name, p.PID, dir)
		}
	}
	return old.Down()
}

func newCluster(dir string) *Cluster {
	return &Cluster{
		Dir:        dir,
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		APIServer:  fmt.Sprintf("https://%s:%d", hostIP, apiServerPort),
		DNSIP:      dnsIP,
	}
}

// Load returns the cluster a previous Up left in dir (running, or partly
// started: Down removes it either way).
func Load(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, err
	}
	c := newCluster(dir)
	if err := json.Unmarshal(b, &c.st); err != nil {
		return nil, fmt.Errorf("cluster: parse %s: %w", StateFile, err)
	}
	c.Nodes, c.Bin = c.st.Nodes, c.st.Bin
	return c, nil
}

// save writes the state file (through a temporary file).
func (c *Cluster) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.Nodes, c.st.Bin = c.Nodes, c.Bin
	b, err := json.MarshalIndent(&c.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(c.Dir, StateFile))
}

// record applies f to the state under the lock and saves it.
func (c *Cluster) record(f func(*state)) error {
	c.mu.Lock()
	f(&c.st)
	c.mu.Unlock()
	return c.save()
}

func (c *Cluster) logf(format string, args ...any) {
	if c.log == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.log, "[%6.1fs] cluster: %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

// startProc starts a process and records it.
func (c *Cluster) startProc(name string, args ...string) (proc, error) {
	logFile := filepath.Join(c.Dir, "logs", strings.ReplaceAll(name, "/", "-")+".log")
	p, err := spawn(name, logFile, args...)
	if err != nil {
		return proc{}, err
	}
	return p, c.record(func(s *state) { s.Procs = append(s.Procs, p) })
}

// proc returns the recorded process named name.
func (c *Cluster) proc(name string) (proc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.st.Procs {
		if p.Name == name {
			return p, true
		}
	}
	return proc{}, false
}

// Env returns os.Environ() with KUBECONFIG set to the admin kubeconfig.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
}

// Kubectl runs Bin's kubectl, of the cluster's Kubernetes version, with the
// admin kubeconfig and returns its standard output; the error includes its
// standard error.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	return c.kubectlStdin(ctx, "", args...)
}

// kubectlStdin is Kubectl with stdin.
func (c *Cluster) kubectlStdin(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Apply applies the YAML documents with kubectl apply.
func (c *Cluster) Apply(ctx context.Context, yaml string) error {
	_, err := c.kubectlStdin(ctx, yaml, "apply", "-f", "-")
	return err
}

// Node returns the node named name.
func (c *Cluster) Node(name string) (Node, error) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("cluster: no node %q", name)
}

// ExecInNode runs a host binary inside the node's network and mount
// namespaces (e.g. dig, ctr, iptables) and returns its combined output.
func (c *Cluster) ExecInNode(ctx context.Context, node string, cmd ...string) (string, error) {
	n, err := c.Node(node)
	if err != nil {
		return "", err
	}
	return run(ctx, append(n.enter(), cmd...)...)
}

// ContainerPID returns the host process id of a running container of the
// node, by the container ID of a pod's status ("containerd://ID" or ID).
func (c *Cluster) ContainerPID(ctx context.Context, node, containerID string) (int, error) {
	n, err := c.Node(node)
	if err != nil {
		return 0, err
	}
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := run(ctx, append(n.enter(), "ctr", "-a", n.containerdSocket(), "-n", "k8s.io", "tasks", "ls")...)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("%s: no task for container %s", node, id)
}

// enter is the nsenter prefix that runs a command in the node.
func (n Node) enter() []string {
	return []string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", n.MountPID), "--net=/run/netns/" + n.Netns, "--"}
}

// Import imports image tarballs into the containerd of every node.
func (c *Cluster) Import(ctx context.Context, tarballs ...string) error {
	for _, n := range c.Nodes {
		if err := c.importInto(ctx, n, tarballs); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) importInto(ctx context.Context, n Node, tarballs []string) error {
	for _, t := range tarballs {
		if _, err := c.ExecInNode(ctx, n.Name, "ctr", "-a", n.containerdSocket(), "-n", "k8s.io", "images", "import", t); err != nil {
			return fmt.Errorf("import %s into %s: %w", filepath.Base(t), n.Name, err)
		}
	}
	return nil
}

// StopKubelet stops the node's kubelet only: its containers keep running,
// and the node turns NotReady after the node monitor grace period (20 s).
func (c *Cluster) StopKubelet(ctx context.Context, node string) error {
	p, ok := c.proc(node + "/kubelet")
	if !ok {
		return fmt.Errorf("cluster: no kubelet on %q", node)
	}
	return p.stop()
}

// StartKubelet starts the node's kubelet again, with the same command line.
func (c *Cluster) StartKubelet(ctx context.Context, node string) error {
	name := node + "/kubelet"
	p, ok := c.proc(name)
	if !ok {
		return fmt.Errorf("cluster: no kubelet on %q", node)
	}
	if p.alive() {
		return nil
	}
	np, err := spawn(name, p.Log, p.Args...)
	if err != nil {
		return err
	}
	return c.record(func(s *state) {
		for i := range s.Procs {
			if s.Procs[i].Name == name {
				s.Procs[i] = np
			}
		}
	})
}

// Procs returns the name and pid of every recorded process that runs.
func (c *Cluster) Procs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, p := range c.st.Procs {
		if p.alive() {
			out[p.Name] = p.PID
		}
	}
	return out
}

// daemonRSS returns the resident memory of every running process of the
// cluster, in MiB, as "name=N ..." in the processes' order.
func (c *Cluster) daemonRSS() string {
	c.mu.Lock()
	procs := slices.Clone(c.st.Procs)
	c.mu.Unlock()
	var b strings.Builder
	total := 0
	for _, p := range procs {
		if !p.alive() {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(kb), " kB"))
				total += n
				fmt.Fprintf(&b, "%s=%d ", p.Name, n/1024)
			}
		}
	}
	fmt.Fprintf(&b, "total=%d", total/1024)
	return b.String()
}
