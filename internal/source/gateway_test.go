package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/skylb/skylb/internal/skydns"
)

func hostnamePtr(s string) *gatewayv1.Hostname {
	if s == "" {
		return nil
	}
	h := gatewayv1.Hostname(s)
	return &h
}

func TestIntersect(t *testing.T) {
	tests := []struct {
		name     string
		listener string
		route    []gatewayv1.Hostname
		want     []string
	}{
		{name: "neither has hostnames", want: nil},
		{name: "route without hostnames takes the listener's", listener: "a.example.org", want: []string{"a.example.org"}},
		{name: "route without hostnames on a wildcard listener", listener: "*.example.org", want: []string{"*.example.org"}},
		{name: "listener without hostname takes the route's", route: []gatewayv1.Hostname{"a.example.org", "B.example.org"}, want: []string{"a.example.org", "b.example.org"}},
		{name: "exact match", listener: "a.example.org", route: []gatewayv1.Hostname{"a.example.org", "b.example.org"}, want: []string{"a.example.org"}},
		{name: "wildcard listener matches one or more labels", listener: "*.example.org", route: []gatewayv1.Hostname{"a.example.org", "x.a.example.org", "example.org", "a.example.com"}, want: []string{"a.example.org", "x.a.example.org"}},
		{name: "wildcard route narrowed to the listener", listener: "a.example.org", route: []gatewayv1.Hostname{"*.example.org"}, want: []string{"a.example.org"}},
		{name: "narrower wildcard route", listener: "*.example.org", route: []gatewayv1.Hostname{"*.a.example.org"}, want: []string{"*.a.example.org"}},
		{name: "narrower wildcard listener", listener: "*.a.example.org", route: []gatewayv1.Hostname{"*.example.org"}, want: []string{"*.a.example.org"}},
		{name: "no match", listener: "a.example.org", route: []gatewayv1.Hostname{"b.example.org", "*.a.example.org"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Intersect(hostnamePtr(tt.listener), tt.route)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Intersect(%q, %q) mismatch (-want +got):\n%s", tt.listener, tt.route, diff)
			}
		})
	}
}

func gwListener(name string, port int32, proto gatewayv1.ProtocolType, hostname string, from gatewayv1.FromNamespaces) gatewayv1.Listener {
	return gatewayv1.Listener{
		Name: gatewayv1.SectionName(name), Port: port, Protocol: proto, Hostname: hostnamePtr(hostname),
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
	}
}

func testGateway() *gatewayv1.Gateway {
	ip := gatewayv1.IPAddressType
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge", UID: types.UID("uid-edge"), CreationTimestamp: metav1.NewTime(testCreated)},
		Spec: gatewayv1.GatewaySpec{Listeners: []gatewayv1.Listener{
			gwListener("shop", 80, gatewayv1.HTTPProtocolType, "*.shop.example.org", gatewayv1.NamespacesFromAll),
			gwListener("edge", 80, gatewayv1.HTTPProtocolType, "edge.example.org", gatewayv1.NamespacesFromAll),
			gwListener("same", 8080, gatewayv1.HTTPProtocolType, "", gatewayv1.NamespacesFromSame),
			gwListener("tls", 443, gatewayv1.TLSProtocolType, "", gatewayv1.NamespacesFromAll),
		}},
		Status: gatewayv1.GatewayStatus{Addresses: []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "192.0.2.50"}, {Value: "bad"}}},
	}
}

func route(kind, ns string, hostnames []gatewayv1.Hostname, section string, accepted *bool) Route {
	gwNS := gatewayv1.Namespace("infra")
	ref := gatewayv1.ParentReference{Name: "edge", Namespace: &gwNS}
	if section != "" {
		s := gatewayv1.SectionName(section)
		ref.SectionName = &s
	}
	r := Route{
		Kind:       kind,
		Meta:       &metav1.ObjectMeta{Namespace: ns, Name: "r", UID: types.UID("uid-r"), CreationTimestamp: metav1.NewTime(testCreated)},
		Hostnames:  hostnames,
		ParentRefs: []gatewayv1.ParentReference{ref},
	}
	if accepted != nil {
		status := metav1.ConditionFalse
		if *accepted {
			status = metav1.ConditionTrue
		}
		r.Parents = []gatewayv1.RouteParentStatus{{ParentRef: ref, Conditions: []metav1.Condition{{Type: "Accepted", Status: status}}}}
	}
	return r
}

func TestRoute(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name  string
		route Route
		want  *Publication
	}{
		{
			name:  "accepted: the intersection with the listener, the Gateway's addresses",
			route: route(KindHTTPRoute, "shop", []gatewayv1.Hostname{"store.shop.example.org", "outside.example.org"}, "shop", &yes),
			want: &Publication{Key: skydns.ObjectKey{Kind: "httproute", Namespace: "shop", Name: "r"}, Source: "httproute/shop/r", Created: testCreated, TTL: 300,
				Names: []Name{host("store.shop.example.org", "example.org")}, Addresses: addrs("192.0.2.50"),
				Problems: []Problem{problem(ReasonInvalidAddress, `"bad"`)}},
		},
		{
			name:  "not accepted: nothing",
			route: route(KindHTTPRoute, "shop", []gatewayv1.Hostname{"store.shop.example.org"}, "shop", &no),
			want:  &Publication{Key: skydns.ObjectKey{Kind: "httproute", Namespace: "shop", Name: "r"}, Source: "httproute/shop/r", Created: testCreated, TTL: 300},
		},
		{
			name:  "no status: nothing",
			route: route(KindHTTPRoute, "shop", []gatewayv1.Hostname{"store.shop.example.org"}, "shop", nil),
			want:  &Publication{Key: skydns.ObjectKey{Kind: "httproute", Namespace: "shop", Name: "r"}, Source: "httproute/shop/r", Created: testCreated, TTL: 300},
		},
		{
			name:  "the Gateway's own listener hostname is left to the Gateway",
			route: route(KindHTTPRoute, "shop", nil, "edge", &yes),
			want: &Publication{Key: skydns.ObjectKey{Kind: "httproute", Namespace: "shop", Name: "r"}, Source: "httproute/shop/r", Created: testCreated, TTL: 300,
				Addresses: addrs("192.0.2.50"), Problems: []Problem{problem(ReasonInvalidAddress, `"bad"`)}},
		},
		{
			name:  "wildcard result refused",
			route: route(KindHTTPRoute, "shop", nil, "shop", &yes),
			want: &Publication{Key: skydns.ObjectKey{Kind: "httproute", Namespace: "shop", Name: "r"}, Source: "httproute/shop/r", Created: testCreated, TTL: 300,
				Addresses: addrs("192.0.2.50"),
				Problems:  []Problem{problem(ReasonInvalidAddress, `"bad"`), problem(ReasonInvalidHostname, "*.shop.example.org")}},
		},
		{
			name:  "listener of the same namespace only: a route of another is not attached",
			route: route(KindHTTPRoute, "shop", []gatewayv1.Hostname{"a.example.org"}, "same", &yes),
			want:  &Publication{Key: skydns.ObjectKey{Kind: "httproute", Namespace: "shop", Name: "r"}, Source: "httproute/shop/r", Created: testCreated, TTL: 300},
		},
		{
			name:  "TLSRoute attaches to the TLS listener only",
			route: route(KindTLSRoute, "shop", []gatewayv1.Hostname{"db.example.org"}, "", &yes),
			want: &Publication{Key: skydns.ObjectKey{Kind: "tlsroute", Namespace: "shop", Name: "r"}, Source: "tlsroute/shop/r", Created: testCreated, TTL: 300,
				Names: []Name{host("db.example.org", "example.org")}, Addresses: addrs("192.0.2.50"),
				Problems: []Problem{problem(ReasonInvalidAddress, `"bad"`)}},
		},
	}
	gateways := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := gateways.Add(testGateway()); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(testConfig, Listers{Gateways: gatewaylisters.NewGatewayLister(gateways)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.Route(tt.route)
			if diff := diffPub(tt.want, got); diff != "" {
				t.Errorf("Route() mismatch (-want +got):\n%s", diff)
			}
			checkProblemMessages(t, tt.want, got)
			if got == nil {
				return
			}
			wantRef := &corev1.ObjectReference{Kind: map[string]string{KindHTTPRoute: "HTTPRoute", KindTLSRoute: "TLSRoute"}[tt.route.Kind],
				APIVersion: "gateway.networking.k8s.io/v1", Namespace: tt.route.Meta.Namespace, Name: "r", UID: "uid-r"}
			if ref, ok := got.Ref(); !ok {
				t.Error("Route().Ref() refused")
			} else if diff := cmp.Diff(wantRef, ref); diff != "" {
				t.Errorf("Route().Ref() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGateway(t *testing.T) {
	b := NewBuilder(testConfig, Listers{})
	gw := testGateway()
	gw.Annotations = map[string]string{AnnotationHostname: "www.example.org", AnnotationTTL: "60"}
	want := &Publication{Key: skydns.ObjectKey{Kind: "gateway", Namespace: "infra", Name: "edge"}, Source: "gateway/infra/edge", Created: testCreated, TTL: 60,
		Names:     []Name{host("edge.example.org", "example.org"), host("www.example.org", "example.org")},
		Addresses: addrs("192.0.2.50"), Problems: []Problem{problem(ReasonInvalidAddress, `"bad"`)}}
	got := b.Gateway(gw)
	if diff := diffPub(want, got); diff != "" {
		t.Errorf("Gateway() mismatch (-want +got):\n%s", diff)
	}
	checkProblemMessages(t, want, got)
	wantRef := &corev1.ObjectReference{Kind: "Gateway", APIVersion: "gateway.networking.k8s.io/v1", Namespace: "infra", Name: "edge", UID: "uid-edge"}
	if ref, ok := got.Ref(); !ok {
		t.Error("Gateway().Ref() refused")
	} else if diff := cmp.Diff(wantRef, ref); diff != "" {
		t.Errorf("Gateway().Ref() mismatch (-want +got):\n%s", diff)
	}
}
