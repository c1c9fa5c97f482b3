package e2e

// The tests in this file start skylb before its servers: etcd stopped, an
// etcd name that does not resolve, the API server stopped, credentials the
// API server refuses. skylb must run, answer /healthz, say on /readyz why it
// is not ready, and publish as soon as the server is back.

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skylb/skylb/test/stack"
)

// withoutSkylb stops the skylb under test until t ends, for a test that runs
// skylbs of its own with the same owner id or needs nothing else to write.
// When t ends, the servers a test stopped (etcd, kube-apiserver) come back
// first, even if it failed, then the skylb under test, ready.
func withoutSkylb(t *testing.T) {
	t.Helper()
	main := st.Proc("skylb")
	if err := main.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		apiDown := !st.Proc("kube-apiserver").Running()
		for _, name := range []string{"etcd", "kube-apiserver"} {
			if p := st.Proc(name); !p.Running() {
				if err := p.Restart(ctx); err != nil {
					t.Errorf("restart %s: %v", name, err)
				}
			}
		}
		if err := main.Restart(ctx); err != nil {
			t.Errorf("restart skylb: %v", err)
		} else if err := st.WaitSkylbReady(ctx, main); err != nil {
			t.Errorf("skylb after the test: %v", err)
		} else {
			settle(t) // its first pass is in etcd before the next test
			if apiDown {
				controllersBack(t)
			}
		}
	})
}

// startWhileDown stops the skylb under test until the test ends
// (withoutSkylb), and starts one named "skylb-start" with args added to the
// usual flags, which must not exit at once.
func startWhileDown(t *testing.T, args ...string) *stack.Proc {
	t.Helper()
	withoutSkylb(t)
	// skylbArgs end with the --http-address of the skylb under test.
	args = append(slices.Clone(skylbArgs[:len(skylbArgs)-1]), args...)
	sk, err := st.StartSkylbNamed(ctxT(t), "skylb-start", args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Stop() })
	return sk
}

// stopped stops the stack's process name; withoutSkylb starts it again when
// the test ends, unless the test has.
func stopped(t *testing.T, name string) *stack.Proc {
	t.Helper()
	p := st.Proc(name)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	return p
}

// get returns the status and body of skylb's path.
func get(t *testing.T, sk *stack.Proc, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + sk.HTTPAddr() + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// notReadyFor checks, for longer than a blocking start could last, that sk
// runs, answers /healthz and answers /readyz 503 with reason in the body.
func notReadyFor(t *testing.T, sk *stack.Proc, reason string) {
	t.Helper()
	stack.Eventually(t, 10*time.Second, "/readyz gives the reason", func() (bool, string) {
		code, body := get(t, sk, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, reason), body
	})
	time.Sleep(6 * time.Second)
	if !sk.Running() {
		t.Fatalf("skylb exited: %v", sk.ExitError())
	}
	if code, body := get(t, sk, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %q, want 200", code, body)
	}
	code, body := get(t, sk, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, reason) {
		t.Errorf("/readyz = %d %q, want 503 with %q", code, body, reason)
	}
	t.Logf("/readyz: %d %s", code, body)
}

// published waits until etcd holds a record of name (<service>.<namespace>)
// and returns how long that took.
func published(t *testing.T, name string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	root := etcdAs(t, "root")
	parts := strings.Split(name, ".")
	key := "/skydns/org/example/" + parts[1] + "/" + parts[0] + "/"
	stack.Eventually(t, limit, "a record of "+name+" in etcd", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := root.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err.Error()
		}
		return resp.Count > 0, "none"
	})
	return time.Since(start)
}

func TestStartWithEtcdDown(t *testing.T) {
	namespace(t, "start-etcd")
	etcd := stopped(t, "etcd")
	sk := startWhileDown(t)
	notReadyFor(t, sk, "etcd unreachable")
	metallb(t, "start-etcd", "late", []corev1.LoadBalancerIngress{{IP: "203.0.113.70"}})

	if err := etcd.Restart(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	took := published(t, "late.start-etcd", 10*time.Second)
	t.Logf("first record in etcd %v after etcd served", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("first record in etcd %v after etcd served, want within 2 s", took.Round(time.Millisecond))
	}
	if err := st.WaitSkylbReady(ctxT(t), sk); err != nil {
		t.Fatal(err)
	}
}

func TestStartWithEtcdNameNotResolving(t *testing.T) {
	sk := startWhileDown(t, "--etcd-endpoints=https://etcd.skylb.invalid:2379")
	notReadyFor(t, sk, "etcd unreachable")
}

func TestStartWithAPIServerDown(t *testing.T) {
	api := stopped(t, "kube-apiserver")
	sk := startWhileDown(t)
	notReadyFor(t, sk, "API server unreachable")

	if err := api.Restart(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	namespace(t, "start-api")
	metallb(t, "start-api", "late", []corev1.LoadBalancerIngress{{IP: "203.0.113.71"}})
	// A restarted API server fills the watch cache of each custom resource
	// on its first list, which took 5 s on two loaded cores: skylb's first
	// pass cannot come before it serves the Gateway API's lists as it does
	// skylb's (resourceVersion=0, from the watch cache).
	stack.Eventually(t, time.Minute, "API server serves the Gateway API lists", func() (bool, string) {
		for _, r := range []string{"gateways", "httproutes", "grpcroutes", "tlsroutes"} {
			err := st.Kube.Discovery().RESTClient().Get().AbsPath("/apis/gateway.networking.k8s.io/v1", r).
				Param("resourceVersion", "0").Do(ctxT(t)).Error()
			if err != nil {
				return false, r + ": " + err.Error()
			}
		}
		return true, ""
	})
	back := time.Now()
	published(t, "late.start-api", 30*time.Second)
	took := time.Since(back)
	t.Logf("a Service made after the API server returned was in etcd %v after it served every list (%v after its restart)",
		took.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
	// skylb's informers retry a failed list after client-go's backoff:
	// 0.8 s, doubled after each failure, with jitter of up to as much
	// again. After the few seconds the API server was down, their next list
	// can come up to 12.8 s after it returned (3.98 s after its restart in
	// one run on two loaded cores, 0.42 s in another); what follows it is
	// skylb's and takes milliseconds. No restart, no stall beyond that.
	if took > 15*time.Second {
		t.Errorf("a Service made after the API server returned reached etcd %v after the API server served every list, want within 15 s", took.Round(time.Millisecond))
	}
	if err := st.WaitSkylbReady(ctxT(t), sk); err != nil {
		t.Fatal(err)
	}
	controllersBack(t)
}

// levelForbidden matches a warning or error line of skylb's text log that
// names the resource a list was refused.
var levelForbidden = regexp.MustCompile(`level=(warning|error) .*services is forbidden.*cannot list resource .{0,8}services`)

func TestForbiddenListIsLogged(t *testing.T) {
	ctx := ctxT(t)
	namespace(t, "start-rbac")
	sa, err := st.Kube.CoreV1().ServiceAccounts("start-rbac").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := st.Kube.CoreV1().ServiceAccounts("start-rbac").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		u.Token = tok.Status.Token
	}
	kubeconfig := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	sk := startWhileDown(t, "--kubeconfig="+kubeconfig, "--log-level=info")
	notReadyFor(t, sk, "informer caches not synced")
	b, err := os.ReadFile(sk.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	line := levelForbidden.FindString(string(b))
	if line == "" {
		t.Fatalf("no warning or error in skylb's log at --log-level=info says the list of services is forbidden; log:\n%s", b)
	}
	t.Logf("logged: %s", line)
}

func stringOf(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestStartBeforeItsCertificate(t *testing.T) {
	// The Secret with the client certificate is mounted after skylb starts.
	dir := filepath.Join(t.TempDir(), "etcd-client")
	files := map[string]string{"ca.crt": "ca.crt", "tls.crt": "skylb.crt", "tls.key": "skylb.key"}
	sk := startWhileDown(t, "--log-level=info",
		"--etcd-ca-file="+filepath.Join(dir, "ca.crt"),
		"--etcd-cert-file="+filepath.Join(dir, "tls.crt"),
		"--etcd-key-file="+filepath.Join(dir, "tls.key"))
	notReadyFor(t, sk, filepath.Join(dir, "ca.crt"))
	b, err := os.ReadFile(sk.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`level=warning .*mount the Secret.*` + regexp.QuoteMeta(filepath.Join(dir, "ca.crt"))).Match(b) {
		t.Errorf("no warning names the missing file and the fix; log:\n%s", b)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, from := range files {
		data, err := os.ReadFile(filepath.Join(st.Certs, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mounted := time.Now()
	if err := st.WaitSkylbReady(ctxT(t), sk); err != nil {
		t.Fatal(err)
	}
	t.Logf("ready %v after the files appeared", time.Since(mounted).Round(time.Millisecond))
}
