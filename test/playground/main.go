// Command playground runs skylb on the local stack (package test/stack), with
// a demo to look at and play with. Use it through scripts/playground.sh:
//
//	playground up [--dir DIR]                 start the stack, skylb and the demo, detached
//	playground status [--dir DIR]             list the processes and endpoints
//	playground down [--dir DIR] [--purge]     stop every process; --purge also removes DIR
//	playground node-ready [--dir DIR] NODE true|false
//	                                          set a Node's Ready condition
//	playground kubelet --dir DIR --nodes A,B  the simulated kubelet (started by up)
//
// DIR defaults to <repository>/.playground. Everything listens on 127.0.0.1,
// on fixed ports (see Ports).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skylb/skylb/test/stack"
)

// Ports are the playground's fixed loopback ports.
var Ports = stack.Ports{
	DNS:               15353, // CoreDNS, UDP and TCP
	DNSHealth:         15354, // CoreDNS /health
	DNSReady:          15355, // CoreDNS /ready
	DNSMetrics:        15356, // CoreDNS /metrics
	Etcd:              23790, // DNS etcd, mutual TLS
	EtcdPeer:          23800,
	KubeEtcd:          23791, // the API server's etcd, plain HTTP
	KubeEtcdPeer:      23801,
	APIServer:         16443, // kube-apiserver
	ControllerManager: 16444, // kube-controller-manager /healthz
	Skylb:             18080, // skylb /healthz, /readyz, /metrics
}

const (
	zone      = "example.org"
	namespace = "demo"
)

// nodes of the demo: node-N has InternalIP 192.0.2.1N and PodCIDR 10.244.N.0/24.
var nodes = []stack.NodeSpec{
	{Name: "node-1", InternalIP: []string{"192.0.2.11"}, PodCIDR: "10.244.1.0/24"},
	{Name: "node-2", InternalIP: []string{"192.0.2.12"}, PodCIDR: "10.244.2.0/24"},
	{Name: "node-3", InternalIP: []string{"192.0.2.13"}, PodCIDR: "10.244.3.0/24"},
}

// skylbArgs are skylb's flags besides the stack's connection flags.
var skylbArgs = []string{
	"--zone", zone,
	"--default-namespace", "default",
	"--log-level", "info",
	// The demo Ingress has no status (there is no ingress controller): it
	// resolves to the addresses of this Service.
	"--ingress-service=" + namespace + "/web",
	// CoreDNS listens on 127.0.0.1: the zone's nameserver, published at the
	// apex (NS) with its address (ns1.ns.dns.example.org).
	"--nameserver=ns1=127.0.0.1",
	// The nodes' addresses get PTR records (CoreDNS serves the zone too).
	"--reverse-zone=" + reverseZone,
	// The view internal: its clients (insideClient) get the pods' addresses.
	// skylb writes its CoreDNS block into the ConfigMap coredns-views.
	"--view=internal=pods",
	"--view-network=internal=" + insideClient + "/32",
	stack.ViewsFlag,
}

// insideClient is the client network of the view internal: queries sent
// from 127.0.0.2 are answered from the view's records, those from any other
// address from the default ones.
const insideClient = "127.0.0.2"

// reverseZone is the reverse zone of the nodes' addresses.
const reverseZone = "192.0.2.0/24"

func usage() {
	fmt.Fprint(os.Stderr, `usage: playground up [--skylb-build-flag FLAG]...|status|down [--purge]|node-ready NODE true|false|kubelet [--dir DIR]
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fset := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fset.String("dir", "", "playground directory (default <repository>/.playground)")
	purge := fset.Bool("purge", false, "down: also remove the playground directory")
	nodeList := fset.String("nodes", "", "kubelet: comma-separated nodes to run")
	var buildFlags buildFlagList
	fset.Var(&buildFlags, "skylb-build-flag", "up: a flag of skylb's go build, repeated for several (scripts/playground.sh: the version stamp and the flags of the pinned binaries)")
	_ = fset.Parse(args)
	root, err := stack.FindRoot()
	if err != nil {
		fail(err)
	}
	if *dir == "" {
		*dir = filepath.Join(root, ".playground")
	}
	if *dir, err = filepath.Abs(*dir); err != nil {
		fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "up":
		err = up(ctx, root, *dir, buildFlags)
	case "status":
		var ok bool
		ok, err = status(root, *dir)
		if err == nil && !ok {
			os.Exit(3)
		}
	case "down":
		err = down(*dir, *purge)
	case "node-ready":
		if fset.NArg() != 2 {
			usage()
		}
		err = nodeReady(ctx, *dir, fset.Arg(0), fset.Arg(1))
	case "kubelet":
		err = kubelet(ctx, *dir, *nodeList)
	default:
		usage()
	}
	if err != nil {
		fail(err)
	}
}

// buildFlagList is a repeated flag's values, in order.
type buildFlagList []string

func (l *buildFlagList) String() string { return strings.Join(*l, " ") }

func (l *buildFlagList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "playground:", err)
	os.Exit(1)
}

// up starts the stack, the kubelet, skylb and the demo, all detached.
func up(ctx context.Context, root, dir string, buildFlags []string) (err error) {
	t0 := time.Now()
	if s, lerr := stack.Load(dir); lerr == nil {
		if allRunning(s) {
			fmt.Printf("playground: already up (%s)\n\n", rel(root, dir))
			printInstructions(root, s)
			return nil
		}
		if anyRunning(s) {
			fmt.Println("playground: partly up: stopping what runs, then starting again")
		} else {
			fmt.Println("playground: down: starting again with the state in " + rel(root, dir))
		}
		s.Log = os.Stdout
		if err := s.Shutdown(); err != nil {
			return err
		}
	} else if !errors.Is(lerr, fs.ErrNotExist) {
		return lerr
	}

	corefile, err := stack.CorefileWith(root, filepath.Join(dir, "coredns"), nil)
	if err != nil {
		return err
	}
	opts := stack.Options{Root: root, Dir: dir, Zone: zone, ReverseZones: []string{reverseZone}, Detach: true, Ports: Ports, CacheTTL: 1, Log: os.Stdout,
		SkylbBuildFlags: buildFlags, Corefile: corefile}
	s, err := stack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Println("playground: failed; stopping everything (logs stay in " + rel(root, filepath.Join(dir, "logs")) + ")")
			s.Stop()
		}
	}()
	if err := s.CreateNodes(ctx, nodes...); err != nil {
		return err
	}
	if err := s.InstallGatewayAPI(ctx); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if _, err := s.StartProcess("kubelet", self, "kubelet", "--dir", dir, "--nodes", strings.Join(names, ",")); err != nil {
		return err
	}
	if err := s.CreateViewsConfigMap(ctx); err != nil {
		return err
	}
	skylb, err := s.StartSkylb(ctx, skylbArgs...)
	if err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := s.WaitSkylbReady(readyCtx, skylb); err != nil {
		return err
	}
	if err := viewBlocks(readyCtx, s, filepath.Dir(corefile)); err != nil {
		return err
	}
	if err := createDemo(ctx, s); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := waitAnswers(ctx, s); err != nil {
		return err
	}
	fmt.Printf("playground: up in %.1fs\n\n", time.Since(t0).Seconds())
	printInstructions(root, s)
	return nil
}

func anyRunning(s *stack.Stack) bool {
	return slices.ContainsFunc(s.Procs(), (*stack.Proc).Running)
}

func allRunning(s *stack.Stack) bool {
	procs := s.Procs()
	for _, p := range procs {
		if !p.Running() {
			return false
		}
	}
	return len(procs) > 0
}

// createDemo creates what is missing of: namespace demo, Deployment web (3
// nginx replicas, never pulled), LoadBalancer Service web with a
// skylb.io/hostname annotation, Ingress shop.
func createDemo(ctx context.Context, s *stack.Stack) error {
	kube := s.Kube
	labels := map[string]string{"app": "web"}
	replicas := int32(3)
	objects := []struct {
		what   string
		create func() error
	}{
		{"namespace " + namespace, func() error {
			_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
			return err
		}},
		{"deployment web", func() error {
			_, err := kube.AppsV1().Deployments(namespace).Create(ctx,
				stack.Deployment(namespace, "web", replicas, 80), metav1.CreateOptions{})
			return err
		}},
		{"service web", func() error {
			_, err := kube.CoreV1().Services(namespace).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels, Annotations: map[string]string{
					"skylb.io/hostname": "www." + zone,
				}},
				Spec: corev1.ServiceSpec{
					Type:     corev1.ServiceTypeLoadBalancer,
					Selector: labels,
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
		{"ingress shop", func() error {
			prefix := networkingv1.PathTypePrefix
			_, err := kube.NetworkingV1().Ingresses(namespace).Create(ctx, &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Name: "shop"},
				Spec: networkingv1.IngressSpec{
					TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop." + zone}, SecretName: "shop-tls"}},
					Rules: []networkingv1.IngressRule{{
						Host: "shop." + zone,
						IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
							Paths: []networkingv1.HTTPIngressPath{{
								Path: "/", PathType: &prefix,
								Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
									Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80},
								}},
							}},
						}},
					}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, o := range objects {
		switch err := o.create(); {
		case err == nil:
			fmt.Printf("playground: created %s\n", o.what)
		case apierrors.IsAlreadyExists(err):
			fmt.Printf("playground: %s exists\n", o.what)
		default:
			return fmt.Errorf("%s: %w", o.what, err)
		}
	}
	return nil
}

// waitAnswers waits until CoreDNS answers web.demo.example.org, then (briefly)
// until every demo name answers with all three nodes and the Service shows
// them as its EXTERNAL-IP.
func waitAnswers(ctx context.Context, s *stack.Stack) error {
	t0 := time.Now()
	etcd, err := s.EtcdClient("coredns")
	if err != nil {
		return err
	}
	defer etcd.Close()
	name := "web." + namespace + "." + zone
	// Ask DNS only once etcd has the record: no negative answer gets cached.
	key := "/skydns/" + strings.Join(reverse(strings.Split(name, ".")), "/") + "/"
	if err := poll(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		resp, err := etcd.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count > 0, err
	}); err != nil {
		return fmt.Errorf("no record of %s in etcd (see .playground/logs/skylb.log): %w", name, err)
	}
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		addrs, err := s.LookupA(ctx, name)
		return len(addrs) > 0, err
	}); err != nil {
		return fmt.Errorf("CoreDNS does not answer %s: %w", name, err)
	}
	fmt.Printf("playground: %s answers through CoreDNS (%.1fs)\n", name, time.Since(t0).Seconds())

	want := len(nodes)
	settled := poll(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		for _, n := range []string{name, "www." + zone, "shop." + zone} {
			addrs, err := s.LookupA(ctx, n)
			if err != nil || len(addrs) != want {
				return false, err
			}
		}
		svc, err := s.Kube.CoreV1().Services(namespace).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) == want, err
	})
	if settled != nil {
		fmt.Printf("playground: not every name answers all %d nodes yet (%v)\n", want, settled)
	}
	return nil
}

// viewBlocks puts the views' blocks skylb wrote into the ConfigMap beside
// CoreDNS's Corefile in dir, as the kubelet does for CoreDNS's pods: a new
// file renamed into place. The reloader beside CoreDNS then reloads it.
func viewBlocks(ctx context.Context, s *stack.Stack, dir string) error {
	blocks, err := s.ViewBlocks(ctx, func(b string) bool { return strings.Contains(b, "view internal {") })
	if err != nil {
		return err
	}
	path := filepath.Join(dir, stack.ViewsKey)
	if err := os.WriteFile(path+".new", []byte(blocks), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

func reverse(s []string) []string {
	slices.Reverse(s)
	return s
}

// poll calls cond every 200 ms until it holds, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := cond(cctx)
		cancel()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last == nil {
				last = errors.New("condition not met")
			}
			return fmt.Errorf("after %s: %w", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rel returns path relative to root when it lies below it.
func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// kubectlCommand returns the kubectl the instructions use: bin/kubectl, of
// the stack's Kubernetes version, once scripts/build-bins.sh has built it (the
// tests do); else a kubectl on PATH; else bin/kubectl, with a hint on how to
// build it.
func kubectlCommand(root, binDir string) (command, hint string) {
	built := filepath.Join(binDir, "kubectl")
	if _, err := os.Stat(built); err == nil {
		return rel(root, built), ""
	}
	if _, err := exec.LookPath("kubectl"); err == nil {
		return "kubectl", ""
	}
	return rel(root, built), "(no kubectl on PATH: scripts/build-bins.sh kubectl builds the stack's version into " + rel(root, binDir) + "/)"
}

// printInstructions prints what to try, as commands to run from the repository root.
func printInstructions(root string, s *stack.Stack) {
	kubectl, kubectlHint := kubectlCommand(root, s.BinDir)
	kc := kubectl + " --kubeconfig " + rel(root, s.Kubeconfig)
	dig := "dig @127.0.0.1 -p " + strconv.Itoa(s.Ports.DNS)
	certs := rel(root, s.Certs)
	etcdctl := fmt.Sprintf("%s --endpoints %s --cacert %s/ca.crt --cert %s/coredns.crt --key %s/coredns.key",
		rel(root, filepath.Join(s.BinDir, "etcdctl")), s.EtcdURL, certs, certs, certs)
	onNode1 := kc + " annotate pods -n demo -l app=web --field-selector spec.nodeName=node-1 " + stack.AnnotationReady

	var b strings.Builder
	section := func(title string) { fmt.Fprintf(&b, "\n%s\n", title) }
	cmd := func(comment, command string) {
		if comment != "" {
			fmt.Fprintf(&b, "  # %s\n", comment)
		}
		fmt.Fprintf(&b, "  %s\n", command)
	}
	fmt.Fprintf(&b, "Try these from the repository root (cd %s):\n", root)
	section(fmt.Sprintf("DNS: CoreDNS on %s serves %s from etcd", s.DNSAddr, s.Zone))
	cmd("Service demo/web: the addresses of the nodes that run its ready pods", dig+" web.demo.example.org +short")
	cmd("the same Service, by its skylb.io/hostname annotation", dig+" www.example.org +short")
	cmd("Ingress demo/shop (no status of its own: --ingress-service=demo/web)", dig+" shop.example.org +short")
	cmd("the zone's nameserver (--nameserver=ns1=127.0.0.1) and its address", dig+" example.org NS +short; "+dig+" ns1.ns.dns.example.org +short")
	cmd("a node's address, back to a name that publishes it: the oldest object's (--reverse-zone="+reverseZone+")", dig+" -x 192.0.2.11 +short")
	cmd("the same Service asked from "+insideClient+", a client of the view internal (--view=internal=pods --view-network=internal="+insideClient+"/32; its block, which skylb wrote into the ConfigMap "+stack.ViewsNamespace+"/"+stack.ViewsConfigMap+": "+rel(root, filepath.Join(s.Dir, "coredns", stack.ViewsKey))+"): its pods' addresses",
		dig+" -b "+insideClient+" web.demo.example.org +short")
	cmd("and Ingress demo/shop from there: the pods of its ingress controller's Service (demo/web), as that Service answers in the view", dig+" -b "+insideClient+" shop.example.org +short")
	section("Kubernetes: API server " + s.APIServerURL)
	if kubectlHint != "" {
		cmd("", kubectlHint)
	}
	cmd("EXTERNAL-IP of demo/web: every node's address, which skylb wrote to its status (kube-proxy serves the Service at each)", kc+" get svc -A")
	cmd("three pods, one per node, IPs from the nodes' PodCIDRs; the EndpointSlice", kc+" get pods,endpointslices -n demo -o wide")
	cmd("node-1..3 (192.0.2.11-13): API objects only, no kubelet behind them", kc+" get nodes -o wide")
	cmd("what skylb reports", kc+" get events -n demo --field-selector source=skylb")
	section("etcd: " + s.EtcdURL + " as the read-only user coredns (root.crt/root.key for user root)")
	cmd("the records CoreDNS serves", etcdctl+" get --prefix /skydns/")
	cmd("and those it serves the view internal: the same names, the pods' addresses", etcdctl+" get --prefix /skydns-internal/")
	cmd("the same as a table: name, type CoreDNS serves, owner, claim, expiry (as user skylb, which may read the claims; as coredns, CLAIM shows ?)",
		fmt.Sprintf("%s records --etcd-endpoints %s --etcd-ca-file %s/ca.crt --etcd-cert-file %s/skylb.crt --etcd-key-file %s/skylb.key",
			rel(root, s.SkylbBinary()), s.EtcdURL, certs, certs, certs))
	if p := s.Proc("skylb"); p != nil && p.HTTPAddr() != "" {
		section("skylb: http://" + p.HTTPAddr())
		cmd("readiness and metrics", "curl -s http://"+p.HTTPAddr()+"/readyz; echo; curl -s http://"+p.HTTPAddr()+"/metrics | grep ^skylb_")
	}
	section("Change things and watch the answers follow within a second or two:")
	cmd("in a second terminal", "watch -n 1 "+dig+" web.demo.example.org +short")
	cmd("one pod, one address", kc+" scale deploy/web -n demo --replicas=1")
	cmd("the EXTERNAL-IP stays every node's: each forwards to the pod, and clients holding an older answer are still served", kc+" get svc web -n demo")
	cmd("back to three", kc+" scale deploy/web -n demo --replicas=3")
	cmd("make the pod on node-1 unready (its readiness probe fails): 192.0.2.11 goes", onNode1+"=false --overwrite")
	cmd("and ready again", onNode1+"-")
	cmd("mark node-2 NotReady: 192.0.2.12 goes", "scripts/playground.sh node-ready node-2 false")
	cmd("and Ready again", "scripts/playground.sh node-ready node-2 true")
	cmd("a second Service on the nodes' port 80, which demo/web holds: kube-proxy would serve only one of them", kc+" expose deploy/web -n demo --name=web-copy --type=LoadBalancer --port=80")
	cmd("so it is refused: EXTERNAL-IP <pending>, no records, and a PortConflict Warning naming demo/web", kc+" get svc web-copy -n demo; "+kc+" get events -n demo --field-selector reason=PortConflict")
	section("More:")
	cmd("", "logs: "+rel(root, filepath.Join(s.Dir, "logs"))+"/<process>.log (skylb, coredns, kubelet, kube-apiserver, ...)")
	cmd("", "processes and endpoints: scripts/playground.sh status")
	cmd("", "stop everything: scripts/playground.sh down (down --purge also removes "+rel(root, s.Dir)+")")
	fmt.Print(b.String())
}

// status prints the processes and endpoints; ok means every process runs.
func status(root, dir string) (ok bool, err error) {
	s, err := stack.Load(dir)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Printf("playground: not up (no %s)\n", rel(root, filepath.Join(dir, stack.StateFile)))
		return false, nil
	}
	if err != nil {
		return false, err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "PROCESS\tPID\tSTATE\tLOG")
	ok = true
	for _, p := range s.Procs() {
		state := "running"
		if !p.Running() {
			state, ok = "stopped", false
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", p.Name, p.PID(), state, rel(root, p.LogFile()))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ENDPOINT\tADDRESS")
	fmt.Fprintf(w, "DNS (CoreDNS, UDP/TCP)\t%s (zone %s)\n", s.DNSAddr, s.Zone)
	fmt.Fprintf(w, "CoreDNS health/ready/metrics\thttp://127.0.0.1:%d/health http://127.0.0.1:%d/ready http://127.0.0.1:%d/metrics\n",
		s.Ports.DNSHealth, s.Ports.DNSReady, s.Ports.DNSMetrics)
	fmt.Fprintf(w, "etcd (DNS records, mutual TLS)\t%s (certificates in %s)\n", s.EtcdURL, rel(root, s.Certs))
	fmt.Fprintf(w, "kube-apiserver\t%s (kubeconfig %s)\n", s.APIServerURL, rel(root, s.Kubeconfig))
	fmt.Fprintf(w, "etcd of the API server\t%s\n", s.KubeEtcdURL)
	fmt.Fprintf(w, "kube-controller-manager\thttps://127.0.0.1:%d/healthz\n", s.Ports.ControllerManager)
	if p := s.Proc("skylb"); p != nil && p.HTTPAddr() != "" {
		fmt.Fprintf(w, "skylb\thttp://%[1]s/healthz http://%[1]s/readyz http://%[1]s/metrics\n", p.HTTPAddr())
	}
	_ = w.Flush()
	switch {
	case ok:
		fmt.Println("\nplayground: up")
	case !anyRunning(s):
		fmt.Println("\nplayground: down (scripts/playground.sh up starts it again)")
	default:
		fmt.Println("\nplayground: not fully up (scripts/playground.sh up starts it again)")
	}
	return ok, nil
}

// down stops every process of the playground; purge also removes dir.
func down(dir string, purge bool) error {
	s, err := stack.Load(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Println("playground: not up")
	case err != nil:
		return err
	default:
		s.Log = os.Stdout
		if err := s.Shutdown(); err != nil {
			return err
		}
		for _, p := range s.Procs() {
			if p.Running() {
				return fmt.Errorf("%s (pid %d) still runs", p.Name, p.PID())
			}
		}
		// The processes were detached: init reaps them. Give it a moment, so
		// that ps shows nothing either.
		deadline := time.Now().Add(5 * time.Second)
		for _, p := range s.Procs() {
			for time.Now().Before(deadline) {
				if _, err := os.Stat("/proc/" + strconv.Itoa(p.PID())); err != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		fmt.Println("playground: down, no process left")
	}
	if purge {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		fmt.Println("playground: removed", dir)
	}
	return nil
}

// nodeReady sets a Node's Ready condition.
func nodeReady(ctx context.Context, dir, node, value string) error {
	ready, err := strconv.ParseBool(value)
	if err != nil {
		return fmt.Errorf("node-ready %s: %q is neither true nor false", node, value)
	}
	s, err := stack.Load(dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.SetNodeReady(ctx, node, ready); err != nil {
		return err
	}
	fmt.Printf("playground: node %s Ready=%t\n", node, ready)
	return nil
}

// kubelet runs the simulated kubelet until it is signalled.
func kubelet(ctx context.Context, dir, nodeList string) error {
	s, err := stack.Load(dir)
	if err != nil {
		return err
	}
	var names []string
	if nodeList != "" {
		names = strings.Split(nodeList, ",")
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.Printf("kubelet: running the pods of %s", strings.Join(names, ", "))
	k := stack.NewKubelet(s.Kube, names)
	k.Logf = log.Printf
	k.Run(ctx)
	log.Print("kubelet: stopped")
	return nil
}
