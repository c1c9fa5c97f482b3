package controller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/externaldns"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

func dnsEndpoint(ns, name string, generation, observed int64, l map[string]string, endpoints ...externaldns.Endpoint) *externaldns.DNSEndpoint {
	return &externaldns.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: generation, Labels: l, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       externaldns.DNSEndpointSpec{Endpoints: endpoints},
		Status:     externaldns.DNSEndpointStatus{ObservedGeneration: observed},
	}
}

// TestDNSEndpointSync: a DNSEndpoint is synced through the table as the
// other kinds are: its records, its Events, and its observed generation
// queued for writing until it is the one published.
func TestDNSEndpointSync(t *testing.T) {
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	key := skydns.ObjectKey{Kind: source.KindDNSEndpoint, Namespace: "shop", Name: "records"}
	www := externaldns.Endpoint{DNSName: "www.example.org", RecordType: "A", Targets: []string{"192.0.2.1"}, RecordTTL: 60}
	ns := externaldns.Endpoint{DNSName: "sub.example.org", RecordType: "NS", Targets: []string{"ns1.example.net"}}
	tests := []struct {
		name     string
		selector string // --label-selector
		objects  []runtime.Object
		want     controller.Decision
	}{
		{
			name:    "records, a refused NS endpoint told, and the generation to write",
			objects: []runtime.Object{dnsEndpoint("shop", "records", 2, 1, nil, www, ns)},
			want: controller.Decision{
				Records: []string{"www.example.org 192.0.2.1"},
				Events: []string{
					"Normal Published: published www.example.org: 192.0.2.1",
					"Warning RecordTypeRefused: spec.endpoints[1] (sub.example.org NS) is not published",
				},
				Status: map[skydns.ObjectKey][]string{key: {}},
			},
		},
		{
			name:    "the generation observed already: no status",
			objects: []runtime.Object{dnsEndpoint("shop", "records", 2, 2, nil, www)},
			want: controller.Decision{
				Records: []string{"www.example.org 192.0.2.1"},
				Events:  []string{"Normal Published: published www.example.org: 192.0.2.1"},
			},
		},
		{
			name:     "outside --label-selector: left to another controller",
			selector: "dns=skylb",
			objects:  []runtime.Object{dnsEndpoint("shop", "records", 2, 1, map[string]string{"dns": "external"}, www)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := labels.Parse(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			c, err := controller.NewOnListers(controller.Config{
				Source:      source.Config{Zones: zones, TTL: 30, AddressSource: source.ModeStatus, ApexNamespaces: []string{"shop"}},
				DNSEndpoint: true, Scope: scope.Scope{Selector: sel}, Log: quietLog(),
			}, tt.objects...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Sync(context.Background(), key)
			if err != nil {
				t.Fatalf("Sync(%v) = %v", key, err)
			}
			// An Event's message is compared by its beginning, given in want.
			prefix := cmp.Comparer(func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) })
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() != "" && strings.Contains(p.GoString(), "Events")
			}, prefix)); diff != "" {
				t.Errorf("Sync(%v) (-want +got):\n%s", key, diff)
			}
		})
	}
}
