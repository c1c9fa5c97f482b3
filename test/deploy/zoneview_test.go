package deploy

import (
	"context"
	"fmt"
	"net"
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
)

const (
	zoneLabel = "topology.kubernetes.io/zone"
	// zoneA is the first node's zone and the name of its view; the other
	// nodes are in zoneB.
	zoneA, zoneB = "zone-a", "zone-b"
	nearName     = "near.default." + zone
)

// zoneView runs a view of one topology zone as coredns/README.md ("Views",
// "Topology") tells, with its one setting: SKYLB_VIEW_ZONE in
// manifests/config.env. skylb writes the view's block into the ConfigMap
// coredns-views, for the networks of the zone's nodes; CoreDNS on port 53 (the
// hostNetwork DaemonSet, which sees the clients' own addresses) gets it
// through its projected volume, and the reloader beside it reloads it. The
// first node is in zone A, the others in zone B: a client on the first node
// is zone A's, the outside client (10.216.0.2) and the host (10.213.0.1) are
// not. A Service with trafficDistribution PreferClose and a pod on every node
// answers zone A's client with zone A's node and the others with every node;
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
	outsider, err := e.c.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}

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

	// The view of zone A: its one setting.
	settings := filepath.Join("manifests", "config.env")
	was := e.readFile(settings)
	e.writeFile(settings, was+fmt.Sprintf("SKYLB_VIEW_ZONE=%s=%s\n", zoneA, zoneA))
	t.Cleanup(func() {
		ctx := ctxT(t, 5*time.Minute)
		e.writeFile(settings, was)
		if out, err := e.shell(ctx, "kubectl apply -k manifests && kubectl -n skylb rollout status deployment/skylb --timeout=3m", 0); err != nil {
			t.Errorf("skylb without the view: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := e.shell(ctx, "kubectl apply -k manifests && kubectl -n skylb rollout status deployment/skylb --timeout=3m", 0); err != nil {
		t.Fatalf("skylb with the view: %v\n%s", err, out)
	}
	rolled := time.Since(start)

	server := net.JoinHostPort(nodeA.IP.String(), "53")
	everyNode := e.webNodes(ctx, "app=near")
	zoneClient := cluster.Client{Netns: nodeA.Netns, IP: nodeA.IP}
	inZone := func() ([]string, error) { return e.digFrom(ctx, zoneClient, server, nearName) }
	outside := func() ([]string, error) { return e.digFrom(ctx, outsider, server, nearName) }
	fromHost := func() ([]string, error) { return query(server, nearName) }

	// The ConfigMap reaches the pods at the kubelet's next sync of them,
	// within about a minute and a half.
	took := e.waitFor(ctx, 4*time.Minute, "zone A's client answered zone A's node", func() bool {
		got, err := inZone()
		return err == nil && slices.Equal(got, []string{nodeA.IP.String()})
	})
	e.settle(ctx, nearName+" asked by the host", fromHost, everyNode)
	e.settle(ctx, nearName+" asked by the outside client", outside, everyNode)
	e.settle(ctx, nearName+" asked by zone A's client", inZone, []string{nodeA.IP.String()})
	t.Logf("measure: SKYLB_VIEW_ZONE set, skylb rolled out in %v; %v later %s answers zone A's client (on %s) %s alone, the host and the outside client every node %v",
		rolled.Round(time.Second), took.Round(time.Second), nearName, nodeA.Name, nodeA.IP, everyNode)

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
	e.settle(ctx, nearName+" asked by the host", fromHost, others)
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
