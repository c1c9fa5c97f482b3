// Package certmanager runs cert-manager's controller (v1.21.2, built by
// scripts/build-bins.sh from test/tools/cert-manager) in the real three-node
// cluster of test/cluster, installed from the module's CRDs and
// testdata/install (namespace, least-privilege RBAC and Deployment after
// upstream's chart). Then it deploys skylb as manifests/README.md says with
// cert-manager: overlays of etcd, coredns and manifests with their
// cert-manager components, written as a user would. It proves that
// cert-manager issues every certificate, that etcd serves mutual TLS with
// them, and that renewed certificates are picked up: by etcd and skylb by
// themselves, by CoreDNS through the reloader beside it, while a name is asked
// through the NodePort all along.
package certmanager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

const (
	zone    = "example.org"
	webName = "web.default." + zone
)

// renewed are the Certificates the test renews (each names its Secret), and
// the volume and pods that mount it.
var renewed = []struct {
	ns, name, volume, selector string
}{
	{"skylb-dns", "etcd-server", "server-tls", "app.kubernetes.io/name=etcd"},
	{"skylb", "skylb-etcd-client", "etcd-client", "app.kubernetes.io/name=skylb"},
	{"skylb-coredns", "coredns-etcd-client", "etcd-client", "app.kubernetes.io/name=coredns"},
}

func TestCertManager(t *testing.T) {
	ctx := cluster.RootTest(t, 10*time.Minute)
	root := stack.Root(t)

	crds, err := crdDir(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	c := upCluster(ctx, t, root)
	t.Logf("measure: cluster of %d nodes up in %v", len(c.Nodes), time.Since(t0).Round(time.Second))

	t0 = time.Now()
	c.MustKubectl(ctx, t, "apply", "--server-side", "-f", crds)
	c.MustKubectl(ctx, t, "wait", "-f", crds, "--for=condition=Established", "--timeout=1m")
	c.MustKubectl(ctx, t, "apply", "-k", filepath.Join(root, "test", "certmanager", "testdata", "install"))
	c.MustKubectl(ctx, t, "-n", "cert-manager", "rollout", "status", "deployment/cert-manager", "--timeout=3m")
	t.Logf("measure: cert-manager installed -> controller Ready in %v", time.Since(t0).Round(time.Second))
	got := c.MustKubectl(ctx, t, "-n", "cert-manager", "get", "pods", "-l", "app=cert-manager",
		"-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if want := images.CertManagerControllerRef + " True"; strings.TrimSpace(got) != want {
		t.Fatalf("Got cert-manager pods %q, want %q", got, want)
	}

	t0 = time.Now()
	deploy(ctx, t, c, root)
	t.Logf("measure: first kubectl apply -> every Certificate Ready, the RBAC Job complete, etcd, CoreDNS and skylb rolled out in %v", time.Since(t0).Round(time.Second))
	for _, issuer := range []string{"skylb-etcd-selfsigned", "skylb-etcd-ca"} {
		c.MustKubectl(ctx, t, "wait", "clusterissuer/"+issuer, "--for=condition=Ready", "--timeout=1m")
	}
	ca, root509 := secretPair(ctx, t, c, "skylb-dns", "etcd-root-client")
	serving := secretLeaf(ctx, t, c, "skylb-dns", "etcd-server")
	for pod, ip := range podIPs(ctx, t, c, "skylb-dns", "app.kubernetes.io/name=etcd") {
		got, err := servedSerial(ctx, ip, pod+".etcd.skylb-dns.svc", ca, root509)
		if err != nil {
			t.Fatalf("etcd %s: %v", pod, err)
		}
		if got.Cmp(serving.SerialNumber) != 0 {
			t.Errorf("Got etcd %s serving serial %x, want %x (Secret etcd-server)", pod, got, serving.SerialNumber)
		}
		if _, err := servedSerial(ctx, ip, pod+".etcd.skylb-dns.svc", ca, tls.Certificate{}); err == nil {
			t.Errorf("etcd %s answered a client without a certificate, want it refused", pod)
		}
	}

	server := net.JoinHostPort(c.Nodes[0].IP.String(), strconv.Itoa(cluster.DNSNodePort))
	t0 = time.Now()
	want := c.ExposeWeb(ctx, t)
	cluster.WaitAnswer(ctx, t, server, webName, want)
	t.Logf("measure: LoadBalancer Service created -> %s answers %v through the NodePort in %v", webName, want, time.Since(t0).Round(100*time.Millisecond))
	if t.Failed() {
		return
	}

	t.Run("renewal", func(t *testing.T) {
		renew(ctx, t, c, server, want)
	})
}

// renew forces the renewal of the certificates of renewed while a prober
// asks webName through the NodePort, and proves that each is picked up.
func renew(ctx context.Context, t *testing.T, c *cluster.Cluster, server string, want []string) {
	old := map[string]*big.Int{}
	for _, r := range renewed {
		old[r.name] = secretLeaf(ctx, t, c, r.ns, r.name).SerialNumber
	}
	p := cluster.StartProbe(ctx, server, webName, want)
	defer p.Stop()

	t0 := time.Now()
	for _, r := range renewed {
		// What cmctl renew does: the Issuing condition, through the status
		// subresource.
		patch := fmt.Sprintf(`[{"op":"add","path":"/status/conditions/-","value":{"type":"Issuing","status":"True",`+
			`"reason":"ManuallyTriggered","message":"Certificate re-issuance manually triggered","lastTransitionTime":%q}}]`,
			time.Now().UTC().Format(time.RFC3339))
		c.MustKubectl(ctx, t, "-n", r.ns, "patch", "certificate/"+r.name, "--subresource=status", "--type=json", "-p", patch)
	}
	fresh := map[string]*big.Int{}
	for _, r := range renewed {
		waitFor(ctx, t, 2*time.Minute, "Secret "+r.ns+"/"+r.name+" renewed", func() bool {
			leaf, err := secretLeafErr(ctx, c, r.ns, r.name)
			if err != nil || leaf.SerialNumber.Cmp(old[r.name]) == 0 {
				return false
			}
			fresh[r.name] = leaf.SerialNumber
			return true
		})
		c.MustKubectl(ctx, t, "-n", r.ns, "wait", "certificate/"+r.name, "--for=condition=Ready", "--timeout=1m")
	}
	t.Logf("measure: renewal of %d Certificates triggered -> every Secret holds a new certificate in %v", len(renewed), time.Since(t0).Round(100*time.Millisecond))

	// etcd reads its serving certificate on each handshake.
	ca, root509 := secretPair(ctx, t, c, "skylb-dns", "etcd-root-client")
	members := podIPs(ctx, t, c, "skylb-dns", "app.kubernetes.io/name=etcd")
	waitFor(ctx, t, 2*time.Minute, "every etcd member serving the new certificate", func() bool {
		for pod, ip := range members {
			got, err := servedSerial(ctx, ip, pod+".etcd.skylb-dns.svc", ca, root509)
			if err != nil || got.Cmp(fresh["etcd-server"]) != 0 {
				return false
			}
		}
		return true
	})
	t.Logf("measure: renewal triggered -> all %d etcd members serve the new certificate (serial %x) in %v", len(members), fresh["etcd-server"], time.Since(t0).Round(100*time.Millisecond))

	// skylb reads its client certificate again when the files change: once
	// the kubelet has updated the files in its pods, its connections to etcd
	// are cut, so that the next handshake reads them, and a new Service's
	// name must be written.
	skylb := renewed[1]
	pods := waitMounted(ctx, t, c, skylb.ns, skylb.selector, skylb.volume, fresh[skylb.name])
	t.Logf("measure: renewal triggered -> the new skylb client certificate in both skylb pods' files in %v", time.Since(t0).Round(100*time.Millisecond))
	for _, pod := range pods {
		pid, err := c.ContainerPID(ctx, pod.node, pod.containerID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, "nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "--",
			"ss", "-K", "-t", "-n", "state", "established", "dport", "=", ":2379").CombinedOutput()
		if err != nil {
			t.Fatalf("cut %s's connections to etcd: %v\n%s", pod.name, err, out)
		}
		if n := len(strings.Split(strings.TrimSpace(string(out)), "\n")) - 1; n < 1 {
			t.Errorf("Got %d connections of %s to etcd cut, want at least 1:\n%s", n, pod.name, out)
		}
	}
	t1 := time.Now()
	c.MustKubectl(ctx, t, "expose", "deployment", "web", "--name=web-renewed", "--type=LoadBalancer", "--port=81", "--target-port=80")
	cluster.WaitAnswer(ctx, t, server, "web-renewed.default."+zone, want)
	t.Logf("measure: skylb's connections to etcd cut after the renewal -> a new Service's name answers in %v", time.Since(t1).Round(100*time.Millisecond))

	// CoreDNS reads its certificate at start: the reloader beside it reloads
	// CoreDNS once the kubelet has put the renewed files in the pod.
	coredns := renewed[2]
	pods = waitMounted(ctx, t, c, coredns.ns, coredns.selector, coredns.volume, fresh[coredns.name])
	t.Logf("measure: renewal triggered -> the new CoreDNS client certificate in both CoreDNS pods' files in %v", time.Since(t0).Round(100*time.Millisecond))
	for _, pod := range pods {
		waitFor(ctx, t, time.Minute, "the reloader of "+pod.name+" reloads CoreDNS for the renewed certificate", func() bool {
			reloader, err := c.Kubectl(ctx, "-n", coredns.ns, "logs", pod.name, "-c", "reloader")
			// One reload may serve other reasons too, such as the views'
			// file of the same kubelet sync: the log names them all.
			if err != nil || !slices.ContainsFunc(strings.Split(reloader, "\n"), func(l string) bool {
				return strings.Contains(l, "certificate files changed") && strings.Contains(l, "CoreDNS reloads")
			}) {
				return false
			}
			out, err := c.Kubectl(ctx, "-n", coredns.ns, "logs", pod.name, "-c", "coredns")
			return err == nil && strings.Contains(out, "SIGUSR1: Reloading")
		})
	}
	t.Logf("measure: renewal triggered -> both CoreDNS pods reloaded by their reloader in %v", time.Since(t0).Round(100*time.Millisecond))
	t1 = time.Now()
	c.MustKubectl(ctx, t, "expose", "deployment", "web", "--name=web-reloaded", "--type=LoadBalancer", "--port=82", "--target-port=80")
	cluster.WaitAnswer(ctx, t, server, "web-reloaded.default."+zone, want)
	cluster.WaitAnswer(ctx, t, server, webName, want)
	t.Logf("measure: CoreDNS reloaded on the renewed certificate -> a new Service's name answers in %v", time.Since(t1).Round(100*time.Millisecond))

	s := p.Stop()
	t.Logf("measure: %s asked every 100ms through the NodePort from the renewal to the end of the reloads (%v): %d queries, %d failed, longest run of failures %d (%v)",
		webName, s.Span.Round(100*time.Millisecond), s.Queries, s.Failed, s.Longest, s.LongestFor.Round(100*time.Millisecond))
	for _, f := range s.Failures {
		t.Logf("failed query at %s", f)
	}
	if s.Queries == 0 {
		t.Error("the prober sent no query")
	}
}

// deploy applies the deployment of manifests/README.md with cert-manager: the
// overlays of etcd, coredns and manifests with their cert-manager components,
// in the page's order, each waited for as the page says.
func deploy(ctx context.Context, t *testing.T, c *cluster.Cluster, root string) {
	t.Helper()
	dir := t.TempDir()
	for _, o := range []struct{ name, base, component string }{
		{"etcd", "etcd", "etcd/deploy/cert-manager"},
		{"coredns", "coredns", "coredns/deploy/cert-manager"},
		{"skylb", "manifests", "manifests/cert-manager"},
	} {
		overlay := filepath.Join(dir, o.name)
		if err := os.Mkdir(overlay, 0o755); err != nil {
			t.Fatal(err)
		}
		// Relative: kustomize takes no absolute directory as a resource.
		base, err := filepath.Rel(overlay, filepath.Join(root, o.base))
		if err != nil {
			t.Fatal(err)
		}
		component, err := filepath.Rel(overlay, filepath.Join(root, o.component))
		if err != nil {
			t.Fatal(err)
		}
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
			"resources:\n- " + base + "\ncomponents:\n- " + component + "\n"
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.MustKubectl(ctx, t, "apply", "-k", filepath.Join(dir, "etcd"))
	c.MustKubectl(ctx, t, "-n", "cert-manager", "wait", "certificate/skylb-etcd-ca", "--for=condition=Ready", "--timeout=3m")
	c.MustKubectl(ctx, t, "-n", "skylb-dns", "wait", "certificates", "--all", "--for=condition=Ready", "--timeout=3m")
	c.MustKubectl(ctx, t, "-n", "skylb-dns", "rollout", "status", "statefulset/etcd", "--timeout=5m")
	c.MustKubectl(ctx, t, "-n", "skylb-dns", "wait", "--for=condition=complete", "job/etcd-rbac-bootstrap", "--timeout=5m")

	c.MustKubectl(ctx, t, "apply", "-k", filepath.Join(dir, "coredns"))
	c.MustKubectl(ctx, t, "-n", "skylb-coredns", "wait", "certificates", "--all", "--for=condition=Ready", "--timeout=3m")
	c.MustKubectl(ctx, t, "-n", "skylb-coredns", "rollout", "status", "deployment/coredns", "--timeout=3m")

	c.MustKubectl(ctx, t, "apply", "-k", filepath.Join(dir, "skylb"))
	c.MustKubectl(ctx, t, "-n", "skylb", "wait", "certificates", "--all", "--for=condition=Ready", "--timeout=3m")
	c.MustKubectl(ctx, t, "-n", "skylb", "rollout", "status", "deployment/skylb", "--timeout=3m")

	out := c.MustKubectl(ctx, t, "get", "certificates", "-A", "-o",
		`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 {
		t.Errorf("Got Certificates %q, want 6: the CA, etcd's three, CoreDNS's and skylb's", lines)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, " True") {
			t.Errorf("Got Certificate %s, want Ready True", l)
		}
	}
}

// upCluster starts a three-node cluster in <root>/.cluster/certmanager with
// the images (cert-manager's controller too), which the test's clean-up
// removes.
func upCluster(ctx context.Context, t *testing.T, root string) *cluster.Cluster {
	t.Helper()
	return cluster.UpWithImagesForTest(ctx, t, root, "certmanager", images.Options{CertManager: true},
		[]string{"get", "pods", "-A", "-o", "wide"},
		[]string{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		[]string{"get", "clusterissuers,certificates,certificaterequests", "-A", "-o", "wide"},
		[]string{"-n", "cert-manager", "logs", "-l", "app=cert-manager", "--tail=60"},
		[]string{"-n", "skylb", "logs", "-l", "app.kubernetes.io/name=skylb", "--tail=40", "--prefix"},
		[]string{"-n", "skylb-coredns", "logs", "-l", "app.kubernetes.io/name=coredns", "--all-containers", "--tail=40", "--prefix"})
}

// crdDir returns deploy/crds of the module github.com/cert-manager/cert-manager
// at the version test/tools/cert-manager/go.mod requires.
func crdDir(ctx context.Context, root string) (string, error) {
	module, err := stack.ModuleDir(ctx, filepath.Join(root, "test", "tools", "cert-manager"), "github.com/cert-manager/cert-manager")
	if err != nil {
		return "", err
	}
	return filepath.Join(module, "deploy", "crds"), nil
}

// waitFor polls cond every half second until it holds, and fails t after
// limit.
func waitFor(ctx context.Context, t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after %v", what, limit)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// secretData returns the decoded key of the Secret ns/name.
func secretData(ctx context.Context, c *cluster.Cluster, ns, name, key string) ([]byte, error) {
	out, err := c.Kubectl(ctx, "-n", ns, "get", "secret", name, "-o", "jsonpath={.data."+strings.ReplaceAll(key, ".", `\.`)+"}")
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w: %s", ns, name, err, out)
	}
	return base64.StdEncoding.DecodeString(strings.TrimSpace(out))
}

// secretLeafErr returns the certificate tls.crt of the Secret ns/name.
func secretLeafErr(ctx context.Context, c *cluster.Cluster, ns, name string) (*x509.Certificate, error) {
	b, err := secretData(ctx, c, ns, name, "tls.crt")
	if err != nil {
		return nil, err
	}
	return parseLeaf(b)
}

// secretLeaf is secretLeafErr failing t on an error.
func secretLeaf(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name string) *x509.Certificate {
	t.Helper()
	leaf, err := secretLeafErr(ctx, c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// parseLeaf parses the first PEM certificate of b.
func parseLeaf(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate in %q", b)
	}
	return x509.ParseCertificate(block.Bytes)
}

// secretPair returns the CA pool (ca.crt) and the key pair (tls.crt,
// tls.key) of the Secret ns/name.
func secretPair(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	files := map[string][]byte{}
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		b, err := secretData(ctx, c, ns, name, key)
		if err != nil {
			t.Fatal(err)
		}
		files[key] = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files["ca.crt"]) {
		t.Fatalf("secret %s/%s: no CA certificate in ca.crt", ns, name)
	}
	pair, err := tls.X509KeyPair(files["tls.crt"], files["tls.key"])
	if err != nil {
		t.Fatalf("secret %s/%s: %v", ns, name, err)
	}
	return pool, pair
}

// servedSerial connects to the etcd member at ip with the client
// certificate pair (none if empty), verifies its serving certificate for serverName against
// ca, and returns the certificate's serial once the member has accepted the
// client's (the answer to a request after the handshake: with TLS 1.3 a
// rejected client certificate shows only there).
func servedSerial(ctx context.Context, ip, serverName string, ca *x509.CertPool, pair tls.Certificate) (*big.Int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cfg := &tls.Config{RootCAs: ca, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if pair.Certificate != nil {
		cfg.Certificates = []tls.Certificate{pair}
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, "2379"))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(conn, "GET /version HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", serverName); err != nil {
		return nil, err
	}
	status := make([]byte, 12)
	if _, err := conn.Read(status); err != nil {
		return nil, fmt.Errorf("read the answer to GET /version: %w", err)
	}
	if !strings.HasPrefix(string(status), "HTTP/1.1 200") {
		return nil, fmt.Errorf("GET /version: %q", status)
	}
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// podIPs returns the addresses of the pods of ns matching selector, by name.
func podIPs(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, selector string) map[string]string {
	t.Helper()
	out := c.MustKubectl(ctx, t, "-n", ns, "get", "pods", "-l", selector, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}`)
	ips := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			ips[f[0]] = f[1]
		}
	}
	if len(ips) == 0 {
		t.Fatalf("no pods %s in %s with an address", selector, ns)
	}
	return ips
}

// pod is a running pod of the test's interest.
type pod struct {
	name, node, uid, containerID string
}

// runningPods returns the running pods of ns matching selector.
func runningPods(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, selector string) []pod {
	t.Helper()
	out := c.MustKubectl(ctx, t, "-n", ns, "get", "pods", "-l", selector, "--field-selector=status.phase=Running", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.uid} {.status.containerStatuses[0].containerID} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var pods []pod
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		// Five fields: a terminating pod, with its deletion time.
		if f := strings.Fields(l); len(f) == 4 {
			pods = append(pods, pod{f[0], f[1], f[2], f[3]})
		}
	}
	return pods
}

// waitMounted waits until the certificate tls.crt of the Secret volume in
// every running pod of ns matching selector has serial, reading the file
// the kubelet writes on the pod's node, and returns the pods.
func waitMounted(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, selector, volume string, serial *big.Int) []pod {
	t.Helper()
	var pods []pod
	waitFor(ctx, t, 2*time.Minute, fmt.Sprintf("pods %s of %s with serial %x in volume %s", selector, ns, serial, volume), func() bool {
		pods = runningPods(ctx, t, c, ns, selector)
		if len(pods) == 0 {
			return false
		}
		for _, p := range pods {
			n, err := c.Node(p.node)
			if err != nil {
				return false
			}
			path := filepath.Join(n.Dir, "kubelet", "pods", p.uid, "volumes", "kubernetes.io~secret", volume, "tls.crt")
			out, err := c.ExecInNode(ctx, p.node, "cat", path)
			if err != nil {
				return false
			}
			leaf, err := parseLeaf([]byte(out))
			if err != nil || leaf.SerialNumber.Cmp(serial) != 0 {
				return false
			}
		}
		return true
	})
	return pods
}
