package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is another Kubernetes cluster beside the stack's own: a second
// kube-apiserver with its own data (a prefix of its own in kube-etcd) and no
// controller manager, for skylb instances of several clusters publishing into
// the one DNS etcd.
type Cluster struct {
	Name       string
	APIServer  *Proc
	Kubeconfig string
	RestConfig *rest.Config
	Kube       kubernetes.Interface
	root       string
}

// StartCluster starts the kube-apiserver of another cluster named name and
// returns once it is ready. It has no kube-controller-manager: its objects are
// what the caller creates (for example LoadBalancer Services of another class
// with their status written, as MetalLB would). It stops with the stack.
func (s *Stack) StartCluster(ctx context.Context, name string) (*Cluster, error) {
	port, err := freePort(nil)
	if err != nil {
		return nil, err
	}
	certs := filepath.Join(s.kubeDir(), name+"-certs")
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	args := []string{
		"--etcd-servers=" + s.KubeEtcdURL,
		"--etcd-prefix=/registry-" + name,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certs,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(s.kubeDir(), "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(s.kubeDir(), "sa.key"),
		"--authorization-mode=RBAC",
		"--token-auth-file=" + filepath.Join(s.kubeDir(), "tokens.csv"),
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=1",
	}
	p := s.newProc(name+"-apiserver", s.bin("kube-apiserver"), args, nil)
	p.ready = func(ctx context.Context) error {
		c, err := tlsClient(filepath.Join(certs, "apiserver.crt"))
		if err != nil {
			return err
		}
		_, err = httpGet(ctx, c, url+"/readyz", s.token())
		return err
	}
	t := time.Now()
	if err := s.launch(p); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, readyTimeout("kube-apiserver"), p.ready); err != nil {
		return nil, err
	}
	s.logf("%s ready in %.1fs (pid %d)", p.Name, time.Since(t).Seconds(), p.PID())

	kubeconfig := filepath.Join(s.kubeDir(), name+".kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority: %[3]s
users:
- name: admin
  user:
    token: %[4]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: admin
current-context: %[1]s
`, name, url, filepath.Join(certs, "apiserver.crt"), s.token())
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Name: name, APIServer: p, Kubeconfig: kubeconfig, RestConfig: cfg, Kube: kube, root: s.Root}, nil
}

// InstallGatewayAPI installs the Gateway API's CRDs in the cluster, as
// Stack.InstallGatewayAPI does in the stack's.
func (c *Cluster) InstallGatewayAPI(ctx context.Context) error {
	_, err := installGatewayAPI(ctx, c.root, c.RestConfig)
	return err
}
