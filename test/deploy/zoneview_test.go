package deploy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/stack"
)

const (
	zoneLabel = "topology.kubernetes.io/zone"
	// zoneA is the first node's zone and the name of its view; the other
	// nodes are in zoneB.
	zoneA, zoneB = "zone-a", "zone-b"
	nearName     = "near.default." + zone
)

// zoneView runs a view of one topology zone as coredns/README.md ("Views",
// "Topology") tells, in the three settings it names: skylb's --view and
// --view-zone in manifests/config.env, the view in the etcd RBAC Job's
// SKYLB_VIEWS, and the view's file beside the Corefile of CoreDNS on port 53
// (the hostNetwork DaemonSet, which sees the clients' own addresses). The
// first node is in zone A, the others in zone B; the outside client
// (10.216.0.2) is zone A's client, the host (10.213.0.1) everyone else. A
// Service with trafficDistribution PreferClose and a pod on every node
// answers zone A's client with zone A's node and the host with every node;
// once zone A's pod is gone, zone A's client gets the other nodes.
func (e *env) zoneView(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 12*time.Minute)
	nodeA := e.c.Nodes[0]
	for _, n := range e.c.Nodes {
		z := zoneB
		if n.Name == nodeA.Name {
			z = zoneA
		}
		e.kubectl(ctx, "label", "node", n.Name, zoneLabel+"="+z, "--overwrite")
	}
	t.Cleanup(func() {
		ctx := ctxT(t, 5*time.Minute)
		for _, n := range e.c.Nodes {
			e.c.Kubectl(ctx, "label", "node", n.Name, zoneLabel+"-")
		}
	})
	client, err := e.c.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	// etcd: the RBAC Job grants the view's prefix. A Job cannot be
	// changed: delete it and apply etcd again (manifests/README.md).
	job := filepath.Join("etcd", "deploy", "rbac-bootstrap-job.yaml")
	e.editFile(job, "- name: SKYLB_VIEWS\n          value: \"\"", "- name: SKYLB_VIEWS\n          value: "+zoneA)
	e.kubectl(ctx, "-n", "skylb-dns", "delete", "job", "etcd-rbac-bootstrap", "--wait=true")
	if out, err := e.shell(ctx, "kubectl apply -k etcd", 0); err != nil {
		t.Fatalf("kubectl apply -k etcd: %v\n%s", err, out)
	}
	e.kubectl(ctx, "-n", "skylb-dns", "wait", "--for=condition=complete", "job/etcd-rbac-bootstrap", "--timeout=5m")

	// skylb: the view and its zone, in its settings.
	settings := filepath.Join("manifests", "config.env")
	was := e.readFile(settings)
	e.writeFile(settings, was+fmt.Sprintf("SKYLB_VIEW=%s=auto\nSKYLB_VIEW_ZONE=%s=%s\n", zoneA, zoneA, zoneA))
	t.Cleanup(func() {
		ctx := ctxT(t, 5*time.Minute)
		e.writeFile(settings, was)
		if out, err := e.shell(ctx, "kubectl apply -k manifests && kubectl -n skylb rollout status deployment/skylb --timeout=3m", 0); err != nil {
			t.Errorf("skylb without the view: %v\n%s", err, out)
		}
	})
	if out, err := e.shell(ctx, "kubectl apply -k manifests && kubectl -n skylb rollout status deployment/skylb --timeout=3m", 0); err != nil {
		t.Fatalf("skylb with the view: %v\n%s", err, out)
	}

	// CoreDNS: the view's block, from the shipped example, for the
	// outside client's network.
	view, err := stack.ViewBlock(e.work, zoneA, netip.PrefixFrom(client.IP, 32).String())
	if err != nil {
		t.Fatal(err)
	}
	e.applyHostNetwork(ctx, map[string]string{zoneA + ".view": view})
	t.Cleanup(func() { e.applyHostNetwork(ctxT(t, 5*time.Minute), nil) })
	t.Logf("measure: the view of %s set in etcd's RBAC Job, skylb and CoreDNS, each rolled out: %v", zoneA, time.Since(start).Round(time.Second))

	// A pod on every node, and the Service that prefers its client's zone.
	for i, n := range e.c.Nodes {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("near-%d", i+1), Labels: map[string]string{"app": "near"}},
			Spec: corev1.PodSpec{
				NodeName:   n.Name,
				Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
			},
		}
		if _, err := e.kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	prefer := corev1.ServiceTrafficDistributionPreferClose
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "near"},
		Spec: corev1.ServiceSpec{
			Type:                corev1.ServiceTypeLoadBalancer,
			Selector:            map[string]string{"app": "near"},
			Ports:               []corev1.ServicePort{{Port: 8093, TargetPort: intstr.FromInt32(8093)}}, // web has 80 at the nodes
			TrafficDistribution: &prefer,
		},
	}
	if _, err := e.kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := ctxT(t, 2*time.Minute)
		e.c.Kubectl(ctx, "delete", "service", "near", "--ignore-not-found", "--wait=true", "--timeout=1m")
		e.c.Kubectl(ctx, "delete", "pods", "-l", "app=near", "--ignore-not-found", "--wait=true", "--timeout=1m")
	})
	e.waitFor(ctx, 2*time.Minute, "a ready pod of near on every node", func() bool {
		return len(e.webNodes(ctx, "app=near")) == len(e.c.Nodes)
	})

	server := net.JoinHostPort(nodeA.IP.String(), "53")
	everyNode := e.webNodes(ctx, "app=near")
	outside := func() ([]string, error) { return query(server, nearName) }
	inZone := func() ([]string, error) { return e.digFrom(ctx, client, server, nearName) }

	took := e.waitFor(ctx, time.Minute, "zone A's client answered zone A's node", func() bool {
		got, err := inZone()
		return err == nil && slices.Equal(got, []string{nodeA.IP.String()})
	})
	e.settle(ctx, nearName+" asked by the host", outside, everyNode)
	e.settle(ctx, nearName+" asked by zone A's client", inZone, []string{nodeA.IP.String()})
	t.Logf("measure: %s answers zone A's client (%s) %s alone %v after its pods were ready, the host every node %v",
		nearName, client.IP, nodeA.IP, took.Round(10*time.Millisecond), everyNode)

	// Zone A's pod goes: its client gets the other zone's nodes, as
	// kube-proxy would send it there.
	start = time.Now()
	if err := e.kube.CoreV1().Pods("default").Delete(ctx, "near-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var others []string
	for _, ip := range everyNode {
		if ip != nodeA.IP.String() {
			others = append(others, ip)
		}
	}
	took = e.waitFor(ctx, time.Minute, "zone A's client answered the other zone's nodes", func() bool {
		got, err := inZone()
		return err == nil && slices.Equal(got, others)
	})
	t.Logf("measure: zone A's pod deleted: zone A's client gets %v after %v", others, took.Round(10*time.Millisecond))
	e.settle(ctx, nearName+" asked by zone A's client", inZone, others)
	e.settle(ctx, nearName+" asked by the host", outside, others)
}

// digFrom asks server for name's addresses with dig in the client's network
// namespace, and returns them sorted.
func (e *env) digFrom(ctx context.Context, client cluster.Client, server, name string) ([]string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := client.Command(cctx, "dig", "+time=2", "+tries=1", "+noall", "+answer", "+comments", "-p", port, "@"+host, name, "A").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("dig: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "status: NOERROR") {
		return nil, fmt.Errorf("dig: %s", out)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[3] == "A" {
			got = append(got, f[4])
		}
	}
	slices.Sort(got)
	return got, nil
}

// readFile returns a file of the copy of the repository.
func (e *env) readFile(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.work, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// writeFile writes a file of the copy of the repository.
func (e *env) writeFile(rel, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.work, rel), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// editFile replaces old, which must be there, with new in a file of the copy
// of the repository, as a user edits it.
func (e *env) editFile(rel, old, new string) {
	e.t.Helper()
	s := e.readFile(rel)
	if !strings.Contains(s, old) {
		e.t.Fatalf("%s has no %q", rel, old)
	}
	e.writeFile(rel, strings.Replace(s, old, new, 1))
}
