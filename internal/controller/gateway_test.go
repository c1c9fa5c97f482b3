package controller_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// gateway returns a Gateway of class "public" at addr, with an HTTP listener
// of hostname for routes of every namespace.
func gateway(ns, name, hostname, addr string) *gatewayv1.Gateway {
	from, h, ip := gatewayv1.NamespacesFromAll, gatewayv1.Hostname(hostname), gatewayv1.IPAddressType
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0)},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "public", Listeners: []gatewayv1.Listener{{
			Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: &h,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
		}}},
		Status: gatewayv1.GatewayStatus{Addresses: []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: addr}}},
	}
}

// httpRoute returns an HTTPRoute of hostname accepted by the Gateway gwNS/gw.
func httpRoute(ns, name, hostname, gwNS, gw string) *gatewayv1.HTTPRoute {
	parentNS := gatewayv1.Namespace(gwNS)
	ref := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw), Namespace: &parentNS}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0)},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{ref}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(hostname)},
		},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{
			ParentRef:  ref,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}},
		}}}},
	}
}

// TestGatewayKindsSync: the Gateway API's kinds are synced through the
// same table as the Services: a key of each names its cached object.
func TestGatewayKindsSync(t *testing.T) {
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	objects := []runtime.Object{
		gateway("infra", "edge", "*.apps.example.org", "192.0.2.50"),
		httpRoute("shop", "store", "store.apps.example.org", "infra", "edge"),
	}
	tests := []struct {
		name    string
		gateway bool // Config.GatewayAPI
		key     skydns.ObjectKey
		want    controller.Decision
		wantErr bool
	}{
		{
			name: "a route takes its Gateway's addresses", gateway: true,
			key: skydns.ObjectKey{Kind: source.KindHTTPRoute, Namespace: "shop", Name: "store"},
			want: controller.Decision{
				Records: []string{"store.apps.example.org 192.0.2.50"},
				Events:  []string{"Normal Published: published store.apps.example.org: 192.0.2.50"},
			},
		},
		{
			name: "a Gateway of wildcard listeners publishes no name", gateway: true,
			key: skydns.ObjectKey{Kind: source.KindGateway, Namespace: "infra", Name: "edge"},
		},
		{
			name: "a route not cached publishes nothing", gateway: true,
			key: skydns.ObjectKey{Kind: source.KindHTTPRoute, Namespace: "shop", Name: "gone"},
		},
		{
			name:    "a kind not published: a permanent error",
			key:     skydns.ObjectKey{Kind: source.KindHTTPRoute, Namespace: "shop", Name: "store"},
			wantErr: true,
		},
		{
			name: "a kind skylb does not know", gateway: true,
			key:     skydns.ObjectKey{Kind: "widget", Namespace: "shop", Name: "store"},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := objects
			if !tt.gateway {
				objs = nil
			}
			c, err := controller.NewOnListers(controller.Config{
				Source:     source.Config{Zones: zones, TTL: 30, AddressSource: source.ModeStatus},
				GatewayAPI: tt.gateway, Log: quietLog(),
			}, objs...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Sync(context.Background(), tt.key)
			if tt.wantErr {
				if !controller.IsPermanent(err) {
					t.Errorf("Sync(%v) = %v, want a permanent error", tt.key, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Sync(%v) = %v", tt.key, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Sync(%v) (-want +got):\n%s", tt.key, diff)
			}
		})
	}
}
