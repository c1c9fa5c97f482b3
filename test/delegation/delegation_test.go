// Package delegation proves that people outside the cluster resolve skylb's
// zone through the DNS they already run, after one delegation or one
// conditional forwarder. On loopback addresses, with port 53 (root needed):
//
//	127.0.0.21, 127.0.0.22  two CoreDNS serving k8s.example.com from etcd with
//	                        coredns/Corefile: the zone's nameservers, found by
//	                        skylb through --nameserver-selector (their pods run
//	                        on the nodes dns-1 and dns-2, whose InternalIPs these are)
//	127.0.0.1, a free port  BIND 9, authoritative for the parent zone example.com,
//	                        delegating k8s.example.com with the NS and glue
//	                        records that skylb --print-delegation printed (BIND
//	                        listens only on addresses of the interfaces, and
//	                        only the zone's nameservers need port 53)
//	127.0.0.41              Unbound, a recursive resolver that knows example.com
//	                        (stub zone) and follows the delegation
//	127.0.0.42              Unbound with a conditional forwarder (forward-zone,
//	                        as printed by skylb --print-delegation), the path
//	                        Active Directory DNS users take
//
// Every question is asked of a resolver, as a client outside the cluster asks.
// The resolvers may send queries to 127.0.0.0/8 only.
package delegation

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skylb/skylb/test/stack"
)

var keep = flag.Bool("keep", false, "leave the test's directory (configuration and logs) behind")

const (
	zoneName   = "k8s.example.com"
	parentZone = "example.com"
	ns1Addr    = "127.0.0.21"
	ns2Addr    = "127.0.0.22"
	stubAddr   = "127.0.0.41" // Unbound following the delegation
	fwdAddr    = "127.0.0.42" // Unbound with a conditional forwarder
	ttl        = 5            // skylb's --ttl, seconds
	// selector selects the DNS server's Service, as in coredns/deploy.
	selector = "app.kubernetes.io/name=coredns"
)

// deniedCIDRs is skylb's default --denied-cidrs without loopback: the
// nameservers of this test live on 127.0.0.0/8.
const deniedCIDRs = "169.254.0.0/16,fe80::/10,0.0.0.0/8,::/128,224.0.0.0/4,ff00::/8"

// env is the running setup.
type env struct {
	st      *stack.Stack
	parent  string // BIND's address, 127.0.0.1:port
	dir     string
	skylb   *stack.Proc
	ns      map[string]*stack.Proc // nameserver address -> its CoreDNS
	metrics string                 // skylb's /metrics URL
}

// daemon finds a program in PATH or /usr/sbin (daemons live there, outside
// many users' PATH).
func daemon(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); isExecutable(p) {
		return p
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// canBind53 reports whether this process may listen on port 53 of the test's addresses.
func canBind53() error {
	for _, a := range []string{ns1Addr, ns2Addr, stubAddr, fwdAddr} {
		c, err := net.ListenPacket("udp4", net.JoinHostPort(a, "53"))
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

func TestDelegation(t *testing.T) {
	if missing := stack.MissingBinaries(""); len(missing) > 0 {
		t.Skipf("the real binaries are missing (%s): run scripts/build-bins.sh", strings.Join(missing, ", "))
	}
	named, unbound := daemon("named"), daemon("unbound")
	if named == "" || unbound == "" {
		t.Skip("named (Debian package bind9) or unbound is missing: run scripts/install-deps.sh")
	}
	if err := canBind53(); err != nil {
		t.Skipf("cannot listen on port 53 of 127.0.0.x (run as root): %v", err)
	}
	e := setUp(t, named, unbound)

	t.Run("CoreDNS answers the apex as a delegated zone must", e.testApexAtNameserver)
	for _, r := range []struct{ name, addr string }{{"delegation", stubAddr}, {"forwarder", fwdAddr}} {
		t.Run(r.name, func(t *testing.T) { e.testResolver(t, r.addr) })
	}
	t.Run("one nameserver down", e.testNameserverDown)
	t.Run("fewer than two nameservers", e.testFewerThanTwo)
}

// setUp starts the stack, the zone's two CoreDNS, skylb, the parent zone's
// BIND and both Unbound resolvers.
func setUp(t *testing.T, named, unbound string) *env {
	dir, err := os.MkdirTemp("", "skylb-delegation-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{Dir: dir, Zone: zoneName, Log: os.Stderr})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start stack: %v", err)
	}
	e := &env{st: st, dir: dir, ns: map[string]*stack.Proc{}}
	t.Cleanup(func() {
		st.Stop()
		if t.Failed() {
			for _, p := range st.Procs() {
				switch p.Name {
				case "skylb", "named", "unbound-stub", "unbound-forward", "coredns-ns1", "coredns-ns2":
					fmt.Fprintln(os.Stderr, stack.Tail(p.LogFile(), 30))
				}
			}
		}
		if *keep {
			fmt.Fprintln(os.Stderr, "delegation: files kept in", dir)
		} else {
			os.RemoveAll(dir)
		}
	})

	// The zone's DNS servers: coredns/Corefile as it is, on port 53 of two addresses.
	for i, addr := range []string{ns1Addr, ns2Addr} {
		e.ns[addr] = e.startCoreDNS(t, ctx, fmt.Sprintf("coredns-ns%d", i+1), addr)
	}

	// The cluster: the DNS server's pods run on dns-1 and dns-2, reachable from
	// outside at their InternalIPs, as CoreDNS on host port 53 is.
	if err := st.CreateNodes(ctx,
		stack.NodeSpec{Name: "dns-1", InternalIP: []string{ns1Addr}, PodCIDR: "10.244.1.0/24"},
		stack.NodeSpec{Name: "dns-2", InternalIP: []string{ns2Addr}, PodCIDR: "10.244.2.0/24"},
	); err != nil {
		t.Fatal(err)
	}
	kctx, stopKubelet := context.WithCancel(context.Background())
	t.Cleanup(stopKubelet)
	go stack.RunKubelet(kctx, st.Kube, []string{"dns-1", "dns-2"})
	createDNSServer(t, ctx, st)

	addr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	e.metrics = "http://" + addr + "/metrics"
	e.skylb, err = st.StartSkylb(ctx, "--http-address="+addr, "--ttl=5", "--resync-interval=1m",
		"--nameserver-selector="+selector, "--denied-cidrs="+deniedCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WaitSkylbReady(ctx, e.skylb); err != nil {
		t.Fatal(err)
	}
	// skylb finds both nameservers through the selector.
	stack.Eventually(t, 30*time.Second, "NS "+zoneName+" at "+ns1Addr, func() (bool, string) {
		m, err := stack.Exchange(ns1Addr, zoneName, dns.TypeNS)
		if err != nil {
			return false, err.Error()
		}
		got := nsNames(m)
		return slices.Equal(got, []string{"ns1.ns.dns." + zoneName + ".", "ns2.ns.dns." + zoneName + "."}), fmt.Sprint(got)
	})

	// The parent zone, with the records skylb prints for it.
	out := e.printDelegation(t, ctx)
	if strings.Contains(out, "WARNING") {
		t.Errorf("--print-delegation warns:\n%s", out)
	}
	e.startParent(t, ctx, named, out)
	e.startUnbound(t, ctx, unbound, "unbound-stub", stubAddr, fmt.Sprintf("stub-zone:\n\tname: %q\n\tstub-addr: %s\n", parentZone, unboundAddr(e.parent)))
	e.startUnbound(t, ctx, unbound, "unbound-forward", fwdAddr, unboundForwarder(t, out))
	return e
}

// startCoreDNS runs coredns/Corefile on addr:53 with the stack's etcd and
// certificates. The Corefile's {$VAR}s are filled in here, as CoreDNS fills
// them from its environment.
func (e *env) startCoreDNS(t *testing.T, ctx context.Context, name, addr string) *stack.Proc {
	t.Helper()
	src, err := os.ReadFile(e.st.Corefile)
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]string, 3)
	for i := range ports {
		a, err := stack.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = a
	}
	vars := map[string]string{
		"SKYLB_ZONE": zoneName, "SKYLB_DNS_BIND": addr, "SKYLB_DNS_PORT": "53", "SKYLB_REVERSE_ZONE": "",
		"SKYLB_ETCD_CERT":   filepath.Join(e.st.Certs, "coredns.crt"),
		"SKYLB_ETCD_KEY":    filepath.Join(e.st.Certs, "coredns.key"),
		"SKYLB_ETCD_CA":     filepath.Join(e.st.Certs, "ca.crt"),
		"SKYLB_HEALTH_ADDR": ports[0], "SKYLB_READY_ADDR": ports[1], "SKYLB_METRICS_ADDR": ports[2],
		"SKYLB_DNS_LAMEDUCK": "0s",
		// CoreDNS caps the TTL of its answers at its cache time: with the
		// cache as long as skylb's TTL, resolvers see skylb's TTL.
		"SKYLB_DNS_CACHE_TTL": fmt.Sprint(ttl),
	}
	maps.Copy(vars, stack.EtcdEndpointVars([]string{e.st.EtcdURL}))
	var missing []string
	re := regexp.MustCompile(`\{\$([A-Z0-9_]+)\}`)
	lines := strings.Split(string(src), "\n")
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue // comments are not read
		}
		lines[i] = re.ReplaceAllStringFunc(line, func(m string) string {
			v, ok := vars[m[2:len(m)-1]]
			if !ok {
				missing = append(missing, m)
			}
			return v
		})
	}
	conf := strings.Join(lines, "\n")
	if len(missing) > 0 {
		t.Fatalf("%s uses %q, which this test does not set", e.st.Corefile, missing)
	}
	path := filepath.Join(e.dir, name+".Corefile")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := e.st.StartProcess(name, filepath.Join(e.st.BinDir, "coredns"), "-conf", path, "-dns.port", "53")
	if err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, ctx, p, "http://"+ports[1]+"/ready")
	return p
}

// createDNSServer creates the DNS server's Service, selected by selector, and
// one pod of it on each of dns-1 and dns-2.
func createDNSServer(t *testing.T, ctx context.Context, st *stack.Stack) {
	t.Helper()
	const ns = "skylb-coredns"
	if _, err := st.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lbl := map[string]string{"app.kubernetes.io/name": "coredns"}
	for _, node := range []string{"dns-1", "dns-2"} {
		d := stack.Deployment(ns, "coredns-"+node, 1, 1053)
		d.Spec.Template.Labels["app.kubernetes.io/name"] = "coredns"
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		if _, err := st.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "coredns", Labels: lbl},
		Spec: corev1.ServiceSpec{
			Selector: lbl,
			Ports:    []corev1.ServicePort{{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(1053), Protocol: corev1.ProtocolUDP}},
		},
	}
	if _, err := st.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// printDelegation runs skylb --print-delegation as an administrator would,
// with the selector and the cluster's kubeconfig.
func (e *env) printDelegation(t *testing.T, ctx context.Context) string {
	t.Helper()
	bin, err := e.st.BuildSkylb(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--print-delegation", "--zone="+zoneName, "--kubeconfig="+e.st.Kubeconfig,
		"--nameserver-selector="+selector, "--denied-cidrs="+deniedCIDRs)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("skylb --print-delegation: %v\n%s%s", err, out, stderr.String())
	}
	t.Logf("skylb --print-delegation:\n%s", out)
	for _, want := range []string{
		zoneName + ".\tIN\tNS\tns1.ns.dns." + zoneName + ".",
		zoneName + ".\tIN\tNS\tns2.ns.dns." + zoneName + ".",
		"ns1.ns.dns." + zoneName + ".\tIN\tA\t" + ns1Addr,
		"ns2.ns.dns." + zoneName + ".\tIN\tA\t" + ns2Addr,
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("--print-delegation lacks the line %q", want)
		}
	}
	return string(out)
}

// startParent runs BIND 9 authoritative for example.com, whose zone file ends
// with the output of --print-delegation as it is.
func (e *env) startParent(t *testing.T, ctx context.Context, named, delegation string) {
	t.Helper()
	dir := filepath.Join(e.dir, "named")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.parent, err = stack.FreeAddr(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(e.parent)
	zoneFile := fmt.Sprintf(`$ORIGIN %[1]s.
$TTL 60
@	IN	SOA	ns.%[1]s. hostmaster.%[1]s. 1 60 60 600 60
@	IN	NS	ns.%[1]s.
ns	IN	A	%[2]s
www	IN	A	192.0.2.80
%[3]s`, parentZone, host, delegation)
	conf := fmt.Sprintf(`options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[4]s { %[2]s; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
};
controls { };
zone "%[3]s" { type primary; file "%[1]s/%[3]s.zone"; };
`, dir, host, parentZone, port)
	write(t, filepath.Join(dir, parentZone+".zone"), zoneFile)
	write(t, filepath.Join(dir, "named.conf"), conf)
	p, err := e.st.StartProcess("named", named, "-g", "-4", "-n", "1", "-c", filepath.Join(dir, "named.conf"))
	if err != nil {
		t.Fatal(err)
	}
	waitDNS(t, ctx, p, e.parent, parentZone, dns.TypeSOA)
}

// unboundForwarder returns the Unbound forward-zone that --print-delegation
// prints as a comment, uncommented.
func unboundForwarder(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, ";     forward-zone:"):
			in = true
		case in && !strings.HasPrefix(line, ";       "):
			in = false
		}
		if in {
			b.WriteString(strings.TrimPrefix(line, ";") + "\n")
		}
	}
	if b.Len() == 0 {
		t.Fatalf("no Unbound forward-zone in the output of --print-delegation:\n%s", out)
	}
	return b.String()
}

// startUnbound runs a recursive resolver on addr:53 with extra configuration.
// It may send queries to 127.0.0.0/8 only: every other IPv4 block is refused
// and IPv6 is off; names outside example.com go to BIND, which refuses them.
// (do-not-query-localhost: no lets it query 127.0.0.0/8 at all.)
func (e *env) startUnbound(t *testing.T, ctx context.Context, unbound, name, addr, extra string) {
	t.Helper()
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var notQuery strings.Builder
	for _, block := range []string{"0.0.0.0/2", "64.0.0.0/3", "96.0.0.0/4", "112.0.0.0/5", "120.0.0.0/6", "124.0.0.0/7", "126.0.0.0/8", "128.0.0.0/1"} {
		fmt.Fprintf(&notQuery, "\tdo-not-query-address: %s\n", block)
	}
	conf := fmt.Sprintf(`server:
	interface: %[2]s
	port: 53
	do-ip6: no
	do-daemonize: no
	chroot: ""
	username: ""
	directory: "%[1]s"
	pidfile: "%[1]s/unbound.pid"
	use-syslog: no
	logfile: ""
	verbosity: 1
	log-queries: yes
	num-threads: 1
	access-control: 127.0.0.0/8 allow
	module-config: "iterator"
	do-not-query-localhost: no
%[3]s
%[4]s
forward-zone:
	name: "."
	forward-addr: %[5]s
remote-control:
	control-enable: no
`, dir, addr, notQuery.String(), extra, unboundAddr(e.parent))
	path := filepath.Join(dir, "unbound.conf")
	write(t, path, conf)
	if check := daemon("unbound-checkconf"); check != "" {
		if out, err := exec.CommandContext(ctx, check, path).CombinedOutput(); err != nil {
			t.Fatalf("unbound-checkconf %s: %v\n%s\n%s", path, err, out, conf)
		}
	}
	p, err := e.st.StartProcess(name, unbound, "-d", "-c", path)
	if err != nil {
		t.Fatal(err)
	}
	waitDNS(t, ctx, p, addr, parentZone, dns.TypeSOA)
}

// testApexAtNameserver asks the zone's CoreDNS directly: the apex guard makes
// the apex A and AAAA answers empty, and NS and SOA are unaffected.
func (e *env) testApexAtNameserver(t *testing.T) {
	e.service(t, "apexcheck", "192.0.2.90")
	stack.Eventually(t, 10*time.Second, "apexcheck published", func() (bool, string) {
		m, err := stack.Exchange(ns1Addr, "apexcheck.default."+zoneName, dns.TypeA)
		return err == nil && slices.Equal(stack.Answers(m), []string{"192.0.2.90"}), fmt.Sprint(m, err)
	})
	for _, addr := range []string{ns1Addr, ns2Addr} {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
			m, err := stack.Exchange(addr, zoneName, qt)
			if err != nil {
				t.Fatal(err)
			}
			if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 || !hasSOA(m) {
				t.Errorf("%s %s at %s: %s with %d answers (%v), want NOERROR, no answer, the SOA", dns.TypeToString[qt], zoneName, addr,
					dns.RcodeToString[m.Rcode], len(m.Answer), m.Answer)
			}
		}
		m, err := stack.Exchange(addr, zoneName, dns.TypeNS)
		if err != nil {
			t.Fatal(err)
		}
		if got := nsNames(m); len(got) != 2 || m.Rcode != dns.RcodeSuccess {
			t.Errorf("NS %s at %s = %s %q, want the two nameservers", zoneName, addr, dns.RcodeToString[m.Rcode], got)
		}
		if got := stack.Answers(&dns.Msg{Answer: m.Extra}); !slices.Equal(got, []string{ns1Addr, ns2Addr}) {
			t.Errorf("glue of NS %s at %s = %q, want [%s %s]", zoneName, addr, got, ns1Addr, ns2Addr)
		}
		m, err = stack.Exchange(addr, zoneName, dns.TypeSOA)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Answer) != 1 || m.Answer[0].(*dns.SOA).Ns != "ns.dns."+zoneName+"." {
			t.Errorf("SOA %s at %s = %v, want one SOA naming ns.dns.%s", zoneName, addr, m.Answer, zoneName)
		}
	}
}

// testResolver asks a resolver what a client outside the cluster asks.
func (e *env) testResolver(t *testing.T, resolver string) {
	svc := "web-" + strings.ReplaceAll(resolver, ".", "-")
	name := svc + ".default." + zoneName
	e.service(t, svc, "192.0.2.11")

	// A Service's name resolves to its addresses.
	stack.Eventually(t, 3*ttl*time.Second, name+" through "+resolver, func() (bool, string) {
		m, err := stack.Exchange(resolver, name, dns.TypeA)
		return err == nil && m.Rcode == dns.RcodeSuccess && slices.Equal(stack.Answers(m), []string{"192.0.2.11"}), describe(m, err)
	})

	// NS and SOA at the apex.
	m := mustQuery(t, resolver, zoneName, dns.TypeNS)
	if got, want := nsNames(m), []string{"ns1.ns.dns." + zoneName + ".", "ns2.ns.dns." + zoneName + "."}; !slices.Equal(got, want) {
		t.Errorf("NS %s through %s = %q, want %q", zoneName, resolver, got, want)
	}
	for i, host := range []string{"ns1", "ns2"} {
		m := mustQuery(t, resolver, host+".ns.dns."+zoneName, dns.TypeA)
		if got, want := stack.Answers(m), []string{[]string{ns1Addr, ns2Addr}[i]}; !slices.Equal(got, want) {
			t.Errorf("A %s.ns.dns.%s through %s = %q, want %q", host, zoneName, resolver, got, want)
		}
	}
	m = mustQuery(t, resolver, zoneName, dns.TypeSOA)
	if len(m.Answer) != 1 || m.Answer[0].Header().Rrtype != dns.TypeSOA || m.Answer[0].(*dns.SOA).Ns != "ns.dns."+zoneName+"." {
		t.Errorf("SOA %s through %s = %v, want the SOA of ns.dns.%s", zoneName, resolver, m.Answer, zoneName)
	}

	// The apex does not list the zone's addresses.
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		m := mustQuery(t, resolver, zoneName, qt)
		if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 {
			t.Errorf("%s %s through %s = %s %v, want NOERROR without data", dns.TypeToString[qt], zoneName, resolver, dns.RcodeToString[m.Rcode], m.Answer)
		}
	}

	// A name that does not exist: NXDOMAIN, with the zone's SOA.
	m = mustQuery(t, resolver, "nothing-here.default."+zoneName, dns.TypeA)
	if m.Rcode != dns.RcodeNameError || !hasSOA(m) {
		t.Errorf("A nothing-here.default.%s through %s = %s, SOA %v; want NXDOMAIN with the SOA", zoneName, resolver, dns.RcodeToString[m.Rcode], hasSOA(m))
	}

	// A change in the cluster shows after the TTL. The change is made right
	// after the resolver fetched the old answer, so it may serve the old
	// answer from its cache for the whole TTL.
	stack.Eventually(t, 3*ttl*time.Second, name+" fetched afresh by "+resolver, func() (bool, string) {
		m, err := stack.Exchange(resolver, name, dns.TypeA)
		if err != nil || len(m.Answer) != 1 {
			return false, describe(m, err)
		}
		return m.Answer[0].Header().Ttl >= ttl-1, fmt.Sprintf("TTL %d", m.Answer[0].Header().Ttl)
	})
	// CoreDNS may answer from its cache for up to the TTL, and the resolver
	// from its own for up to the TTL after that.
	limit := 2*ttl*time.Second + 3*time.Second
	changed := time.Now()
	e.setStatus(t, svc, "192.0.2.12")
	var atNS, atResolver time.Duration
	stale := 0
	stack.Eventually(t, limit, name+" changes at the nameserver", func() (bool, string) {
		m, err := stack.Exchange(ns1Addr, name, dns.TypeA)
		atNS = time.Since(changed)
		return err == nil && slices.Equal(stack.Answers(m), []string{"192.0.2.12"}), describe(m, err)
	})
	stack.Eventually(t, limit, name+" changes through "+resolver, func() (bool, string) {
		m, err := stack.Exchange(resolver, name, dns.TypeA)
		atResolver = time.Since(changed)
		if err == nil && slices.Equal(stack.Answers(m), []string{"192.0.2.11"}) {
			stale++
		}
		return err == nil && slices.Equal(stack.Answers(m), []string{"192.0.2.12"}), describe(m, err)
	})
	t.Logf("a change of %s reached the nameserver after %v and the clients of %s after %v (TTL %ds; %d answers from the cache in between)",
		name, atNS.Round(time.Millisecond), resolver, atResolver.Round(time.Millisecond), ttl, stale)
}

// testNameserverDown stops one of the zone's two DNS servers: both resolvers
// keep answering, from the other.
func (e *env) testNameserverDown(t *testing.T) {
	p := e.ns[ns1Addr]
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Restart(context.Background()); err != nil {
			t.Errorf("restart %s: %v", p.Name, err)
		}
	})
	e.service(t, "api", "192.0.2.21")
	for _, resolver := range []string{stubAddr, fwdAddr} {
		start := time.Now()
		stack.Eventually(t, 20*time.Second, "api through "+resolver+" with "+ns1Addr+" down", func() (bool, string) {
			m, err := stack.Exchange(resolver, "api.default."+zoneName, dns.TypeA)
			return err == nil && slices.Equal(stack.Answers(m), []string{"192.0.2.21"}), describe(m, err)
		})
		t.Logf("with %s down, %s answered a new name after %v", ns1Addr, resolver, time.Since(start).Round(time.Millisecond))
	}
}

// testFewerThanTwo takes one DNS node out: skylb publishes one nameserver,
// says so in its log and its metric.
func (e *env) testFewerThanTwo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got := e.metric(t, `skylb_nameservers{zone="`+zoneName+`"}`); got != "2" {
		t.Errorf("skylb_nameservers = %q, want 2", got)
	}
	if err := e.st.SetNodeReady(ctx, "dns-2", false); err != nil {
		t.Fatal(err)
	}
	stack.Eventually(t, 10*time.Second, "one nameserver left", func() (bool, string) {
		m, err := stack.Exchange(ns1Addr, zoneName, dns.TypeNS)
		if err != nil {
			return false, err.Error()
		}
		got := nsNames(m)
		return slices.Equal(got, []string{"ns1.ns.dns." + zoneName + "."}), fmt.Sprint(got)
	})
	if got := e.metric(t, `skylb_nameservers{zone="`+zoneName+`"}`); got != "1" {
		t.Errorf("skylb_nameservers = %q, want 1", got)
	}
	stack.Eventually(t, 5*time.Second, "the warning in skylb's log", func() (bool, string) {
		b, _ := os.ReadFile(e.skylb.LogFile())
		return strings.Contains(string(b), "zone "+zoneName+" has one nameserver"), "no warning"
	})
	if err := e.st.SetNodeReady(ctx, "dns-2", true); err != nil {
		t.Fatal(err)
	}
	stack.Eventually(t, 10*time.Second, "two nameservers again", func() (bool, string) {
		m, err := stack.Exchange(ns1Addr, zoneName, dns.TypeNS)
		if err != nil {
			return false, err.Error()
		}
		return len(nsNames(m)) == 2, fmt.Sprint(nsNames(m))
	})
}

// service creates a LoadBalancer Service of another implementation in
// namespace default, whose status the test writes: skylb publishes it.
func (e *env) service(t *testing.T, name, ip string) {
	t.Helper()
	class := "example.com/other"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: &class,
			Selector:          map[string]string{"app": name},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := e.st.Kube.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.setStatus(t, name, ip)
}

func (e *env) setStatus(t *testing.T, name, ip string) {
	t.Helper()
	ctx := context.Background()
	svc, err := e.st.Kube.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if _, err := e.st.Kube.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// metric returns the value of one sample of skylb's /metrics.
func (e *env) metric(t *testing.T, sample string) string {
	t.Helper()
	resp, err := http.Get(e.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// --- DNS ----------------------------------------------------------------------

// unboundAddr writes host:port as Unbound wants it, host@port.
func unboundAddr(hostPort string) string {
	host, port, _ := net.SplitHostPort(hostPort)
	return host + "@" + port
}

func mustQuery(t *testing.T, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m, err := stack.Exchange(server, name, qtype)
	if err != nil {
		t.Fatalf("%s %s at %s: %v", dns.TypeToString[qtype], name, server, err)
	}
	return m
}

// nsNames returns the sorted NS targets of the answer section.
func nsNames(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if v, ok := rr.(*dns.NS); ok {
			out = append(out, v.Ns)
		}
	}
	slices.Sort(out)
	return out
}

// hasSOA reports whether the authority section holds the zone's SOA.
func hasSOA(m *dns.Msg) bool {
	for _, rr := range m.Ns {
		if v, ok := rr.(*dns.SOA); ok && v.Hdr.Name == zoneName+"." {
			return true
		}
	}
	return false
}

func describe(m *dns.Msg, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s %q", dns.RcodeToString[m.Rcode], stack.Answers(m))
}

// --- processes ----------------------------------------------------------------

// waitDNS waits until the server at addr answers a question, or p exits.
func waitDNS(t *testing.T, ctx context.Context, p *stack.Proc, addr, name string, qtype uint16) {
	t.Helper()
	wait(t, ctx, p, func() error {
		m, err := stack.Exchange(addr, name, qtype)
		if err == nil && m.Rcode != dns.RcodeSuccess {
			err = errors.New(dns.RcodeToString[m.Rcode])
		}
		return err
	})
}

// waitHTTP waits until url answers 200, or p exits.
func waitHTTP(t *testing.T, ctx context.Context, p *stack.Proc, url string) {
	t.Helper()
	wait(t, ctx, p, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}

func wait(t *testing.T, ctx context.Context, p *stack.Proc, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ready()
		if err == nil {
			return
		}
		if !p.Running() {
			time.Sleep(100 * time.Millisecond)
			fmt.Fprintln(os.Stderr, stack.Tail(p.LogFile(), 30))
			t.Fatalf("%s exited: %v", p.Name, p.ExitError())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, stack.Tail(p.LogFile(), 30))
			t.Fatalf("%s not ready: %v", p.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
