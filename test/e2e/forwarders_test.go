package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// TestDelegationForwardsToTheNodePort: on the default install, where no
// CoreDNS answers on port 53 and so no nameserver is published, skylb
// delegation prints the forwarders to the node port of CoreDNS's Service on
// every usable node, rather than failing for want of nameservers.
func TestDelegationForwardsToTheNodePort(t *testing.T) {
	ctx := ctxT(t)
	const ns, nodeIP = "fwd-coredns", "192.0.2.201"
	if _, err := st.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Kube.CoreV1().Namespaces().Delete(ctxT(t), ns, metav1.DeleteOptions{}) })
	svc, err := st.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "coredns"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateNodes(ctx, stack.NodeSpec{Name: "fwd-node", InternalIP: []string{nodeIP}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Kube.CoreV1().Nodes().Delete(ctxT(t), "fwd-node", metav1.DeleteOptions{}) })
	port := svc.Spec.Ports[0].NodePort

	bin, err := st.BuildSkylb(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "delegation", "--zone="+st.Zone, "--kubeconfig="+st.Kubeconfig,
		"--forward-service="+ns+"/coredns").CombinedOutput()
	if err != nil {
		t.Fatalf("skylb delegation on a NodePort install: %v\n%s", err, out)
	}
	for _, want := range []string{
		"; No nameserver answers the zones on port 53",
		nodeIP + " port " + strconv.Itoa(int(port)),
		"forward-addr: " + nodeIP + "@" + strconv.Itoa(int(port)),
		"server=/" + st.Zone + "/" + nodeIP + "#" + strconv.Itoa(int(port)),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("skylb delegation printed no %q:\n%s", want, out)
		}
	}
}
