package controller

import (
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// TestKindsOf: the table holds every kind published, and the kinds of
// CRDs wait for their resources.
func TestKindsOf(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want map[string]schema.GroupVersionResource // kind -> resource waited for; zero: runs from the start
	}{
		{name: "without the Gateway API", want: map[string]schema.GroupVersionResource{
			source.KindService: {}, source.KindIngress: {},
		}},
		{name: "with the Gateway API", cfg: Config{GatewayAPI: true}, want: map[string]schema.GroupVersionResource{
			source.KindService: {}, source.KindIngress: {},
			source.KindGateway: kubeclient.Gateways, source.KindHTTPRoute: kubeclient.HTTPRoutes,
			source.KindGRPCRoute: kubeclient.GRPCRoutes, source.KindTLSRoute: kubeclient.TLSRoutes,
		}},
		{
			name: "one route: the Gateways are read for its addresses",
			cfg:  Config{GatewayAPI: true, Scope: scope.Scope{Kinds: []string{source.KindHTTPRoute}}},
			want: map[string]schema.GroupVersionResource{
				source.KindService: {}, source.KindIngress: {},
				source.KindGateway: kubeclient.Gateways, source.KindHTTPRoute: kubeclient.HTTPRoutes,
			},
		},
	}
	tests = append(tests, struct {
		name string
		cfg  Config
		want map[string]schema.GroupVersionResource
	}{
		name: "DNSEndpoints", cfg: Config{DNSEndpoint: true, Scope: scope.Scope{Kinds: []string{source.KindDNSEndpoint}}},
		want: map[string]schema.GroupVersionResource{
			source.KindService: {}, source.KindIngress: {}, source.KindDNSEndpoint: kubeclient.DNSEndpoints,
		},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]schema.GroupVersionResource{}
			for _, k := range kindsOf(tt.cfg, informerMaker{api: kubefake.New()}, informerSet{}, informerSet{}) {
				if k.indexer == nil || k.publication == nil {
					t.Errorf("kind %s: indexer %v, publication %v; want both", k.kind, k.indexer, k.publication != nil)
				}
				got[k.kind] = schema.GroupVersionResource{}
				if k.served != nil {
					got[k.kind] = k.served.GroupVersionResource
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kindsOf() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChangesEnqueueKeys: what a change queues are the keys of the objects
// it affects, whatever their kind.
func TestChangesEnqueueKeys(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	c := New(Config{GatewayAPI: true, Log: log}, kubefake.New(), nil, nil)
	c.phase.started.Store(true)
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge"}}
	ns := gatewayv1.Namespace("infra")
	attached := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "store"}}
	attached.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "edge", Namespace: &ns}}
	other := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}
	other.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "elsewhere"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	for kind, obj := range map[string]any{source.KindGateway: gw, source.KindHTTPRoute: attached, source.KindGRPCRoute: other, source.KindService: svc} {
		if err := c.kindOf(kind).informers.list[0].GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	drain := func() []skydns.ObjectKey {
		var out []skydns.ObjectKey
		for c.queue.Len() > 0 {
			k, _ := c.queue.Get()
			c.queue.Done(k)
			out = append(out, k)
		}
		slices.SortFunc(out, compareKeys)
		return out
	}
	key := func(kind, ns, name string) skydns.ObjectKey {
		return skydns.ObjectKey{Kind: kind, Namespace: ns, Name: name}
	}

	c.kindOf(source.KindGateway).changed(c, cache.NewObjectName("infra", "edge"), gw, nil, gw)
	if diff := cmp.Diff([]skydns.ObjectKey{key(source.KindHTTPRoute, "shop", "store")}, drain()); diff != "" {
		t.Errorf("a Gateway's change queued (-want +got):\n%s", diff)
	}
	c.enqueueAddressUsers()
	want := []skydns.ObjectKey{
		key(source.KindGateway, "infra", "edge"), key(source.KindGRPCRoute, "shop", "api"),
		key(source.KindHTTPRoute, "shop", "store"), key(source.KindService, "shop", "web"),
	}
	if diff := cmp.Diff(want, drain()); diff != "" {
		t.Errorf("a Node's change queued (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, c.cachedKeys()); diff != "" {
		t.Errorf("cachedKeys() (-want +got):\n%s", diff)
	}
}
