package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

// The test's workload: an etcd server (the etcd image) on the first node
// behind a ClusterIP and a NodePort Service and with a hostPort, and on every
// node a client pod (the debian stand-in) that reaches it by Service name.
const (
	testNodePort = 30379
	testHostPort = 32379
)

const testWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: clustertest}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: clustertest, labels: {app: server}}
spec:
  nodeSelector: {kubernetes.io/hostname: %[1]s}
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: etcd
    image: %[2]s
    command: [/usr/local/bin/etcd, --data-dir=/data/etcd, --listen-client-urls=http://0.0.0.0:2379,
              --advertise-client-urls=http://127.0.0.1:2379, --listen-peer-urls=http://127.0.0.1:2380]
    ports:
    - {containerPort: 2379, hostPort: %[4]d}
    readinessProbe:
      httpGet: {path: /health, port: 2379}
      periodSeconds: 2
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: server, namespace: clustertest}
spec:
  selector: {app: server}
  ports: [{port: 2379}]
---
apiVersion: v1
kind: Service
metadata: {name: server-nodeport, namespace: clustertest}
spec:
  type: NodePort
  selector: {app: server}
  ports: [{port: 2379, nodePort: %[5]d}]
`

// testSkylb runs skylb's image once, to print its version.
const testSkylb = `apiVersion: v1
kind: Pod
metadata: {name: skylb-version, namespace: clustertest}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: skylb
    image: %[1]s
    args: [--version]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`

const testClient = `apiVersion: v1
kind: Pod
metadata: {name: client-%[1]s, namespace: clustertest}
spec:
  nodeSelector: {kubernetes.io/hostname: %[1]s}
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: client
    image: %[2]s
    command: [sleep, infinity]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`

// TestCluster brings up a three-node cluster and checks what the manifests'
// deployment test relies on, then that Down leaves nothing behind.
func TestCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the real cluster needs root (network and mount namespaces, cgroups, iptables)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// An interrupt ends the test through its context, so that Up or the
	// clean-up removes the cluster.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	start := time.Now()
	imgs, err := images.Build(ctx, images.Options{
		Root: root, Bin: bin, EtcdBin: os.Getenv("SKYLB_ETCD_BIN"),
		Cache: filepath.Join(root, ".cluster", "cache"), Log: testLog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := images.ReadRefs(root)
	if err != nil {
		t.Fatal(err)
	}
	// A fixed directory (its logs stay for a look after a failure): a
	// cluster a killed run left there is removed first.
	dir := filepath.Join(root, ".cluster", "test")
	if old, err := Load(dir); err == nil {
		t.Logf("removing the cluster a previous run left in %s", dir)
		if err := old.Down(); err != nil {
			t.Fatal(err)
		}
	}
	upStart := time.Now()
	c, err := Up(ctx, Options{Dir: dir, Bin: bin, Images: images.Tarballs(imgs), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3 nodes Ready and cluster DNS answering %.1fs after Up started (images: %.1fs)",
		time.Since(upStart).Seconds(), upStart.Sub(start).Seconds())
	downed := false
	t.Cleanup(func() {
		if !downed {
			if err := c.Down(); err != nil {
				t.Errorf("Down() = %v", err)
			}
		}
	})

	t.Run("nodes", func(t *testing.T) {
		if err := c.nodesReady(ctx); err != nil {
			t.Fatal(err)
		}
		if len(c.Nodes) != 3 {
			t.Fatalf("Got %d nodes, want 3", len(c.Nodes))
		}
	})

	server := c.Nodes[0]
	yaml := fmt.Sprintf(testWorkload, server.Name, refs.Etcd, refs.Debian, testHostPort, testNodePort)
	for _, n := range c.Nodes {
		yaml += "---\n" + fmt.Sprintf(testClient, n.Name, refs.Debian)
	}
	if err := c.Apply(ctx, yaml); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, fmt.Sprintf(testSkylb, refs.Skylb)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "wait", "-n", "clustertest", "--for=condition=Ready", "pod", "-l", "app=server", "--timeout=120s"); err != nil {
		out, _ := c.Kubectl(ctx, "get", "pods", "-n", "clustertest", "-o", "wide")
		t.Fatalf("server not Ready: %v\n%s", err, out)
	}
	for _, n := range c.Nodes {
		if _, err := c.Kubectl(ctx, "wait", "-n", "clustertest", "--for=condition=Ready", "pod/client-"+n.Name, "--timeout=120s"); err != nil {
			out, _ := c.Kubectl(ctx, "get", "pods", "-n", "clustertest", "-o", "wide")
			t.Fatalf("client-%s not Ready: %v\n%s", n.Name, err, out)
		}
	}

	t.Run("skylb's image runs as the non-root user and prints its version", func(t *testing.T) {
		if _, err := c.Kubectl(ctx, "wait", "-n", "clustertest", "--for=jsonpath={.status.phase}=Succeeded", "pod/skylb-version", "--timeout=60s"); err != nil {
			t.Fatal(err)
		}
		out, err := c.Kubectl(ctx, "logs", "-n", "clustertest", "skylb-version")
		first, _, _ := strings.Cut(out, "\n")
		if want := "skylb " + images.Tag(refs.Skylb); err != nil || first != want {
			t.Errorf("skylb --version in its image = %q, %v; want a first line %q", out, err, want)
		}
	})

	t.Run("a pod on every node, resolving a Service by name", func(t *testing.T) {
		for _, n := range c.Nodes {
			out, err := c.Kubectl(ctx, "get", "pod", "-n", "clustertest", "client-"+n.Name, "-o", "jsonpath={.spec.nodeName}")
			if err != nil || out != n.Name {
				t.Errorf("client-%s runs on %q (%v), want %s", n.Name, out, err, n.Name)
			}
			// bash's /dev/tcp resolves the name with the pod's resolv.conf
			// (the cluster DNS) and connects to the Service.
			out, err = c.Kubectl(ctx, "exec", "-n", "clustertest", "client-"+n.Name, "--", "bash", "-c",
				`exec 3<>/dev/tcp/server.clustertest.svc/2379 && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && cat <&3`)
			if err != nil || !strings.Contains(out, `"health":"true"`) {
				t.Errorf("from client-%s, GET server.clustertest.svc:2379/health = %q, %v; want health true", n.Name, out, err)
			}
		}
	})

	t.Run("NodePort from the host", func(t *testing.T) {
		for _, n := range c.Nodes {
			if body, err := httpGet(ctx, fmt.Sprintf("http://%s:%d/health", n.IP, testNodePort)); err != nil || !strings.Contains(body, `"health":"true"`) {
				t.Errorf("NodePort %s:%d /health = %q, %v", n.IP, testNodePort, body, err)
			}
		}
	})

	t.Run("hostPort from the host", func(t *testing.T) {
		if body, err := httpGet(ctx, fmt.Sprintf("http://%s:%d/health", server.IP, testHostPort)); err != nil || !strings.Contains(body, `"health":"true"`) {
			t.Errorf("hostPort %s:%d /health = %q, %v", server.IP, testHostPort, body, err)
		}
	})

	t.Run("a stopped kubelet turns its node NotReady, and back", func(t *testing.T) {
		n := c.Nodes[2].Name
		if err := c.StopKubelet(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 90*time.Second, time.Second, n+" NotReady", func(ctx context.Context) error {
			if err := c.nodesReady(ctx); err == nil {
				return fmt.Errorf("%s still Ready", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := c.StartKubelet(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 90*time.Second, time.Second, n+" Ready", c.nodesReady); err != nil {
			t.Fatal(err)
		}
	})

	rss := c.daemonRSS()
	t.Logf("daemon RSS (MiB): %s", rss)

	downed = true
	if err := c.Down(); err != nil {
		t.Fatalf("Down() = %v", err)
	}
	if err := c.Down(); err != nil {
		t.Errorf("second Down() = %v", err)
	}
	t.Run("nothing left after Down", func(t *testing.T) { checkGone(t, c) })
	t.Logf("whole test: %.1fs", time.Since(start).Seconds())
}

// checkGone fails for every process, namespace, link, route, cgroup or mount
// of the cluster that is left.
func checkGone(t *testing.T, c *Cluster) {
	t.Helper()
	if pids := processesWith(c.Dir + "/"); len(pids) > 0 {
		t.Errorf("processes of %s left: %v", c.Dir, pids)
	}
	for _, n := range c.Nodes {
		if _, err := os.Stat("/run/netns/" + n.Netns); err == nil {
			t.Errorf("netns %s left", n.Netns)
		}
		if _, err := os.Stat("/sys/class/net/" + n.veth()); err == nil {
			t.Errorf("link %s left", n.veth())
		}
		for _, h := range cgroupHierarchies(true) {
			if _, err := os.Stat(filepath.Join(h, n.cgroup())); err == nil {
				t.Errorf("cgroup %s left", filepath.Join(h, n.cgroup()))
			}
		}
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		t.Errorf("bridge %s left", bridgeName)
	}
	routes, err := run(context.Background(), "ip", "-4", "route")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if strings.Contains(routes, n.PodCIDR.String()) {
			t.Errorf("route to %s left:\n%s", n.PodCIDR, routes)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), c.Dir) || strings.Contains(string(mounts), "/run/netns/skylbk-") {
		t.Errorf("mounts of the cluster left in the host mount namespace")
	}
	if _, err := os.Stat(filepath.Join(c.Dir, StateFile)); err == nil {
		t.Errorf("%s left", StateFile)
	}
}

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
