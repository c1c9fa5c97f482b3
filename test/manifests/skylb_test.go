package manifests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// workload is the LoadBalancer Service skylbRuns creates, in namespace ns,
// with one endpoint on a node of its own.
type workload struct {
	ns, svc, node, nodeIP, podIP, podCIDR string
}

// skylbRuns runs skylb with the Deployment's arguments (its files and ports
// moved to the stack's), the environment of its ConfigMap and a token of its
// ServiceAccount: everything it does must be allowed by the RBAC applied
// before. It returns the name it published for w, once CoreDNS answers it;
// skylb runs until the test ends.
func skylbRuns(ctx context.Context, t *testing.T, s *stack.Stack, rr *rendering, w workload) string {
	dep := as[appsv1.Deployment](t, rr.get(t, "Deployment", nsSkylb, "skylb"))
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if pod.ServiceAccountName != "skylb" || *dep.Spec.Replicas != 2 {
		t.Errorf("skylb: ServiceAccount %q with %d replicas, want skylb with 2", pod.ServiceAccountName, *dep.Spec.Replicas)
	}
	env := rr.env(t, nsSkylb, c)
	args := expand(c.Args, env)
	for _, a := range args {
		if varRef.MatchString(a) {
			t.Errorf("skylb argument %q refers to an unset variable", a)
		}
	}
	tls := secretMount(t, pod, c, "skylb-etcd-client")
	for flag, want := range map[string]string{
		"etcd-ca-file": tls + "/ca.crt", "etcd-cert-file": tls + "/tls.crt", "etcd-key-file": tls + "/tls.key",
		"etcd-endpoints": "https://etcd-client.skylb-dns.svc:2379", "http-address": ":8080",
		"leader-elect": "true", "leader-elect-id": "skylb",
	} {
		if got, _ := flagValue(args, flag); got != want {
			t.Errorf("skylb --%s=%q, want %q", flag, got, want)
		}
	}
	if got := env["SKYLB_COREDNS_ADDRESS"]; got != "coredns.skylb-coredns.svc:53" {
		t.Errorf("skylb SKYLB_COREDNS_ADDRESS=%q, want CoreDNS's Service, coredns.skylb-coredns.svc:53", got)
	}
	// The Lease is in the pod's own namespace, wherever an overlay puts it.
	if got, ok := flagValue(args, "leader-elect-namespace"); ok {
		t.Errorf("skylb --leader-elect-namespace=%q, want it unset: the pod's namespace", got)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe.HTTPGet.Port.String() != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Error("skylb probes: want /healthz and /readyz on port 8080")
	}

	bin, err := s.BuildSkylb(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The flags parse.
	if out, err := exec.CommandContext(ctx, bin, append(slices.Clone(args), "--version")...).CombinedOutput(); err != nil {
		t.Fatalf("skylb does not accept the Deployment's arguments: %v\n%s", err, out)
	}

	// A kubeconfig with a token of skylb's ServiceAccount.
	tr, err := s.Kube.CoreV1().ServiceAccounts(nsSkylb).CreateToken(ctx, "skylb",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "skylb.kubeconfig")
	if err := stack.TokenKubeconfig(s.Kubeconfig, kubeconfig, tr.Status.Token); err != nil {
		t.Fatal(err)
	}

	httpPort, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args = setFlag(args, "etcd-endpoints", s.EtcdURL)
	args = setFlag(args, "etcd-ca-file", filepath.Join(s.Certs, "ca.crt"))
	args = setFlag(args, "etcd-cert-file", filepath.Join(s.Certs, "skylb.crt"))
	args = setFlag(args, "etcd-key-file", filepath.Join(s.Certs, "skylb.key"))
	args = setFlag(args, "http-address", fmt.Sprintf("127.0.0.1:%d", httpPort))
	args = setFlag(args, "coredns-address", s.DNSAddr)
	args = setFlag(args, "kubeconfig", kubeconfig)
	t0 := time.Now()
	// With the pod's environment too, where every SKYLB_<FLAG> of the
	// ConfigMap is a setting.
	p := startProcess(t, "skylb", env, bin, args...)
	if err := p.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort), 30*time.Second); err != nil {
		t.Fatalf("skylb as its ServiceAccount: %v", err)
	}
	t.Logf("skylb ready after %.1fs", time.Since(t0).Seconds())

	// It leads: the Lease of --leader-elect-id.
	waitFor(ctx, t, 20*time.Second, "skylb to hold the Lease skylb/skylb", p, func() bool {
		l, err := s.Kube.CoordinationV1().Leases(nsSkylb).Get(ctx, "skylb", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	})

	// It implements a LoadBalancer Service: status, Event, DNS.
	node, nodeIP, svcName := w.node, w.nodeIP, w.svc
	if err := s.CreateNodes(ctx, stack.NodeSpec{Name: node, InternalIP: []string{nodeIP}, PodCIDR: w.podCIDR}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: w.ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := s.Kube.CoreV1().Services(w.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svcName + "-1", Namespace: w.ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: svcName, discoveryv1.LabelManagedBy: "manifests-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{w.podIP}, NodeName: ptr(node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}}},
		Ports: []discoveryv1.EndpointPort{{Port: ptr(int32(80)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if _, err := s.Kube.DiscoveryV1().EndpointSlices(w.ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The status lists every usable node, those of the other cases'
	// skylbs too; the answer, below, the one running the endpoint.
	waitFor(ctx, t, 20*time.Second, "skylb to write the Service's status", p, func() bool {
		got, err := s.Kube.CoreV1().Services(w.ns).Get(ctx, svcName, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(got.Status.LoadBalancer.Ingress, func(ing corev1.LoadBalancerIngress) bool { return ing.IP == nodeIP })
	})
	waitFor(ctx, t, 20*time.Second, "skylb's Event on the Service", p, func() bool {
		evs, err := s.Kube.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + svcName})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Source.Component == "skylb" {
				return true
			}
		}
		return false
	})
	name := fmt.Sprintf("%s.%s.%s", svcName, w.ns, env["SKYLB_ZONE"])
	waitFor(ctx, t, 20*time.Second, "CoreDNS to answer "+name, p, func() bool {
		ips, err := s.LookupA(ctx, name)
		return err == nil && slices.Equal(ips, []string{nodeIP})
	})
	// It asked CoreDNS (the stack's, in place of the Deployment's) whether it
	// serves the zone.
	served := fmt.Sprintf("skylb_zone_served{zone=%q} 1", env["SKYLB_ZONE"])
	waitFor(ctx, t, 20*time.Second, "skylb to find its zone served: "+served, p, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", httpPort))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "\n"+served+"\n")
	})
	t.Logf("skylb led, wrote the status, sent an Event and published %s after %.1fs", name, time.Since(t0).Seconds())
	if log := p.log(); strings.Contains(strings.ToLower(log), "forbidden") {
		t.Errorf("skylb was refused something:%s", p.tail())
	}
	return name
}

func ptr[T any](v T) *T { return &v }
