// Package deploy proves the deployment the way users run it: on a real
// three-node Kubernetes cluster (test/cluster: kubelets with containerd and
// runc, the CNI bridge and kube-proxy, in network namespaces of their own),
// with the images the manifests name (test/images), it runs the commands of
// "Deploy to a cluster" in manifests/README.md as written, then changes the
// cluster under skylb and measures how the answers follow.
package deploy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/monitoring"
	"github.com/skylb/skylb/test/stack"
)

const (
	zone    = "example.org"
	webName = "web.default." + zone
	// nodePort is CoreDNS's NodePort (coredns/deploy/service.yaml).
	nodePort = 30053
)

// env is what a test of the deployment shares: the cluster, a client, and
// the copy of the repository the deployment page's commands run in.
type env struct {
	t       *testing.T
	c       *cluster.Cluster
	kube    kubernetes.Interface
	work    string
	bin     string
	outputs map[string]string // deployment page command -> its output
	bg      []*exec.Cmd
}

func TestDeploy(t *testing.T) {
	ctx := cluster.RootTest(t, 25*time.Minute)
	root := stack.Root(t)
	bin := filepath.Join(root, "bin")

	t0 := time.Now()
	c := upCluster(ctx, t, root)
	t.Logf("measure: cluster of %d nodes up in %v", len(c.Nodes), time.Since(t0).Round(time.Second))

	e := &env{t: t, c: c, work: copyRepo(t, root), bin: bin, outputs: map[string]string{}}
	t.Cleanup(e.stopBackground)
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}

	applied := e.followReadme(ctx, root)
	want := e.webNodes(ctx, "app=web")
	e.waitAnswer(ctx, 2*time.Minute, webName, want)
	t.Logf("measure: first kubectl apply -> %s answers %v: %v (the deployment page's steps, as fast as they run)", webName, want, time.Since(applied).Round(time.Second))

	t.Run("EXTERNAL-IP", func(t *testing.T) {
		// Every node's address, kube-proxy serving the Service at each;
		// the answer above is those that run its pods.
		if got, all := e.externalIPs(ctx, "web"), e.readyNodes(ctx); !slices.Equal(got, all) {
			t.Errorf("Got EXTERNAL-IP %v, want every Ready node's %v", got, all)
		}
	})
	t.Run("EXTERNAL-IP without pods", e.externalIPWithoutPods)
	t.Run("etcdctl as the deployment page shows", func(t *testing.T) {
		var out string
		for cmd, o := range e.outputs {
			if strings.HasPrefix(cmd, "etcdctl ") && strings.Contains(cmd, "get --prefix /skydns/") {
				out = o
			}
		}
		if !strings.Contains(out, "/skydns/org/example/default/web/") {
			t.Errorf("the deployment page's etcdctl get --prefix /skydns/ printed no record of web:\n%s", out)
		}
	})

	t.Run("metrics the alerts and the dashboard use", e.metrics)

	// Each case leaves the cluster as it found it.
	t.Run("scale", e.scale)
	t.Run("drain a node", e.drain)
	t.Run("kubelet stopped", e.kubeletStopped)
	t.Run("skylb leader deleted", e.skylbLeaderDeleted)
	t.Run("etcd leader deleted", e.etcdLeaderDeleted)
	t.Run("etcd scaled to zero", e.etcdScaledToZero)
	t.Run("two zones", e.twoZones)
	t.Run("CoreDNS on host port 53", e.hostNetwork)
	t.Run("memory", e.memory)
	t.Run("a zone's view", e.zoneView)
}

// copyRepo copies the files git tracks to a new directory: the deployment
// page's commands write certificates beside the manifests, as they would in
// a user's checkout.
func copyRepo(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		fi, err := os.Stat(src)
		if err != nil {
			continue // deleted in the work tree
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// followReadme runs every command of the deployment page's steps, in
// order, and returns when the first "kubectl apply" started.
func (e *env) followReadme(ctx context.Context, root string) time.Time {
	t := e.t
	steps, err := readmeSteps(root)
	if err != nil {
		t.Fatal(err)
	}
	var applied time.Time
	afterBackground := false
	for _, s := range steps {
		t0 := time.Now()
		for _, cmd := range s.Commands {
			cmd = strings.ReplaceAll(cmd, "NODE_ADDRESS", e.c.Nodes[0].IP.String())
			if applied.IsZero() && strings.HasPrefix(cmd, "kubectl apply") {
				applied = time.Now()
			}
			if strings.HasSuffix(cmd, "&") {
				e.background(strings.TrimSuffix(cmd, "&"))
				afterBackground = true
				continue
			}
			// A command right after one sent to the background (a port-forward)
			// is tried again while that one starts, and so is a DNS query, which
			// kube-proxy may refuse for a moment after the pods are ready (the
			// deployment page says so): as a user would.
			retry := time.Duration(0)
			if afterBackground || strings.HasPrefix(cmd, "dig ") {
				retry = 30 * time.Second
			}
			afterBackground = false
			out, err := e.shell(ctx, cmd, retry)
			if err != nil {
				t.Fatalf("deployment step %q: %s: %v\n%s", s.Title, cmd, err, out)
			}
			e.outputs[cmd] = out
		}
		t.Logf("measure: deployment step %q: %d commands in %v", s.Title, len(s.Commands), time.Since(t0).Round(time.Second))
	}
	return applied
}

// shell runs cmd with bash in the copy of the repository, with the cluster's
// kubeconfig and the repository's binaries (kubectl, etcdctl) on PATH; a failing
// command is run again until retry has passed.
func (e *env) shell(ctx context.Context, cmd string, retry time.Duration) (string, error) {
	deadline := time.Now().Add(retry)
	for {
		cctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
		c := exec.CommandContext(cctx, "bash", "-o", "pipefail", "-c", cmd)
		c.Dir = e.work
		c.Env = append(e.c.Env(), "PATH="+e.bin+":"+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		cancel()
		if err == nil || time.Now().After(deadline) {
			return string(out), err
		}
		time.Sleep(time.Second)
	}
}

func (e *env) background(cmd string) {
	c := exec.Command("bash", "-c", "exec "+cmd)
	c.Dir = e.work
	c.Env = append(e.c.Env(), "PATH="+e.bin+":"+os.Getenv("PATH"))
	c.Stdout, c.Stderr = io.Discard, io.Discard
	if err := c.Start(); err != nil {
		e.t.Fatalf("%s: %v", cmd, err)
	}
	e.bg = append(e.bg, c)
}

func (e *env) stopBackground() {
	for _, c := range e.bg {
		c.Process.Kill()
		c.Wait()
	}
}

// nodeIP returns the address of the named node.
func (e *env) nodeIP(name string) string {
	for _, n := range e.c.Nodes {
		if n.Name == name {
			return n.IP.String()
		}
	}
	e.t.Fatalf("no node %s", name)
	return ""
}

// externalIPs returns, sorted, the IPs of a Service's load-balancer status.
func (e *env) externalIPs(ctx context.Context, name string) []string {
	e.t.Helper()
	svc, err := e.kube.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		out = append(out, ing.IP)
	}
	slices.Sort(out)
	return out
}

// readyNodes returns, sorted, the addresses of the Ready nodes.
func (e *env) readyNodes(ctx context.Context) []string {
	e.t.Helper()
	var out []string
	for _, n := range e.c.Nodes {
		if e.nodeReady(ctx, n.Name) {
			out = append(out, n.IP.String())
		}
	}
	slices.Sort(out)
	return out
}

// externalIPWithoutPods measures how soon a LoadBalancer Service with no
// pods shows an EXTERNAL-IP, and that its deletion waits for skylb's
// finalizer, which goes with its records.
func (e *env) externalIPWithoutPods(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 3*time.Minute)
	all := e.readyNodes(ctx)
	start := time.Now()
	e.kubectl(ctx, "create", "service", "loadbalancer", "nopods", "--tcp=8091:8091")
	e.waitFor(ctx, time.Minute, "an EXTERNAL-IP for Service nopods", func() bool {
		return slices.Equal(e.externalIPs(ctx, "nopods"), all)
	})
	t.Logf("measure: a LoadBalancer Service with no pods shows EXTERNAL-IP %v %v after kubectl create began", all, time.Since(start).Round(10*time.Millisecond))
	// The finalizer follows the status, in a patch of its own.
	e.waitFor(ctx, time.Minute, "the load-balancer cleanup finalizer on Service nopods", func() bool {
		svc, err := e.kube.CoreV1().Services("default").Get(ctx, "nopods", metav1.GetOptions{})
		return err == nil && slices.Contains(svc.Finalizers, "service.kubernetes.io/load-balancer-cleanup")
	})
	e.waitAnswer(ctx, time.Minute, "nopods.default."+zone, nil)
	start = time.Now()
	e.kubectl(ctx, "delete", "service", "nopods", "--wait=true", "--timeout=1m")
	t.Logf("measure: deleted, the Service was gone after %v", time.Since(start).Round(10*time.Millisecond))
}

// webNodes returns, sorted, the addresses of the nodes that run a ready pod
// of the default namespace matching selector.
func (e *env) webNodes(ctx context.Context, selector string) []string {
	e.t.Helper()
	pods, err := e.kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) && p.Spec.NodeName != "" {
			out = append(out, e.nodeIP(p.Spec.NodeName))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// server is CoreDNS through the NodePort of the first node.
func (e *env) server() string {
	return net.JoinHostPort(e.c.Nodes[0].IP.String(), fmt.Sprint(nodePort))
}

// waitAnswer waits until CoreDNS answers name with exactly want (NXDOMAIN
// when want is empty) and returns how long that took.
func (e *env) waitAnswer(ctx context.Context, limit time.Duration, name string, want []string) time.Duration {
	e.t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < limit && ctx.Err() == nil {
		rcode, got, err := stack.Query(e.server(), name, dns.TypeA)
		switch {
		case err != nil:
			last = err.Error()
		case len(want) == 0 && rcode == dns.RcodeNameError, len(want) > 0 && slices.Equal(got, want):
			return time.Since(start)
		default:
			last = fmt.Sprintf("%s %v", dns.RcodeToString[rcode], got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("%s: CoreDNS answers %s after %v, want %v", name, last, limit, want)
	return 0
}

// cacheTTL is the longest CoreDNS caches an answer
// (SKYLB_DNS_CACHE_TTL in coredns/deploy/config.env).
const cacheTTL = 5 * time.Second

// waitSettled waits until CoreDNS has answered name with exactly want for
// longer than its cache keeps an answer, every query of that time: then no
// replica serves an older answer from its cache.
func (e *env) waitSettled(ctx context.Context, name string, want []string) {
	e.t.Helper()
	e.settle(ctx, name, func() ([]string, error) { return query(e.server(), name) }, want)
}

// settle waits until ask has answered want, and nothing else, every time for
// longer than CoreDNS caches an answer, so that no answer of before is left
// in a cache.
func (e *env) settle(ctx context.Context, what string, ask func() ([]string, error), want []string) {
	e.t.Helper()
	start, since := time.Now(), time.Now()
	var last string
	for time.Since(since) <= cacheTTL+time.Second {
		if time.Since(start) > 2*time.Minute || ctx.Err() != nil {
			e.t.Fatalf("%s: CoreDNS did not answer %v for %v in a row within two minutes; last: %s", what, want, cacheTTL+time.Second, last)
		}
		if got, err := ask(); err != nil || !slices.Equal(got, want) {
			last = fmt.Sprint(got, err)
			since = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query asks server for name's addresses: an error for an answer other
// than NOERROR.
func query(server, name string) ([]string, error) {
	rcode, got, err := stack.Query(server, name, dns.TypeA)
	if err == nil && rcode != dns.RcodeSuccess {
		err = fmt.Errorf("%s", dns.RcodeToString[rcode])
	}
	return got, err
}

// kubectl runs kubectl against the cluster and fails the test on an error.
func (e *env) kubectl(ctx context.Context, args ...string) string {
	e.t.Helper()
	return e.c.MustKubectl(ctx, e.t, args...)
}

// waitFor polls cond until it holds or limit passes.
func (e *env) waitFor(ctx context.Context, limit time.Duration, what string, cond func() bool) time.Duration {
	e.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit || ctx.Err() != nil {
			e.t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// waitRollout waits until the web Deployment has all its replicas ready.
func (e *env) waitRollout(ctx context.Context, name string) {
	e.t.Helper()
	e.kubectl(ctx, "rollout", "status", "deployment/"+name, "--timeout=3m")
}

func (e *env) scale(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 5*time.Minute)
	start := time.Now()
	e.kubectl(ctx, "scale", "deployment/web", "--replicas=1")
	e.waitFor(ctx, 2*time.Minute, "web scaled to one ready pod", func() bool { return len(e.pods(ctx, "app=web")) == 1 })
	want := e.webNodes(ctx, "app=web")
	e.waitAnswer(ctx, time.Minute, webName, want)
	t.Logf("measure: scaled 3 -> 1: %s answers %v after %v", webName, want, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	e.kubectl(ctx, "scale", "deployment/web", "--replicas=3")
	e.waitRollout(ctx, "web")
	want = e.webNodes(ctx, "app=web")
	e.waitAnswer(ctx, time.Minute, webName, want)
	t.Logf("measure: scaled 1 -> 3: %s answers %v after %v", webName, want, time.Since(start).Round(time.Millisecond))
}

// pods returns the pods of the default namespace matching selector that are
// not being deleted.
func (e *env) pods(ctx context.Context, selector string) []corev1.Pod {
	e.t.Helper()
	return e.podsIn(ctx, "default", selector)
}

// podsIn returns the pods of namespace that selector selects, but those
// being deleted.
func (e *env) podsIn(ctx context.Context, namespace, selector string) []corev1.Pod {
	e.t.Helper()
	list, err := e.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// webNode returns a node that runs a pod of web.
func (e *env) webNode(ctx context.Context) string {
	e.t.Helper()
	pods := e.pods(ctx, "app=web")
	if len(pods) == 0 {
		e.t.Fatal("web has no pod")
	}
	return pods[0].Spec.NodeName
}

func (e *env) drain(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 8*time.Minute)
	node := e.webNode(ctx)
	addr := e.nodeIP(node)
	start := time.Now()
	e.kubectl(ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4m")
	drained := time.Since(start)
	e.waitRollout(ctx, "web")
	want := e.webNodes(ctx, "app=web")
	if slices.Contains(want, addr) {
		t.Fatalf("a web pod is ready on the drained node %s", node)
	}
	e.waitAnswer(ctx, time.Minute, webName, want)
	t.Logf("measure: drain of %s (%v): %s answers %v after %v", node, drained.Round(time.Second), webName, want, time.Since(start).Round(time.Millisecond))

	e.kubectl(ctx, "uncordon", node)
	// The etcd member evicted with the drain comes back on its own volume.
	e.kubectl(ctx, "-n", "skylb-dns", "rollout", "status", "statefulset/etcd", "--timeout=4m")
	t.Logf("measure: uncordon of %s: etcd has its three members again after %v", node, time.Since(start).Round(time.Second))
	e.waitAnswer(ctx, time.Minute, webName, want)
}

func (e *env) kubeletStopped(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 8*time.Minute)
	node := e.webNode(ctx)
	addr := e.nodeIP(node)
	before := e.webNodes(ctx, "app=web")
	want := slices.DeleteFunc(slices.Clone(before), func(a string) bool { return a == addr })
	start := time.Now()
	if err := e.c.StopKubelet(ctx, node); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			e.c.StartKubelet(context.Background(), node)
		}
	}()
	notReady := e.waitFor(ctx, 3*time.Minute, node+" NotReady", func() bool { return !e.nodeReady(ctx, node) })
	e.waitAnswer(ctx, 2*time.Minute, webName, want)
	t.Logf("measure: kubelet of %s stopped: NotReady after %v, %s answers %v after %v",
		node, notReady.Round(time.Second), webName, want, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := e.c.StartKubelet(ctx, node); err != nil {
		t.Fatal(err)
	}
	restarted = true
	e.waitFor(ctx, 3*time.Minute, node+" Ready", func() bool { return e.nodeReady(ctx, node) })
	e.waitAnswer(ctx, 2*time.Minute, webName, before)
	t.Logf("measure: kubelet of %s started again: %s answers %v after %v", node, webName, before, time.Since(start).Round(time.Millisecond))
}

func (e *env) nodeReady(ctx context.Context, name string) bool {
	n, err := e.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaseHolder returns the skylb replica that holds the leader-election Lease.
func (e *env) leaseHolder(ctx context.Context) string {
	l, err := e.kube.CoordinationV1().Leases("skylb").Get(ctx, "skylb", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return podOf(*l.Spec.HolderIdentity)
}

// podOf returns the pod name of a skylb replica's identity, <pod name>_<random>.
func podOf(identity string) string {
	pod, _, _ := strings.Cut(identity, "_")
	return pod
}

func (e *env) skylbLeaderDeleted(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 5*time.Minute)
	old := e.leaseHolder(ctx)
	if old == "" {
		t.Fatal("no skylb replica holds the Lease")
	}
	start := time.Now()
	e.kubectl(ctx, "-n", "skylb", "delete", "pod", old, "--wait=false")
	// The old leader releases the Lease as it stops, and a replica that is
	// ready takes it: the standby, or the one replacing the deleted leader
	// once its caches have synced. Watched from the deletion, while a change
	// is made.
	var (
		holder   string
		handover time.Duration
	)
	leased := make(chan struct{})
	go func() {
		defer close(leased)
		for ctx.Err() == nil && time.Since(start) < 2*time.Minute {
			if h := e.leaseHolder(ctx); h != "" && h != old {
				holder, handover = h, time.Since(start)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// A change made while the leader goes: a new Service of the same pods,
	// published by whichever replica leads by then. Each on a port of its
	// own: web holds 80 at the nodes' addresses (PortConflict).
	e.kubectl(ctx, "expose", "deployment", "web", "--name=web2", "--type=LoadBalancer", "--port=81", "--target-port=80")
	want := e.webNodes(ctx, "app=web")
	e.waitAnswer(ctx, 2*time.Minute, "web2.default."+zone, want)
	answered := time.Since(start)
	<-leased
	if holder == "" {
		t.Fatalf("no other skylb replica took the Lease within 2m of %s's deletion", old)
	}
	// A change made after the handover is the new leader's. The nodes of
	// ready web pods are read again: a kubelet restarted by the test before
	// this one may have had a pod's readiness change since.
	want = e.webNodes(ctx, "app=web")
	t1 := time.Now()
	e.kubectl(ctx, "expose", "deployment", "web", "--name=web3", "--type=LoadBalancer", "--port=82", "--target-port=80")
	e.waitAnswer(ctx, 2*time.Minute, "web3.default."+zone, want)
	t.Logf("measure: skylb leader %s deleted: %s holds the Lease after %v; a Service created at the deletion answered after %v, one created after the handover after %v",
		old, holder, handover.Round(time.Millisecond), answered.Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	// The old leader's etcd campaign is gone: the only candidate in etcd, the
	// one whose revision fences every write, is the new leader.
	c := e.etcdClient(t, "root")
	gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.Get(gctx, "/skylb/leader/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var candidates []string
	for _, kv := range resp.Kvs {
		candidates = append(candidates, podOf(string(kv.Value)))
	}
	if !slices.Equal(candidates, []string{holder}) {
		t.Errorf("Got etcd election candidates %v, want only %s", candidates, holder)
	}
	e.kubectl(ctx, "delete", "service", "web2", "web3")
	e.waitAnswer(ctx, time.Minute, "web2.default."+zone, nil)
	e.waitAnswer(ctx, time.Minute, "web3.default."+zone, nil)
	e.kubectl(ctx, "-n", "skylb", "rollout", "status", "deployment/skylb", "--timeout=3m")
}

// etcdPods returns the etcd members' pods by name.
func (e *env) etcdPods(ctx context.Context) map[string]corev1.Pod {
	list, err := e.kube.CoreV1().Pods("skylb-dns").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=etcd"})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

// etcdClient connects to the etcd members with the client certificate of user
// (in skylb-certs, from the deployment page's step 2). The host cannot
// resolve the members' names (etcd-0.etcd.skylb-dns.svc, in their
// certificate), so they are dialled at their pods' addresses.
func (e *env) etcdClient(t *testing.T, user string) *clientv3.Client {
	t.Helper()
	certs := filepath.Join(e.work, "skylb-certs")
	pair, err := tls.LoadX509KeyPair(filepath.Join(certs, user+".crt"), filepath.Join(certs, user+".key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	var endpoints []string
	for name := range e.etcdPods(context.Background()) {
		endpoints = append(endpoints, "https://"+name+".etcd.skylb-dns.svc:2379")
	}
	slices.Sort(endpoints)
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		p, ok := e.etcdPods(ctx)[strings.TrimSuffix(host, ".etcd.skylb-dns.svc")]
		if !ok || p.Status.PodIP == "" {
			return nil, fmt.Errorf("no address for %s", host)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, port))
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(dial)},
		Logger:      zap.NewNop(),
		TLS:         &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// records returns every key and value under /skydns/.
func records(ctx context.Context, t *testing.T, c *clientv3.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/skydns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

func (e *env) etcdLeaderDeleted(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 6*time.Minute)
	c := e.etcdClient(t, "root")
	before := records(ctx, t, c)
	leader := ""
	for name := range e.etcdPods(ctx) {
		st, err := c.Status(ctx, "https://"+name+".etcd.skylb-dns.svc:2379")
		if err == nil && st.Leader == st.Header.MemberId {
			leader = name
		}
	}
	if leader == "" {
		t.Fatal("no etcd member leads")
	}
	pvc, err := e.kube.CoreV1().PersistentVolumeClaims("skylb-dns").Get(ctx, "data-"+leader, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// CoreDNS is asked all along, once every replica's cache holds the
	// answer of the cluster as it is now: an earlier step's change may
	// still sit in one of them.
	want := e.webNodes(ctx, "app=web")
	e.waitSettled(ctx, webName, want)
	start := time.Now()
	probe := cluster.StartProbe(ctx, e.server(), webName, want)
	e.kubectl(ctx, "-n", "skylb-dns", "delete", "pod", leader)
	e.kubectl(ctx, "-n", "skylb-dns", "rollout", "status", "statefulset/etcd", "--timeout=4m")
	back := e.waitFor(ctx, 4*time.Minute, leader+" ready", func() bool {
		p, ok := e.etcdPods(ctx)[leader]
		return ok && p.DeletionTimestamp == nil && podReady(&p)
	})
	rejoined := time.Since(start)
	s := probe.Stop()

	after := records(ctx, t, e.etcdClient(t, "root"))
	if len(after) != len(before) {
		t.Errorf("Got %d records after the etcd leader's pod came back, want the %d before", len(after), len(before))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("record %s changed: %s -> %s", k, v, after[k])
		}
	}
	pvcAfter, err := e.kube.CoreV1().PersistentVolumeClaims("skylb-dns").Get(ctx, "data-"+leader, metav1.GetOptions{})
	if err != nil || pvcAfter.UID != pvc.UID || pvcAfter.Spec.VolumeName != pvc.Spec.VolumeName {
		t.Errorf("member %s came back on another volume (%v)", leader, err)
	}
	members, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.Members {
		if m.Name == "" || len(m.ClientURLs) == 0 {
			t.Errorf("etcd member %x has not started", m.ID)
		}
	}
	if len(members.Members) != 3 {
		t.Errorf("Got %d etcd members, want 3", len(members.Members))
	}
	t.Logf("measure: etcd leader %s deleted: back and ready after %v (%v after its rollout), %d records intact, CoreDNS answered %d of %d queries meanwhile, the slowest in %v",
		leader, rejoined.Round(time.Second), back.Round(time.Second), len(after), s.Queries-s.Failed, s.Queries, s.Slowest.Round(time.Millisecond))
	if s.Failed > 0 {
		t.Errorf("CoreDNS failed %d of %d queries while the etcd leader was replaced; the first: %s", s.Failed, s.Queries, strings.Join(s.Failures[:min(5, len(s.Failures))], "; "))
	}
}

// etcdScaledToZero takes every etcd member away (the StatefulSet scaled
// to 0) for 30 s while CoreDNS is asked for a name it answered before, then
// brings them back and measures how soon a change reaches the answer.
func (e *env) etcdScaledToZero(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 8*time.Minute)
	want := e.webNodes(ctx, "app=web")
	e.waitSettled(ctx, webName, want)

	probe := cluster.StartProbe(ctx, e.server(), webName, want)
	t0 := time.Now()
	e.kubectl(ctx, "-n", "skylb-dns", "scale", "statefulset/etcd", "--replicas=0")
	e.waitFor(ctx, 3*time.Minute, "every etcd pod gone", func() bool { return len(e.etcdPods(ctx)) == 0 })
	gone := time.Since(t0)
	time.Sleep(30 * time.Second)
	s := probe.Stop()
	outage := time.Since(t0)
	if ready := e.kubectl(ctx, "-n", "skylb-coredns", "get", "deployment", "coredns", "-o", "jsonpath={.status.readyReplicas}"); ready != "2" {
		t.Errorf("Got %s CoreDNS replicas Ready with etcd away, want 2", ready)
	}

	e.kubectl(ctx, "-n", "skylb-dns", "scale", "statefulset/etcd", "--replicas=3")
	e.kubectl(ctx, "-n", "skylb-dns", "rollout", "status", "statefulset/etcd", "--timeout=4m")
	back := time.Now()
	// A change made once etcd serves again: a new Service of the same pods.
	e.kubectl(ctx, "expose", "deployment", "web", "--name=web4", "--type=LoadBalancer", "--port=83", "--target-port=80")
	e.waitAnswer(ctx, 2*time.Minute, "web4.default."+zone, want)
	t.Logf("measure: etcd scaled to zero (pods gone after %v) for %v: CoreDNS answered %d of %d queries for %s right, the slowest in %v; once etcd was back, a new Service answered after %v",
		gone.Round(time.Second), outage.Round(time.Second), s.Queries-s.Failed, s.Queries, webName,
		s.Slowest.Round(time.Millisecond), time.Since(back).Round(100*time.Millisecond))
	if s.Failed > 0 {
		t.Errorf("CoreDNS answered %d of %d queries wrong while etcd was away; the first: %s", s.Failed, s.Queries, strings.Join(s.Failures[:min(5, len(s.Failures))], "; "))
	}
	// The reloader beside each CoreDNS reloaded it once etcd answered, so
	// that its etcd client did not wait out gRPC's reconnect backoff.
	pods := strings.Fields(e.kubectl(ctx, "-n", "skylb-coredns", "get", "pods", "-l", "app.kubernetes.io/name=coredns", "-o", "jsonpath={.items[*].metadata.name}"))
	for _, pod := range pods {
		logs := e.kubectl(ctx, "-n", "skylb-coredns", "logs", pod, "-c", "reloader")
		reload := ""
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "etcd answers again") {
				reload = line
			}
		}
		if reload == "" {
			t.Errorf("the reloader of %s did not reload CoreDNS once etcd was back; its log:\n%s", pod, logs)
			continue
		}
		t.Logf("measure: the reloader of %s: %s", pod, reload)
	}
	e.kubectl(ctx, "delete", "service", "web4")
	e.waitAnswer(ctx, time.Minute, "web4.default."+zone, nil)
}

// hostNetwork adds the component deploy/hostnetwork in an overlay of coredns/,
// as the deployment page says, labels two nodes and asks them on port 53.
func (e *env) hostNetwork(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 5*time.Minute)
	dnsNodes := e.dnsNodes()
	var want []string
	for _, n := range dnsNodes {
		want = append(want, e.nodeIP(n))
	}
	slices.Sort(want)
	start := time.Now()
	e.applyHostNetwork(ctx)
	server := net.JoinHostPort(e.nodeIP(dnsNodes[0]), "53")
	var last string
	e.waitFor(ctx, 2*time.Minute, "NS at the apex on port 53", func() bool {
		_, ns, err := stack.Query(server, zone, dns.TypeNS)
		if err != nil || len(ns) != len(want) {
			last = fmt.Sprint(ns, err)
			return false
		}
		var addrs []string
		for _, n := range ns {
			_, a, err := stack.Query(server, n, dns.TypeA)
			if err != nil {
				return false
			}
			addrs = append(addrs, a...)
		}
		slices.Sort(addrs)
		last = fmt.Sprint(ns, addrs)
		return slices.Equal(addrs, want)
	})
	t.Logf("measure: CoreDNS on port 53 of %v: NS at the apex with their addresses after %v (%s)", dnsNodes, time.Since(start).Round(time.Second), last)
	if _, got, err := stack.Query(server, webName, dns.TypeA); err != nil || !slices.Equal(got, e.webNodes(ctx, "app=web")) {
		t.Errorf("port 53 of %s: %s answers %v (%v)", dnsNodes[0], webName, got, err)
	}
	// The deployment page's next command: the Deployment and the NodePort go,
	// port 53 and the nameservers stay.
	e.kubectl(ctx, "-n", "skylb-coredns", "delete", "deployment/coredns", "service/coredns")
	if _, ns, err := stack.Query(server, zone, dns.TypeNS); err != nil || len(ns) != len(want) {
		t.Errorf("port 53 of %s after the Deployment went: NS %v (%v), want %d", dnsNodes[0], ns, err, len(want))
	}
}

// dnsNodes are the nodes CoreDNS's hostNetwork DaemonSet runs on.
func (e *env) dnsNodes() []string { return []string{e.c.Nodes[0].Name, e.c.Nodes[1].Name} }

// applyHostNetwork labels the nodes of dnsNodes skylb.io/dns=true and
// applies coredns/ with the component deploy/hostnetwork in an overlay, as
// the deployment page tells; then it waits for the DaemonSet's rollout.
func (e *env) applyHostNetwork(ctx context.Context) {
	e.t.Helper()
	overlay := filepath.Join(e.work, "coredns-hostnetwork")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		e.t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../coredns]\ncomponents: [../coredns/deploy/hostnetwork]\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		e.t.Fatal(err)
	}
	for _, n := range e.dnsNodes() {
		e.kubectl(ctx, "label", "node", n, "skylb.io/dns=true", "--overwrite")
	}
	if out, err := e.shell(ctx, "kubectl apply -k coredns-hostnetwork", 0); err != nil {
		e.t.Fatalf("kubectl apply -k coredns-hostnetwork: %v\n%s", err, out)
	}
	e.kubectl(ctx, "-n", "skylb-coredns", "rollout", "status", "daemonset/coredns", "--timeout=3m")
}

// activityOnly are the metric families a skylb exports only once something
// happened: the failures of health probes, by reason.
var activityOnly = []string{"skylb_health_probe_errors_total"}

// metrics scrapes every skylb replica (through the API server's proxy) and
// checks that each skylb metric manifests/monitoring's alerts and dashboard
// query is exported by one of them, and that the Service skylb-metrics
// reaches the replicas.
func (e *env) metrics(t *testing.T) {
	e.t = t
	ctx := ctxT(t, time.Minute)
	used, err := monitoring.UsedMetrics(stack.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	pods := e.podsIn(ctx, "skylb", "app.kubernetes.io/name=skylb")
	exported := map[string]bool{}
	for _, p := range pods {
		raw, err := e.kube.CoreV1().Pods("skylb").ProxyGet("http", p.Name, "8080", "/metrics", nil).DoRaw(ctx)
		if err != nil {
			t.Fatalf("/metrics of %s: %v", p.Name, err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
				exported[f[2]] = true
			}
		}
	}
	for _, name := range used {
		if !exported[name] && !slices.Contains(activityOnly, name) {
			t.Errorf("manifests/monitoring queries %s, which no skylb replica exports", name)
		}
	}
	t.Logf("%d skylb metrics queried by the alerts and the dashboard, %d families exported by %d replicas", len(used), len(exported), len(pods))
	raw, err := e.kube.CoreV1().Services("skylb").ProxyGet("http", "skylb-metrics", "http", "/metrics", nil).DoRaw(ctx)
	if err != nil || !strings.Contains(string(raw), "skylb_build_info") {
		t.Errorf("/metrics through the Service skylb-metrics: %v\n%.200s", err, raw)
	}
	eps, err := e.kube.DiscoveryV1().EndpointSlices("skylb").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=skylb-metrics"})
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, s := range eps.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ready++
			}
		}
	}
	if ready != len(pods) {
		t.Errorf("Got %d ready endpoints of the Service skylb-metrics, want the %d replicas", ready, len(pods))
	}
}

// memory reads skylb's memory in its pods from the kubelets' summary API.
func (e *env) memory(t *testing.T) {
	e.t = t
	ctx := ctxT(t, time.Minute)
	pods, err := e.kube.CoreV1().Pods("skylb").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=skylb"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		raw, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", p.Spec.NodeName, "proxy/stats/summary").DoRaw(ctx)
		if err != nil {
			t.Fatalf("summary of %s: %v", p.Spec.NodeName, err)
		}
		var summary struct {
			Pods []struct {
				PodRef     struct{ Name, Namespace string }
				Containers []struct {
					Name   string
					Memory struct{ WorkingSetBytes, RSSBytes uint64 }
				}
			}
		}
		if err := json.Unmarshal(raw, &summary); err != nil {
			t.Fatal(err)
		}
		for _, sp := range summary.Pods {
			if sp.PodRef.Name != p.Name {
				continue
			}
			for _, c := range sp.Containers {
				t.Logf("measure: skylb pod %s: working set %.1f MiB, RSS %.1f MiB", p.Name,
					float64(c.Memory.WorkingSetBytes)/(1<<20), float64(c.Memory.RSSBytes)/(1<<20))
			}
		}
	}
}

func ctxT(t *testing.T, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

// upCluster starts a cluster of three nodes in <repo>/.cluster/deploy with
// the images the manifests name, whose logs stay there after the test; the
// cluster goes with the test, and one a killed run left there goes first.
func upCluster(ctx context.Context, t *testing.T, root string) *cluster.Cluster {
	t.Helper()
	return cluster.UpWithImagesForTest(ctx, t, root, "deploy", images.Options{},
		[]string{"get", "pods", "-A", "-o", "wide"},
		[]string{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		[]string{"-n", "skylb", "logs", "-l", "app.kubernetes.io/name=skylb", "--tail=40", "--prefix"})
}
