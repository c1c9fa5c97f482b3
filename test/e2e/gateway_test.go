package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/skylb/skylb/test/stack"
)

// gatewayInstalled is when the suite installed the Gateway API CRDs, after
// skylb had started.
var gatewayInstalled time.Time

func gatewayClient(t *testing.T) gatewayclient.Interface {
	t.Helper()
	c, err := gatewayclient.NewForConfig(st.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// listener returns an HTTP listener admitting routes from every namespace.
func listener(name string, port int32, hostname string) gatewayv1.Listener {
	l := gatewayv1.Listener{
		Name: gatewayv1.SectionName(name), Port: port, Protocol: gatewayv1.HTTPProtocolType,
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}},
	}
	if hostname != "" {
		l.Hostname = ptr(gatewayv1.Hostname(hostname))
	}
	return l
}

// createGateway creates a Gateway of the class example and, acting as its
// implementation, writes the given addresses into its status.
func createGateway(t *testing.T, gc gatewayclient.Interface, ns, name string, listeners []gatewayv1.Listener, addrs ...string) {
	t.Helper()
	createGatewayOfClass(t, gc, ns, name, "example", listeners, addrs...)
}

// createGatewayOfClass is createGateway with a GatewayClass.
func createGatewayOfClass(t *testing.T, gc gatewayclient.Interface, ns, name, class string, listeners []gatewayv1.Listener, addrs ...string) {
	t.Helper()
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class), Listeners: listeners},
	}
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctxT(t), gw, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create gateway %s/%s: %v", ns, name, err)
	}
	if len(addrs) > 0 {
		setGatewayAddresses(t, gc, ns, name, addrs...)
	}
}

func setGatewayAddresses(t *testing.T, gc gatewayclient.Interface, ns, name string, addrs ...string) {
	t.Helper()
	gw, err := gc.GatewayV1().Gateways(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gw.Status.Addresses = nil
	for _, a := range addrs {
		gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: ptr(gatewayv1.IPAddressType), Value: a})
	}
	if _, err := gc.GatewayV1().Gateways(ns).UpdateStatus(ctxT(t), gw, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update gateway %s/%s status: %v", ns, name, err)
	}
}

// createRoute creates an HTTPRoute attached to a Gateway's section.
func createRoute(t *testing.T, gc gatewayclient.Interface, ns, name, gwNS, gwName, section string, hostnames ...string) {
	t.Helper()
	ref := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gwName), Namespace: ptr(gatewayv1.Namespace(gwNS))}
	if section != "" {
		ref.SectionName = ptr(gatewayv1.SectionName(section))
	}
	r := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{ref}}},
	}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctxT(t), r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create httproute %s/%s: %v", ns, name, err)
	}
}

// setAccepted writes, as the Gateway's implementation would, whether the
// route's first parent accepted it.
func setAccepted(t *testing.T, gc gatewayclient.Interface, ns, name string, accepted bool) {
	t.Helper()
	r, err := gc.GatewayV1().HTTPRoutes(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, reason := metav1.ConditionTrue, "Accepted"
	if !accepted {
		status, reason = metav1.ConditionFalse, "NotAllowedByListeners"
	}
	r.Status.Parents = []gatewayv1.RouteParentStatus{{
		ParentRef:      r.Spec.ParentRefs[0],
		ControllerName: "example.org/gateway-controller",
		Conditions: []metav1.Condition{{
			Type: string(gatewayv1.RouteConditionAccepted), Status: status, Reason: reason,
			LastTransitionTime: metav1.Now(), ObservedGeneration: r.Generation,
		}},
	}}
	if _, err := gc.GatewayV1().HTTPRoutes(ns).UpdateStatus(ctxT(t), r, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update httproute %s/%s status: %v", ns, name, err)
	}
}

// eventsOf returns "reason: message" of the Events on an object.
func eventsOf(t *testing.T, ns, kind, name string) []string {
	t.Helper()
	evs, err := st.Kube.CoreV1().Events(ns).List(ctxT(t), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

func hasEvent(t *testing.T, ns, kind, name, reason, mentions string) func() (bool, string) {
	return func() (bool, string) {
		evs := eventsOf(t, ns, kind, name)
		return slices.ContainsFunc(evs, func(e string) bool {
			return strings.HasPrefix(e, reason+":") && strings.Contains(e, mentions)
		}), strings.Join(evs, "; ")
	}
}

// TestGatewayRoutes proves the Gateway API end to end: skylb, started before
// the CRDs were installed, publishes accepted routes under the intersection of
// their hostnames with their listeners', and the Gateway's own listener
// hostnames, and follows the Gateway's addresses.
func TestGatewayRoutes(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	gc := gatewayClient(t)
	namespace(t, "gw-infra")
	namespace(t, "gw-shop")
	createGateway(t, gc, "gw-infra", "edge", []gatewayv1.Listener{
		listener("shop", 80, "*.shop.example.org"),
		listener("exact", 8080, "edge.example.org"),
		listener("any", 8081, ""),
	}, "192.0.2.50")
	// Accepted on the wildcard listener: the name beneath it is published,
	// the one outside it is not.
	createRoute(t, gc, "gw-shop", "store", "gw-infra", "edge", "shop", "store.shop.example.org", "outside.example.org")
	setAccepted(t, gc, "gw-shop", "store", true)
	pickedUp := within(t, slow, "store.shop.example.org", "192.0.2.50")
	t.Logf("an accepted route resolved %v after the route was accepted, %v after the CRDs were installed",
		pickedUp.Round(time.Millisecond), time.Since(gatewayInstalled).Round(time.Millisecond))
	within(t, quick, "edge.example.org", "192.0.2.50")
	within(t, quick, "outside.example.org")

	// A route without hostnames on a listener without one has no name; with
	// a wildcard hostname there it is refused as a wildcard.
	createRoute(t, gc, "gw-shop", "wild", "gw-infra", "edge", "any", "*.wild.example.org")
	setAccepted(t, gc, "gw-shop", "wild", true)
	stack.Eventually(t, quick, "InvalidHostname Event on the wildcard route",
		hasEvent(t, "gw-shop", "HTTPRoute", "wild", "InvalidHostname", "*.wild.example.org"))

	// Not accepted: nothing is published, until it is accepted.
	createRoute(t, gc, "gw-shop", "pending", "gw-infra", "edge", "", "pending.example.org")
	createRoute(t, gc, "gw-shop", "refused", "gw-infra", "edge", "", "refused.example.org")
	setAccepted(t, gc, "gw-shop", "refused", false)
	createRoute(t, gc, "gw-shop", "later", "gw-infra", "edge", "", "later.example.org")
	setAccepted(t, gc, "gw-shop", "later", true)
	within(t, quick, "later.example.org", "192.0.2.50")
	for _, name := range []string{"pending.example.org", "refused.example.org"} {
		if got, rcode, err := addresses(name); err != nil || len(got) != 0 {
			t.Errorf("%s: a route no Gateway accepted answers %q (rcode %d, %v), want NXDOMAIN", name, got, rcode, err)
		}
	}
	setAccepted(t, gc, "gw-shop", "refused", true)
	within(t, quick, "refused.example.org", "192.0.2.50")
	stack.Eventually(t, quick, "Published Event on the route",
		hasEvent(t, "gw-shop", "HTTPRoute", "refused", "Published", "refused.example.org: 192.0.2.50"))

	// The Gateway's addresses change: its names and its routes' follow.
	start := time.Now()
	setGatewayAddresses(t, gc, "gw-infra", "edge", "192.0.2.51", "2001:db8::51")
	within(t, quick, "store.shop.example.org", "192.0.2.51", "2001:db8::51")
	within(t, quick, "edge.example.org", "192.0.2.51", "2001:db8::51")
	within(t, quick, "refused.example.org", "192.0.2.51", "2001:db8::51")
	t.Logf("a Gateway's new addresses reached its routes' names in %v", time.Since(start).Round(time.Millisecond))

	// A route leaves when its acceptance is withdrawn, and when it is deleted.
	setAccepted(t, gc, "gw-shop", "later", false)
	within(t, quick, "later.example.org")
	if err := gc.GatewayV1().HTTPRoutes("gw-shop").Delete(ctxT(t), "store", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, quick, "store.shop.example.org")
}

// TestGatewayService proves that a Gateway implemented by a LoadBalancer
// Service skylb publishes takes that Service's addresses: here the nodes
// running its pods, with no address in the Gateway's status.
func TestGatewayService(t *testing.T) {
	gc := gatewayClient(t)
	namespace(t, "gw-lb")
	deploy(t, "gw-lb", "proxy", 1, "node-2")
	lbService(t, "gw-lb", "proxy", func(s *corev1.Service) {
		s.Labels = map[string]string{"gateway.networking.k8s.io/gateway-name": "lb"}
	})
	createGateway(t, gc, "gw-lb", "lb", []gatewayv1.Listener{listener("web", 80, "")})
	createRoute(t, gc, "gw-lb", "app", "gw-lb", "lb", "", "app.gw-lb.example.org")
	setAccepted(t, gc, "gw-lb", "app", true)
	within(t, slow, "app.gw-lb.example.org", "192.0.2.12")
	// The Service loses its endpoints: the route's name goes with them.
	scale(t, "gw-lb", "proxy", 0)
	within(t, slow, "app.gw-lb.example.org")
}
