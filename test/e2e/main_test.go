// Package e2e proves skylb end to end on the real local stack: a real etcd with
// mutual TLS and RBAC, kube-apiserver, kube-controller-manager, CoreDNS with the
// etcd plugin, and the skylb binary. Every case asks CoreDNS over UDP.
package e2e

import (
	"context"
	"debug/buildinfo"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/skylb/skylb/test/stack"
)

var (
	keep      = flag.Bool("keep", false, "leave the stack's directory (logs) behind")
	skylbRace = flag.Bool("skylb-race", false, "build skylb with the race detector (go build -race) and fail when any skylb reports a data race")
	st        *stack.Stack
)

// Nodes of the test cluster. Their addresses are documentation addresses, used
// only as data in DNS answers; nothing is ever sent to them.
// The nodes are in two topology zones: node-1 in zone-a, the others in
// zone-b.
var nodes = []stack.NodeSpec{
	{Name: "node-1", InternalIP: []string{"192.0.2.11", "2001:db8::11"}, PodCIDR: "10.244.1.0/24", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}},
	{Name: "node-2", InternalIP: []string{"192.0.2.12", "2001:db8::12"}, PodCIDR: "10.244.2.0/24", Labels: map[string]string{corev1.LabelTopologyZone: "zone-b"}},
	{Name: "node-3", InternalIP: []string{"192.0.2.13", "2001:db8::13"}, PodCIDR: "10.244.3.0/24", Labels: map[string]string{corev1.LabelTopologyZone: "zone-b"}},
}

// reverseZones are the reverse zones CoreDNS serves and skylb publishes PTR
// records in: those of the nodes' addresses.
var reverseZones = []string{"192.0.2.0/24", "2001:db8::/32"}

// skylbArgs are the flags of the skylb under test, besides those the stack sets.
// viewNames are skylb's views besides the default one.
var viewNames = []string{"internal", "zone-a"}

// viewTrees returns the prefixes of the views' records, "/skydns-<view>/".
func viewTrees() []string {
	var out []string
	for _, v := range viewNames {
		out = append(out, "/skydns-"+v+"/")
	}
	return out
}

// skylb publishes the views internal and zone-a too: every test runs with
// them, and views_test.go asks CoreDNS from their client addresses. Their
// CoreDNS blocks are skylb's, in the ConfigMap CoreDNS's manifests ship.
var skylbArgs = []string{"--default-namespace=default", "--resync-interval=1m", "--log-level=debug", "--apex-namespaces=owner", "--dnsendpoint",
	"--reverse-zone=" + reverseZones[0], "--reverse-zone=" + reverseZones[1], "--view=internal=pods", "--view-zone=zone-a=zone-a",
	"--view-network=internal=" + insideAddr + "/32", "--view-network=zone-a=" + zoneAAddr + "/32", stack.ViewsFlag}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	root, err := stack.FindRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "kube-apiserver")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: skipped: the real binaries are missing; run scripts/build-bins.sh")
		if *skylbRace {
			return 1 // asked for, the race run does not pass without running
		}
		return 0
	}
	dir, err := os.MkdirTemp("", "skylb-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	opts := stack.Options{Root: root, Dir: dir, Zone: "example.org", ReverseZones: reverseZones, Log: os.Stderr}
	if *skylbRace {
		opts.SkylbBuildFlags = []string{"-race"}
		// Every skylb of the suite, started by the stack or by a test,
		// writes its reports to stderr (the stack's logs, which are read
		// at the end), keeps running after a race so that the suite goes on
		// and finds the others, and exits 66 when it found one: whatever
		// GORACE the caller set.
		os.Setenv("GORACE", "halt_on_error=0 exitcode=66")
	}
	st, err = stack.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start stack:", err)
		return 1
	}
	defer func() {
		st.Stop()
		keepDir := *keep
		if *skylbRace {
			if err := checkDataRaces(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: FAIL:", err)
				code, keepDir = 1, true
			}
		}
		if !keepDir {
			os.RemoveAll(dir)
		} else {
			fmt.Fprintln(os.Stderr, "e2e: logs kept in", dir)
		}
	}()
	if err := st.CreateNodes(ctx, nodes...); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: create nodes:", err)
		return 1
	}
	kctx, stopKubelet := context.WithCancel(context.Background())
	defer stopKubelet()
	if err := st.RunKubelet(kctx, nodeNames()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kubelet:", err)
		return 1
	}
	httpAddr, err := stack.FreeAddr() // skylb's /healthz, /readyz and /metrics
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := st.CreateViewsConfigMap(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the views' ConfigMap:", err)
		return 1
	}
	skylbArgs = append(skylbArgs, "--http-address="+httpAddr)
	sk, err := st.StartSkylb(ctx, skylbArgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start skylb:", err)
		return 1
	}
	if err := st.WaitSkylbReady(ctx, sk); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: skylb:", err)
		return 1
	}
	// The Gateway API is installed after skylb has started, as in a cluster
	// that adds it later: the gateway tests prove skylb picks it up.
	if err := st.InstallGatewayAPI(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	gatewayInstalled = time.Now()
	if *skylbRace && !builtRace(st.SkylbBinary()) {
		fmt.Fprintln(os.Stderr, "e2e: -skylb-race: skylb is not built with the race detector:", st.SkylbBinary())
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: stack up in %v\n", time.Since(start).Round(time.Millisecond))
	code = m.Run()
	if code != 0 {
		for _, name := range []string{"skylb", "coredns", "etcd"} {
			if p := st.Proc(name); p != nil {
				fmt.Fprintln(os.Stderr, stack.Tail(p.LogFile(), 40))
			}
		}
	}
	return code
}

// checkDataRaces prints the race detector's reports in the logs of the
// stopped stack, each with its log file, and fails when there is one.
func checkDataRaces() error {
	races, err := st.DataRaces()
	if err != nil {
		return fmt.Errorf("-skylb-race: read the logs: %w", err)
	}
	logs := map[string]bool{}
	for _, r := range races {
		fmt.Fprintf(os.Stderr, "e2e: a data race in %s:\n%s\n", r.Log, r.Report)
		logs[r.Log] = true
	}
	if len(races) > 0 {
		return fmt.Errorf("skylb built -race reported %d data race(s), in %s", len(races), strings.Join(slices.Sorted(maps.Keys(logs)), ", "))
	}
	fmt.Fprintln(os.Stderr, "e2e: skylb built -race reported no data race")
	return nil
}

// builtRace reports whether the binary at path was built with -race.
func builtRace(path string) bool {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return false
	}
	return slices.Contains(info.Settings, debug.BuildSetting{Key: "-race", Value: "true"})
}

func nodeNames() []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// within waits up to limit for CoreDNS to answer name with exactly want (A and
// AAAA records together), or with NXDOMAIN when want is empty, and returns how
// long it took.
func within(t *testing.T, limit time.Duration, name string, want ...string) time.Duration {
	t.Helper()
	slices.Sort(want)
	start := time.Now()
	var last string
	for {
		got, rcode, err := addresses(name)
		switch {
		case err != nil:
			last = err.Error()
		case len(want) == 0 && rcode == dns.RcodeNameError:
			return time.Since(start)
		case len(want) > 0 && slices.Equal(got, want):
			return time.Since(start)
		default:
			last = fmt.Sprintf("%s %q", dns.RcodeToString[rcode], got)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: CoreDNS answers %s after %v, want %q (NXDOMAIN if empty)", name, last, limit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// withinType waits up to limit for CoreDNS to answer a query of name and
// qtype with exactly want (as stack.Answers writes them), or with NXDOMAIN
// when want is empty, and returns how long it took.
func withinType(t *testing.T, limit time.Duration, name string, qtype uint16, want ...string) time.Duration {
	t.Helper()
	slices.Sort(want)
	start := time.Now()
	stack.Eventually(t, limit, fmt.Sprintf("%s %s answers %q (NXDOMAIN if empty)", dns.TypeToString[qtype], name, want), func() (bool, string) {
		rcode, got, err := stack.Query(st.DNSAddr, name, qtype)
		if err != nil {
			return false, err.Error()
		}
		if len(want) == 0 {
			return rcode == dns.RcodeNameError, fmt.Sprintf("%s %q", dns.RcodeToString[rcode], got)
		}
		return rcode == dns.RcodeSuccess && slices.Equal(got, want), fmt.Sprintf("%s %q", dns.RcodeToString[rcode], got)
	})
	return time.Since(start)
}

// addresses returns the A and AAAA answers of name together.
func addresses(name string) ([]string, int, error) {
	rcode, a, err := stack.Query(st.DNSAddr, name, dns.TypeA)
	if err != nil {
		return nil, 0, err
	}
	_, aaaa, err := stack.Query(st.DNSAddr, name, dns.TypeAAAA)
	if err != nil {
		return nil, 0, err
	}
	out := append(a, aaaa...)
	slices.Sort(out)
	return slices.Compact(out), rcode, nil
}

// quick is the bound for changes skylb sees directly.
const quick = 2 * time.Second

// slow is the bound for changes that first pass through kube-controller-manager
// and the simulated kubelet.
const slow = 15 * time.Second

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func namespace(t *testing.T, name string) {
	t.Helper()
	_, err := st.Kube.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// deploy creates a Deployment whose pods the simulated kubelet runs, pinned to nodes.
func deploy(t *testing.T, ns, name string, replicas int32, onNode string) {
	t.Helper()
	d := stack.Deployment(ns, name, replicas, 8080)
	if onNode != "" {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": onNode}
	}
	if _, err := st.Kube.AppsV1().Deployments(ns).Create(ctxT(t), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s/%s: %v", ns, name, err)
	}
}

// scale sets the replicas of a Deployment, again after a conflict with
// kube-controller-manager's own updates.
func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := st.Kube.AppsV1().Deployments(ns).GetScale(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = st.Kube.AppsV1().Deployments(ns).UpdateScale(ctxT(t), name, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

type svcOpt func(*corev1.Service)

// ownPorts numbers the ports lbService gives the Services of the nodes source.
var ownPorts atomic.Int32

func lbService(t *testing.T, ns, name string, opts ...svcOpt) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(svc)
	}
	// skylb serves one Service of the nodes source per port at the nodes'
	// addresses (PortConflict): each gets a port of its own, unless the
	// test chose one.
	if svc.Spec.LoadBalancerClass == nil && svc.Annotations["skylb.io/address-source"] != "pods" &&
		len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Name == "http" && svc.Spec.Ports[0].Port == 80 {
		svc.Spec.Ports[0].Port = 10000 + int32(ownPorts.Add(1))
	}
	out, err := st.Kube.CoreV1().Services(ns).Create(ctxT(t), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	return out
}

func annotate(key, value string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[key] = value
	}
}

// externalIPs returns what kubectl shows as EXTERNAL-IP.
func externalIPs(t *testing.T, ns, name string) []string {
	t.Helper()
	svc, err := st.Kube.CoreV1().Services(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		out = append(out, ing.IP+ing.Hostname)
	}
	slices.SortFunc(out, func(a, b string) int {
		x, errx := netip.ParseAddr(a)
		y, erry := netip.ParseAddr(b)
		if errx != nil || erry != nil {
			return strings.Compare(a, b)
		}
		return x.Compare(y)
	})
	return out
}
