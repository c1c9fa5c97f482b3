package stack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/internal/corefile"
	"github.com/skylb/skylb/internal/dnsname"
)

// Controllers are the kube-controller-manager controllers the stack runs.
// Deliberately absent: node-lifecycle-controller (there are no kubelet
// heartbeats, so it would mark every Node NotReady and evict its Pods),
// node-ipam-controller (CreateNodes sets PodCIDRs), and the controllers of
// workloads and volumes nothing here uses.
var Controllers = []string{
	"clusterrole-aggregation-controller",
	"deployment-controller",
	"endpointslice-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"replicaset-controller",
	"root-ca-certificate-publisher-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
}

// serviceCIDR is the Service cluster IP range of the API server.
const serviceCIDR = "10.96.0.0/16"

// componentSpec is how to run one of the stack's processes.
type componentSpec struct {
	path string
	args []string
	env  []string
}

// component returns the command line of one of the stack's own processes.
func (s *Stack) component(name string) (componentSpec, error) {
	p := s.Ports
	kube := s.kubeDir()
	if m, ok := s.etcdMember(name); ok {
		return s.etcdSpec(m), nil
	}
	switch name {
	case "kube-etcd":
		peer := fmt.Sprintf("http://127.0.0.1:%d", p.KubeEtcdPeer)
		return componentSpec{path: s.bin("etcd"), args: []string{
			"--name=kube",
			"--data-dir=" + filepath.Join(kube, "etcd-data"),
			"--listen-client-urls=" + s.KubeEtcdURL,
			"--advertise-client-urls=" + s.KubeEtcdURL,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=kube=" + peer,
			"--log-level=warn",
		}}, nil
	case "kube-apiserver":
		// The admission plugins are the defaults: nothing here needs one
		// disabled. (TaintNodesByCondition gives new Nodes the not-ready
		// taint; CreateNodes removes it, as the node-lifecycle controller
		// would once the Node is Ready.)
		return componentSpec{path: s.bin("kube-apiserver"), args: []string{
			"--etcd-servers=" + s.KubeEtcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.APIServer),
			"--cert-dir=" + filepath.Join(kube, "certs"),
			"--service-cluster-ip-range=" + serviceCIDR,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + filepath.Join(kube, "sa.pub"),
			"--service-account-signing-key-file=" + filepath.Join(kube, "sa.key"),
			"--authorization-mode=RBAC",
			"--token-auth-file=" + filepath.Join(kube, "tokens.csv"),
			"--endpoint-reconciler-type=none",
			"--profiling=false",
			"--v=1",
		}}, nil
	case "kube-controller-manager":
		return componentSpec{path: s.bin("kube-controller-manager"), args: []string{
			"--kubeconfig=" + s.Kubeconfig,
			"--authentication-kubeconfig=" + s.Kubeconfig,
			"--authorization-kubeconfig=" + s.Kubeconfig,
			"--authentication-skip-lookup=true",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.ControllerManager),
			"--cert-dir=" + filepath.Join(kube, "kcm-certs"),
			"--service-account-private-key-file=" + filepath.Join(kube, "sa.key"),
			"--root-ca-file=" + filepath.Join(kube, "certs", "apiserver.crt"),
			"--service-cluster-ip-range=" + serviceCIDR,
			"--flex-volume-plugin-dir=" + filepath.Join(kube, "flexvolume"),
			"--controllers=" + strings.Join(Controllers, ","),
			"--leader-elect=false",
			"--profiling=false",
			"--v=1",
		}}, nil
	case "coredns":
		spec, err := s.corednsSpec("coredns", s.Corefile, s.CacheTTL, p.DNS, p.DNSHealth, p.DNSReady, p.DNSMetrics)
		spec.args = append(spec.args, "-pidfile", s.CoreDNSPIDFile())
		return spec, err
	case "coredns-reloader":
		// As in CoreDNS's pod, it watches the views' blocks beside the
		// Corefile.
		return componentSpec{path: s.SkylbBinary(), args: s.reloaderArgs(s.CoreDNSPIDFile(),
			"--watch="+filepath.Join(filepath.Dir(s.Corefile), "*.view"))}, nil
	}
	return componentSpec{}, fmt.Errorf("stack: unknown component %q", name)
}

// reloaderArgs are the arguments of skylb coredns-reloader beside the
// CoreDNS whose pid file is pidFile: as in CoreDNS's pod, CoreDNS's client
// certificate and every member.
func (s *Stack) reloaderArgs(pidFile string, extra ...string) []string {
	return append([]string{"coredns-reloader",
		"--pid-file=" + pidFile,
		"--etcd-endpoints=" + strings.Join(s.EtcdURLs, ","),
		"--etcd-ca-file=" + filepath.Join(s.Certs, "ca.crt"),
		"--etcd-cert-file=" + filepath.Join(s.Certs, "coredns.crt"),
		"--etcd-key-file=" + filepath.Join(s.Certs, "coredns.key"),
	}, extra...)
}

// StartReloader runs skylb coredns-reloader as the named process beside the
// CoreDNS StartCoreDNS started as coredns, with the extra flags (such as
// --watch). Stop stops it with the rest of the stack.
func (s *Stack) StartReloader(name, coredns string, extra ...string) (*Proc, error) {
	return s.StartProcess(name, s.SkylbBinary(), s.reloaderArgs(s.pidFile(coredns), extra...)...)
}

// pidFile is where a CoreDNS started by StartCoreDNS writes its pid.
func (s *Stack) pidFile(name string) string { return filepath.Join(s.Dir, name+".pid") }

// CoreDNSPIDFile is where the stack's CoreDNS writes its pid (-pidfile), for
// skylb coredns-reloader.
func (s *Stack) CoreDNSPIDFile() string { return s.pidFile("coredns") }

// corednsSpec is the command line of the CoreDNS name serving the zone from
// the DNS etcd with corefile, on the given loopback ports. As in CoreDNS's
// pod, corefile's zones are written in first (skylb corefile's
// corefile.Render), into <Dir>/<name>.Corefile, which CoreDNS reads.
func (s *Stack) corednsSpec(name, corefile string, cacheTTL, dns, health, ready, metrics int) (componentSpec, error) {
	conf, err := s.renderCorefile(name, corefile)
	if err != nil {
		return componentSpec{}, err
	}
	env := []string{
		"SKYLB_DNS_BIND=127.0.0.1",
		"SKYLB_DNS_PORT=" + strconv.Itoa(dns),
		"SKYLB_DNS_CACHE_TTL=" + strconv.Itoa(cacheTTL),
		"SKYLB_ETCD_CERT=" + filepath.Join(s.Certs, "coredns.crt"),
		"SKYLB_ETCD_KEY=" + filepath.Join(s.Certs, "coredns.key"),
		"SKYLB_ETCD_CA=" + filepath.Join(s.Certs, "ca.crt"),
		fmt.Sprintf("SKYLB_HEALTH_ADDR=127.0.0.1:%d", health),
		"SKYLB_DNS_LAMEDUCK=0s",
		fmt.Sprintf("SKYLB_READY_ADDR=127.0.0.1:%d", ready),
		fmt.Sprintf("SKYLB_METRICS_ADDR=127.0.0.1:%d", metrics),
	}
	for name, url := range EtcdEndpointVars(s.EtcdURLs) {
		env = append(env, name+"="+url)
	}
	return componentSpec{
		path: s.bin("coredns"),
		// The Corefile's zones take the port of -dns.port.
		args: []string{"-conf", conf, "-dns.port", strconv.Itoa(dns)},
		env:  env,
	}, nil
}

// renderCorefile writes corefile with the stack's zone and reverse zones in
// place of their variables into <Dir>/<name>.Corefile, and returns its path.
func (s *Stack) renderCorefile(name, path string) (string, error) {
	template, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("stack: %w", err)
	}
	// withDefaults checked the reverse zones.
	reverse, _ := dnsname.ParseReverseZones(s.ReverseZones)
	names := dnsname.WithReverse(nil, reverse)
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	out := filepath.Join(s.Dir, name+".Corefile")
	return out, os.WriteFile(out, []byte(corefile.Render(string(template), dir, []string{s.Zone}, names)), 0o644)
}

// StartCoreDNS runs one more CoreDNS as the named process, serving the zone
// from the DNS etcd with corefile (default Options.Corefile) and cacheTTL
// (SKYLB_DNS_CACHE_TTL; 0 means Options.CacheTTL), on free loopback ports. It
// returns once the new CoreDNS is ready, with its DNS address (UDP and TCP).
// Stop stops it with the rest of the stack.
func (s *Stack) StartCoreDNS(ctx context.Context, name, corefile string, cacheTTL int) (*Proc, string, error) {
	if corefile == "" {
		corefile = s.Corefile
	}
	if cacheTTL <= 0 {
		cacheTTL = s.CacheTTL
	}
	taken := map[int]bool{}
	var ports [4]int
	for i := range ports {
		port, err := freePort(taken)
		if err != nil {
			return nil, "", err
		}
		taken[port], ports[i] = true, port
	}
	spec, err := s.corednsSpec(name, corefile, cacheTTL, ports[0], ports[1], ports[2], ports[3])
	if err != nil {
		return nil, "", err
	}
	spec.args = append(spec.args, "-pidfile", s.pidFile(name))
	p := s.newProc(name, spec.path, spec.args, spec.env)
	readyURL := fmt.Sprintf("http://127.0.0.1:%d/ready", ports[2])
	p.ready = func(ctx context.Context) error {
		_, err := httpGet(ctx, http.DefaultClient, readyURL, "")
		return err
	}
	t := time.Now()
	if err := s.launch(p); err != nil {
		return nil, "", err
	}
	if err := waitReady(ctx, p, readyTimeout("coredns"), p.ready); err != nil {
		return p, "", err
	}
	s.logf("%s ready in %.1fs (pid %d)", name, time.Since(t).Seconds(), p.PID())
	return p, fmt.Sprintf("127.0.0.1:%d", ports[0]), nil
}

// readiness returns the check that the named process serves, or nil for
// processes without one (skylb, StartProcess).
func (s *Stack) readiness(name string) func(context.Context) error {
	if m, ok := s.etcdMember(name); ok {
		return func(ctx context.Context) error { return s.etcdMemberReady(ctx, m) }
	}
	switch name {
	case "kube-etcd":
		return func(ctx context.Context) error {
			body, err := httpGet(ctx, http.DefaultClient, s.KubeEtcdURL+"/health", "")
			if err == nil && !strings.Contains(body, `"health":"true"`) {
				err = fmt.Errorf("/health: %s", body)
			}
			return err
		}
	case "kube-apiserver":
		return func(ctx context.Context) error {
			c, err := tlsClient(filepath.Join(s.kubeDir(), "certs", "apiserver.crt"))
			if err != nil {
				return err
			}
			_, err = httpGet(ctx, c, s.APIServerURL+"/readyz", s.token())
			return err
		}
	case "kube-controller-manager":
		return func(ctx context.Context) error {
			c, err := tlsClient(filepath.Join(s.kubeDir(), "kcm-certs", "kube-controller-manager.crt"))
			if err != nil {
				return err
			}
			if _, err := httpGet(ctx, c, fmt.Sprintf("https://127.0.0.1:%d/healthz", s.Ports.ControllerManager), ""); err != nil {
				return err
			}
			// The service-account controller at work: Pods can be created.
			_, err = s.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err
		}
	case "coredns":
		return func(ctx context.Context) error {
			_, err := httpGet(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/ready", s.Ports.DNSReady), "")
			return err
		}
	case "coredns-reloader":
		// It serves nothing: it runs once it logged its first line.
		return func(context.Context) error {
			if b, err := os.ReadFile(s.LogFile(name)); err != nil || !strings.Contains(string(b), "reading ") {
				return fmt.Errorf("%s has not started (%v)", name, err)
			}
			return nil
		}
	}
	return nil
}

// httpGet fetches url and fails unless the status is 200.
func httpGet(ctx context.Context, c *http.Client, url, bearer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// tlsClient returns an HTTPS client trusting the (self-signed) certificate in
// caFile, which the server writes when it starts.
func tlsClient(caFile string) (*http.Client, error) {
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("%s: no certificate", caFile)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}, nil
}

// --- Kubernetes credentials ---------------------------------------------------

// token returns the admin bearer token of tokens.csv.
func (s *Stack) token() string {
	b, err := os.ReadFile(filepath.Join(s.kubeDir(), "tokens.csv"))
	if err != nil {
		return ""
	}
	tok, _, _ := strings.Cut(string(b), ",")
	return tok
}

// writeKubeFiles creates, unless present, the service-account signing key,
// the static admin token and the admin kubeconfig.
func (s *Stack) writeKubeFiles() error {
	dir := s.kubeDir()
	keyPath, pubPath := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if _, err := os.Stat(keyPath); err != nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return err
		}
		if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return err
		}
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if s.token() == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		if err := os.WriteFile(tokens, []byte(hex.EncodeToString(b)+",admin,admin,system:masters\n"), 0o600); err != nil {
			return err
		}
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
`, s.APIServerURL, filepath.Join(dir, "certs", "apiserver.crt"), s.token())
	return os.WriteFile(s.Kubeconfig, []byte(kubeconfig), 0o600)
}

// --- etcd ---------------------------------------------------------------------

// EtcdClient returns a client of the DNS etcd (every member) authenticated by the client
// certificate of user "skylb", "coredns" or "root" (mutual TLS; etcd takes the
// certificate's CN as the user). The caller closes it.
func (s *Stack) EtcdClient(user string) (*clientv3.Client, error) {
	switch user {
	case "skylb", "coredns", "root":
	default:
		return nil, fmt.Errorf("stack: no etcd certificate for user %q (skylb, coredns or root)", user)
	}
	return s.etcdClient(user, s.EtcdURLs)
}

// EtcdClientAt is EtcdClient for the given client URLs only, e.g. to reach
// the members that are not paused.
func (s *Stack) EtcdClientAt(user string, endpoints []string) (*clientv3.Client, error) {
	return s.etcdClient(user, endpoints)
}

// etcdClient returns a client of the given members of the DNS etcd as user.
func (s *Stack) etcdClient(user string, endpoints []string) (*clientv3.Client, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.Certs, user+".crt"), filepath.Join(s.Certs, user+".key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(s.Certs, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("stack: no certificate in ca.crt")
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
		Logger:      zap.NewNop(),
	})
}
