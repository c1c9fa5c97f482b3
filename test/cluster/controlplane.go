package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// identity is a component's credentials: a static token of the API server's
// token file, for a user in groups.
type identity struct {
	name   string // kubeconfig file name, without .kubeconfig
	user   string
	groups []string
	token  string
}

func (c *Cluster) pki() string { return filepath.Join(c.Dir, "pki") }

// writeCredentials writes the PKI, the token file and one kubeconfig per
// identity.
func (c *Cluster) writeCredentials(nodes []Node) (*ca, error) {
	dir := c.pki()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	authority, err := newCA(dir)
	if err != nil {
		return nil, err
	}
	if err := authority.issue(dir, "apiserver", certSpec{
		cn:  "kube-apiserver",
		ips: []net.IP{hostIP.AsSlice(), apiVIP.AsSlice(), net.IPv4(127, 0, 0, 1)},
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + clusterDomain},
		server: true,
	}); err != nil {
		return nil, err
	}
	if err := authority.issue(dir, "apiserver-kubelet-client", certSpec{
		cn: "kube-apiserver-kubelet-client", org: []string{"system:masters"}, client: true,
	}); err != nil {
		return nil, err
	}
	if err := newKey(dir, "sa"); err != nil {
		return nil, err
	}
	ids := []identity{
		{name: "admin", user: "admin", groups: []string{"system:masters"}},
		{name: "controller-manager", user: "system:kube-controller-manager"},
		{name: "scheduler", user: "system:kube-scheduler"},
		{name: "proxy", user: "system:kube-proxy"},
	}
	for _, n := range nodes {
		ids = append(ids, identity{name: n.Name, user: "system:node:" + n.Name, groups: []string{"system:nodes"}})
	}
	var tokens strings.Builder
	for i := range ids {
		ids[i].token = token()
		fmt.Fprintf(&tokens, "%s,%s,%s", ids[i].token, ids[i].user, ids[i].user)
		if len(ids[i].groups) > 0 {
			fmt.Fprintf(&tokens, ",\"%s\"", strings.Join(ids[i].groups, ","))
		}
		tokens.WriteString("\n")
		if err := c.writeKubeconfig(filepath.Join(c.Dir, ids[i].name+".kubeconfig"), ids[i].token); err != nil {
			return nil, err
		}
	}
	return authority, os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens.String()), 0o600)
}

func (c *Cluster) writeKubeconfig(path, tok string) error {
	return os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: skylb
  cluster: {server: %q, certificate-authority: %q}
users:
- name: user
  user: {token: %q}
contexts:
- name: skylb
  context: {cluster: skylb, user: user}
current-context: skylb
`, c.APIServer, filepath.Join(c.pki(), "ca.crt"), tok)), 0o600)
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler in the host network namespace, and returns once the API
// server is ready.
func (c *Cluster) startControlPlane(ctx context.Context, bin string) error {
	var ports [4]int
	for i := range ports {
		p, err := stack.FreePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	pki := c.pki()
	if _, err := c.startProc("etcd", filepath.Join(bin, "etcd"),
		"--name=kube", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=kube="+peer, "--log-level=warn",
		"--quota-backend-bytes=2147483648",
	); err != nil {
		return err
	}
	if _, err := c.startProc("kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+client,
		"--bind-address="+hostIP.String(), "--advertise-address="+hostIP.String(),
		"--secure-port="+strconv.Itoa(apiServerPort),
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--token-auth-file="+filepath.Join(pki, "tokens.csv"),
		"--kubelet-client-certificate="+filepath.Join(pki, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+filepath.Join(pki, "apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+filepath.Join(pki, "ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc."+clusterDomain,
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range="+serviceNet.String(),
		"--endpoint-reconciler-type=lease",
		"--profiling=false", "--v=1",
	); err != nil {
		return err
	}
	if err := waitFor(ctx, 90*time.Second, 300*time.Millisecond, "kube-apiserver /readyz", c.apiReady); err != nil {
		return err
	}
	c.logf("kube-apiserver ready at %s", c.APIServer)
	kcm := filepath.Join(c.Dir, "controller-manager.kubeconfig")
	if _, err := c.startProc("kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(c.Dir, "kcm-certs"),
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--cluster-signing-cert-file="+filepath.Join(pki, "ca.crt"),
		"--cluster-signing-key-file="+filepath.Join(pki, "ca.key"),
		"--service-cluster-ip-range="+serviceNet.String(),
		"--node-monitor-grace-period=20s",
		"--flex-volume-plugin-dir="+filepath.Join(c.Dir, "flexvolume"),
		"--profiling=false", "--v=1",
	); err != nil {
		return err
	}
	sched := filepath.Join(c.Dir, "scheduler.kubeconfig")
	_, err := c.startProc("kube-scheduler", filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[3]),
		"--leader-elect=false", "--profiling=false", "--v=1",
	)
	return err
}

// apiReady checks the API server's /readyz.
func (c *Cluster) apiReady(ctx context.Context) error {
	caPEM, err := os.ReadFile(filepath.Join(c.pki(), "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.APIServer+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}
