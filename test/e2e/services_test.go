package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skylb/skylb/test/stack"
)

// expectedNodeAddresses computes, from the cluster's own state, the answer
// skylb should give for a Service in nodes mode: the IPv4 InternalIP (or
// override annotation) of every Ready node hosting a Ready pod of app.
func expectedNodeAddresses(t *testing.T, ns, app string) []string {
	t.Helper()
	out, _ := nodeAddresses(t, ns, app)
	return out
}

// nodeAddresses returns expectedNodeAddresses and the number of ready pods
// of app, read from one list of its pods.
func nodeAddresses(t *testing.T, ns, app string) ([]string, int) {
	t.Helper()
	pods, err := st.Kube.CoreV1().Pods(ns).List(ctxT(t), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ready := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && stack.PodReady(&p.Status) {
			ready++
		}
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || !stack.PodReady(&p.Status) {
			continue
		}
		n, err := st.Kube.CoreV1().Nodes().Get(ctxT(t), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !stack.NodeReady(n) {
			continue
		}
		addr := nodeAddress(n)
		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	slices.Sort(out)
	return out, ready
}

// follow waits until the cluster has replicas ready pods of app and CoreDNS
// answers name with exactly the addresses of their nodes, and the Service's
// EXTERNAL-IP shows every usable node, pods or not.
func follow(t *testing.T, limit time.Duration, ns, app, name string, replicas int) []string {
	t.Helper()
	var want []string
	stack.Eventually(t, limit, name+" follows the cluster", func() (bool, string) {
		// The addresses and the ready pods come from one list: from two, the
		// pods could become ready between them, and the answer of fewer
		// pods pass for that of all.
		var ready int
		want, ready = nodeAddresses(t, ns, app)
		got, rcode, err := addresses(name)
		if err != nil {
			return false, err.Error()
		}
		ext, usable := externalIPs(t, ns, app), usableNodeAddresses(t)
		if !slices.Equal(ext, usable) {
			return false, fmt.Sprintf("EXTERNAL-IP %q, want every usable node %q", ext, usable)
		}
		if len(want) == 0 {
			return rcode == dns.RcodeNameError && ready == replicas, fmt.Sprintf("%s %q with %d ready pods", dns.RcodeToString[rcode], got, ready)
		}
		return ready == replicas && slices.Equal(got, want),
			fmt.Sprintf("answers %q, want %q with %d/%d ready pods", got, want, ready, replicas)
	})
	return want
}

// nodeAddress returns the IPv4 address skylb publishes for a node: its
// skylb.io/address annotation, else its InternalIP.
func nodeAddress(n *corev1.Node) string {
	addr := n.Annotations["skylb.io/address"]
	for _, a := range n.Status.Addresses {
		if addr == "" && a.Type == corev1.NodeInternalIP && !strings.Contains(a.Address, ":") {
			addr = a.Address
		}
	}
	return addr
}

// usableNodeAddresses returns, sorted, the IPv4 address skylb publishes for
// each usable node (Ready, not excluded from load balancers, not being
// deleted): its skylb.io/address annotation, else its InternalIP. It is what
// the status of a Service of the nodes source lists.
func usableNodeAddresses(t *testing.T) []string {
	t.Helper()
	list, err := st.Kube.CoreV1().Nodes().List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		if _, excluded := n.Labels["node.kubernetes.io/exclude-from-external-load-balancers"]; excluded || n.DeletionTimestamp != nil || !stack.NodeReady(&n) {
			continue
		}
		addr := nodeAddress(&n)
		out = append(out, addr)
	}
	slices.SortFunc(out, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	return out
}

func TestServiceFollowsPodsAndNodes(t *testing.T) {
	namespace(t, "retail")
	deploy(t, "retail", "web", 3, "")
	lbService(t, "retail", "web", annotate("skylb.io/hostname", "www.example.org"))
	all := follow(t, slow, "retail", "web", "web.retail.example.org", 3)
	if len(all) < 2 {
		t.Fatalf("the simulated kubelet spread 3 pods over %d nodes; the test needs at least 2", len(all))
	}
	within(t, quick, "www.example.org", all...)

	t.Run("scaled down", func(t *testing.T) {
		scale(t, "retail", "web", 1)
		follow(t, slow, "retail", "web", "web.retail.example.org", 1)
	})
	t.Run("scaled up", func(t *testing.T) {
		scale(t, "retail", "web", 3)
		follow(t, slow, "retail", "web", "web.retail.example.org", 3)
	})
	t.Run("pod made unready", func(t *testing.T) {
		pods, err := st.Kube.CoreV1().Pods("retail").List(ctxT(t), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("list pods: %v", err)
		}
		p := pods.Items[0]
		patch := []byte(`{"metadata":{"annotations":{"stack.skylb.io/ready":"false"}}}`)
		if _, err := st.Kube.CoreV1().Pods("retail").Patch(ctxT(t), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		follow(t, slow, "retail", "web", "web.retail.example.org", 2)
		patch = []byte(`{"metadata":{"annotations":{"stack.skylb.io/ready":null}}}`)
		if _, err := st.Kube.CoreV1().Pods("retail").Patch(ctxT(t), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		follow(t, slow, "retail", "web", "web.retail.example.org", 3)
	})
	t.Run("node NotReady", func(t *testing.T) {
		before := expectedNodeAddresses(t, "retail", "web")
		victim := ""
		for _, n := range nodes {
			if slices.Contains(before, n.InternalIP[0]) {
				victim = n.Name
				break
			}
		}
		if err := st.SetNodeReady(ctxT(t), victim, false); err != nil {
			t.Fatal(err)
		}
		want := expectedNodeAddresses(t, "retail", "web")
		took := within(t, quick, "web.retail.example.org", want...)
		t.Logf("%s NotReady: its address left the answer after %v", victim, took.Round(time.Millisecond))
		if err := st.SetNodeReady(ctxT(t), victim, true); err != nil {
			t.Fatal(err)
		}
		within(t, quick, "web.retail.example.org", before...)
	})
	t.Run("node address annotation", func(t *testing.T) {
		before := expectedNodeAddresses(t, "retail", "web")
		var target string
		for _, n := range nodes {
			if slices.Contains(before, n.InternalIP[0]) {
				target = n.Name
				break
			}
		}
		annotateNode(t, target, `{"metadata":{"annotations":{"skylb.io/address":"198.51.100.7"}}}`)
		want := expectedNodeAddresses(t, "retail", "web")
		if !slices.Contains(want, "198.51.100.7") {
			t.Fatalf("expected answer %q lacks the override", want)
		}
		within(t, quick, "web.retail.example.org", want...)
		annotateNode(t, target, `{"metadata":{"annotations":{"skylb.io/address":null}}}`)
		within(t, quick, "web.retail.example.org", before...)
	})
	t.Run("no longer a LoadBalancer", func(t *testing.T) {
		before := expectedNodeAddresses(t, "retail", "web")
		setType := func(typ corev1.ServiceType) {
			svc, err := st.Kube.CoreV1().Services("retail").Get(ctxT(t), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			svc.Spec.Type = typ
			if _, err := st.Kube.CoreV1().Services("retail").Update(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		setType(corev1.ServiceTypeNodePort)
		within(t, quick, "web.retail.example.org")
		stack.Eventually(t, quick, "skylb clears the status it wrote", func() (bool, string) {
			ext := externalIPs(t, "retail", "web")
			return len(ext) == 0, fmt.Sprintf("EXTERNAL-IP %q", ext)
		})
		setType(corev1.ServiceTypeLoadBalancer)
		within(t, quick, "web.retail.example.org", before...)
		stack.Eventually(t, quick, "skylb writes the status again", func() (bool, string) {
			ext, usable := externalIPs(t, "retail", "web"), usableNodeAddresses(t)
			return slices.Equal(ext, usable), fmt.Sprintf("EXTERNAL-IP %q, want every usable node %q", ext, usable)
		})
	})
	t.Run("deleted", func(t *testing.T) {
		if err := st.Kube.CoreV1().Services("retail").Delete(ctxT(t), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := within(t, quick, "web.retail.example.org")
		within(t, quick, "www.example.org")
		t.Logf("deleted Service answered NXDOMAIN after %v", took.Round(time.Millisecond))
	})
}

func annotateNode(t *testing.T, name, patch string) {
	t.Helper()
	if _, err := st.Kube.CoreV1().Nodes().Patch(ctxT(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch node %s: %v", name, err)
	}
}

// metallb creates a Service of another load-balancer class whose status the
// test writes, the way MetalLB would.
func metallb(t *testing.T, ns, name string, ingress []corev1.LoadBalancerIngress, opts ...svcOpt) {
	t.Helper()
	class := "metallb.io/metallb"
	opts = append([]svcOpt{func(s *corev1.Service) { s.Spec.LoadBalancerClass = &class }}, opts...)
	svc := lbService(t, ns, name, opts...)
	svc.Status.LoadBalancer.Ingress = ingress
	if _, err := st.Kube.CoreV1().Services(ns).UpdateStatus(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write status of %s/%s: %v", ns, name, err)
	}
}

func TestOtherImplementationsAreReadOnly(t *testing.T) {
	namespace(t, "legacy")
	metallb(t, "legacy", "db", []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}, {IP: "2001:db8::10"}},
		annotate("external-dns.alpha.kubernetes.io/hostname", "db.example.org"))
	within(t, quick, "db.legacy.example.org", "203.0.113.10", "2001:db8::10")
	within(t, quick, "db.example.org", "203.0.113.10", "2001:db8::10")
	if _, aaaa, err := stack.Query(st.DNSAddr, "db.example.org", dns.TypeAAAA); err != nil || !slices.Equal(aaaa, []string{"2001:db8::10"}) {
		t.Errorf("AAAA db.example.org = %q, %v; want [2001:db8::10]", aaaa, err)
	}
	settle(t) // skylb is done with the Service
	if got := externalIPs(t, "legacy", "db"); !slices.Equal(got, []string{"203.0.113.10", "2001:db8::10"}) {
		t.Errorf("skylb changed the status of another implementation's Service: %q", got)
	}

	t.Run("CNAME", func(t *testing.T) {
		// Resolvers ask for addresses and follow the CNAME in the answer.
		// (CoreDNS's etcd plugin answers a query of type CNAME only from a key
		// at the name itself, where skylb stores nothing.)
		metallb(t, "legacy", "cdn", []corev1.LoadBalancerIngress{{Hostname: "lb.provider.example.net"}})
		stack.Eventually(t, quick, "A cdn.legacy.example.org gives the CNAME", func() (bool, string) {
			_, got, err := stack.Query(st.DNSAddr, "cdn.legacy.example.org", dns.TypeA)
			return err == nil && slices.Equal(got, []string{"CNAME lb.provider.example.net"}), fmt.Sprintf("%q %v", got, err)
		})
	})
}

func TestIngressHosts(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "store")
	createIngress(t, ingress("store", "front", []string{"front.example.org", "*.example.org"}, []string{"secure.example.org"}), "203.0.113.20")
	within(t, quick, "front.example.org", "203.0.113.20")
	within(t, quick, "secure.example.org", "203.0.113.20")
	expectEvent(t, "store", "front", "InvalidHostname", "*.example.org")
	// kubectl describe says what was published.
	expectEvent(t, "store", "front", "Published", "published front.example.org, secure.example.org: 203.0.113.20")
}

func expectEvent(t *testing.T, ns, object, reason, text string) {
	t.Helper()
	expectEventIn(t, st.Kube, ns, object, reason, text)
}

// expectEventIn waits for an Event of reason whose message contains text on
// the named object, in the cluster of kube.
func expectEventIn(t *testing.T, kube kubernetes.Interface, ns, object, reason, text string) {
	t.Helper()
	stack.Eventually(t, 10*time.Second, "event "+reason+" on "+ns+"/"+object, func() (bool, string) {
		evs, err := kube.CoreV1().Events(ns).List(ctxT(t), metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Sprintf("events: %q", seen)
	})
}

func TestHostnameClaimedByTwoNamespaces(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "team-a")
	namespace(t, "team-b")
	metallb(t, "team-a", "app", []corev1.LoadBalancerIngress{{IP: "203.0.113.31"}}, annotate("skylb.io/hostname", "app.example.org"))
	within(t, quick, "app.example.org", "203.0.113.31")
	metallb(t, "team-b", "app", []corev1.LoadBalancerIngress{{IP: "203.0.113.32"}}, annotate("skylb.io/hostname", "app.example.org,api.app.example.org"))
	expectEvent(t, "team-b", "app", "HostnameConflict", "app.example.org")
	within(t, quick, "app.team-b.example.org", "203.0.113.32")
	within(t, quick, "app.example.org", "203.0.113.31")
	within(t, quick, "api.app.example.org")
}
