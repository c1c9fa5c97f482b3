package stack

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testLog writes the stack's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func TestStackServesSkylbRecords(t *testing.T) {
	if missing := MissingBinaries(""); len(missing) > 0 {
		t.Skipf("missing %s in bin/: run scripts/build-bins.sh", strings.Join(missing, ", "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t0 := time.Now()
	s, err := Start(ctx, Options{Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			s.Stop()
		}
	})
	t.Logf("stack started in %.1fs", time.Since(t0).Seconds())

	// The kube-controller-manager runs the wanted controllers and not the node-lifecycle one.
	kcmLog, err := os.ReadFile(s.Proc("kube-controller-manager").LogFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"endpointslice-controller", "deployment-controller", "replicaset-controller"} {
		if !strings.Contains(string(kcmLog), `"Started controller" controller="`+c+`"`) {
			t.Errorf("kube-controller-manager log does not show %s started", c)
		}
	}
	if strings.Contains(string(kcmLog), `"Started controller" controller="node-lifecycle-controller"`) {
		t.Error("kube-controller-manager runs the node-lifecycle controller")
	}

	// A reattached stack sees the same running processes.
	loaded, err := Load(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd", "kube-etcd", "kube-apiserver", "kube-controller-manager", "coredns"} {
		p, q := s.Proc(name), loaded.Proc(name)
		if p == nil || q == nil || p.PID() != q.PID() || !q.Running() {
			t.Fatalf("Load: process %s not found running with the same pid", name)
		}
	}

	if err := s.CreateNodes(ctx, NodeSpec{Name: "node-1", InternalIP: []string{"192.0.2.11"}, PodCIDR: "10.244.1.0/24"}); err != nil {
		t.Fatal(err)
	}
	kubeletCtx, stopKubelet := context.WithCancel(ctx)
	kubeletDone := make(chan struct{})
	go func() {
		defer close(kubeletDone)
		RunKubelet(kubeletCtx, s.Kube, []string{"node-1"})
	}()
	defer func() { stopKubelet(); <-kubeletDone }()

	createDemo(ctx, t, s, 2)
	t1 := time.Now()
	skylb, err := s.StartSkylb(ctx, "--address-source=nodes")
	if err != nil {
		t.Fatal(err)
	}
	readyCtx, cancelReady := context.WithDeadline(ctx, t1.Add(10*time.Second))
	defer cancelReady()
	if err := s.WaitSkylbReady(readyCtx, skylb); err != nil {
		t.Fatal(err)
	}
	t.Logf("skylb ready on %s in %.1fs", skylb.HTTPAddr(), time.Since(t1).Seconds())

	// The record reaches etcd, then a real DNS query over UDP answers it. (The
	// first query waits for etcd, so that no negative answer is cached.)
	etcd, err := s.EtcdClient("coredns")
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	deadline := t1.Add(10 * time.Second)
	waitFor(t, deadline, "skylb's record of web.demo in etcd", func() (bool, string) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resp, err := etcd.Get(cctx, "/skydns/org/example/demo/web/", clientv3.WithPrefix())
		if err != nil {
			return false, err.Error()
		}
		return resp.Count > 0, "no key"
	})
	waitFor(t, deadline, "web.demo.example.org A 192.0.2.11 from CoreDNS", func() (bool, string) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := s.LookupA(cctx, "web.demo.example.org")
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(addrs, []string{"192.0.2.11"}), strings.Join(addrs, ",")
	})
	t.Logf("web.demo.example.org answered %.1fs after skylb started", time.Since(t1).Seconds())

	// The simulated kubelet runs the Pods on node-1 with distinct IPs of its range.
	pods, err := s.Kube.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	ips := map[string]bool{}
	podRange := netip.MustParsePrefix("10.244.1.0/24")
	for _, p := range pods.Items {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if p.Spec.NodeName != "node-1" || p.Status.Phase != corev1.PodRunning || err != nil || !podRange.Contains(ip) || ips[ip.String()] {
			t.Errorf("pod %s: node %q, phase %s, ip %q", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
		}
		ips[ip.String()] = true
	}

	// The readiness annotation reaches the EndpointSlice.
	if len(pods.Items) > 0 {
		pod := pods.Items[0]
		patch := `{"metadata":{"annotations":{"` + AnnotationReady + `":"false"}}}`
		if _, err := s.Kube.CoreV1().Pods("demo").Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Now().Add(10*time.Second), "endpoint of "+pod.Name+" not ready", func() (bool, string) {
			slices_, err := s.Kube.DiscoveryV1().EndpointSlices("demo").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
			if err != nil {
				return false, err.Error()
			}
			for _, sl := range slices_.Items {
				for _, ep := range sl.Endpoints {
					if slices.Contains(ep.Addresses, pod.Status.PodIP) && ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
						return true, ""
					}
				}
			}
			return false, "endpoint still ready"
		})
	}

	// Stop leaves no process behind.
	stopKubelet()
	<-kubeletDone
	var pids []int
	for _, p := range s.Procs() {
		pids = append(pids, p.PID())
	}
	s.Stop()
	stopped = true
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Stop (kill -0: %v)", pid, err)
		}
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("child processes left after Stop: %v", kids)
	}
}

// createDemo creates namespace demo with Deployment web and LoadBalancer Service web.
func createDemo(ctx context.Context, t *testing.T, s *Stack, replicas int32) {
	t.Helper()
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	_, err := s.Kube.AppsV1().Deployments("demo").Create(ctx, Deployment("demo", "web", replicas, 80), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Kube.CoreV1().Services("demo").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 100 ms until it holds or deadline passes.
func waitFor(t *testing.T, deadline time.Time, what string, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last: %s)", what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// children returns the pids of this process's child processes.
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}
