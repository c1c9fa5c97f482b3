package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// annotated returns obj with annotations added.
func annotated[T metav1.Object](obj T, kv ...string) T {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	obj.SetAnnotations(a)
	return obj
}

func withClass(svc *corev1.Service, class string) *corev1.Service {
	svc.Spec.LoadBalancerClass = &class
	return svc
}

// TestSyncDecision checks what one sync decides from the listers' contents
// alone: no API server, no etcd, nothing applied.
func TestSyncDecision(t *testing.T) {
	older := annotated(lbService("team-a", "web", t0, "192.0.2.1"), source.AnnotationHostname, "www.example.org")
	newer := annotated(lbService("team-b", "web", t0.Add(time.Hour), "203.0.113.1"), source.AnnotationHostname, "www.example.org")
	nodes := []runtime.Object{
		node("n1", true, internalIP("10.0.0.1"), externalIP("192.0.2.1")),
		node("n2", true, internalIP("10.0.0.2")),
		node("n3", false, internalIP("10.0.0.3")),
	}
	statusMode := source.Config{AddressSource: source.ModeStatus}
	tests := []struct {
		name    string
		cfg     source.Config // zones, TTL and namespaces are filled in
		reverse []string      // reverse zones
		grace   time.Duration // Config.NoEndpointsGrace
		objects []runtime.Object
		// synced are synced first, in order, their decisions dropped;
		// deleted are then removed from the caches.
		synced  []skydns.ObjectKey
		deleted []runtime.Object
		key     skydns.ObjectKey
		want    controller.Decision
	}{
		{
			name: "status addresses of another implementation, with a hostname annotation",
			objects: []runtime.Object{annotated(withClass(lbService("shop", "db", t0, "192.0.2.77"), "metallb.io/metallb"),
				source.AnnotationHostname, "db.example.com")},
			key: svcKey("shop", "db"),
			want: controller.Decision{
				Records: []string{"db.example.com 192.0.2.77", "db.shop.example.org 192.0.2.77"},
				Events:  []string{"Normal Published: published db.example.com, db.shop.example.org: 192.0.2.77"},
			},
		},
		{
			name: "node addresses of the nodes running ready endpoints",
			objects: append(clone(nodes), lbService("shop", "web", t0), slice("shop", "web",
				ep{ip: "10.244.1.5", node: "n1", ready: true},
				ep{ip: "10.244.2.5", node: "n2", ready: true},
				ep{ip: "10.244.3.5", node: "n3", ready: true},
			)),
			key: svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org 10.0.0.2", "web.shop.example.org 192.0.2.1"},
				Events:  []string{"Normal Published: published web.shop.example.org: 10.0.0.2, 192.0.2.1"},
				Status:  map[skydns.ObjectKey][]string{svcKey("shop", "web"): {"10.0.0.2", "192.0.2.1"}},
			},
		},
		{
			name: "pod addresses, health-checked",
			objects: append(clone(nodes),
				annotated(lbService("shop", "mqtt", t0), source.AnnotationAddressSource, "pods", health.AnnotationCheck, "tcp", health.AnnotationPort, "1883"),
				slice("shop", "mqtt", ep{ip: "10.244.1.7", node: "n1", ready: true}, ep{ip: "10.244.1.8", node: "n2"})),
			key: svcKey("shop", "mqtt"),
			want: controller.Decision{
				Records: []string{"mqtt.shop.example.org 10.244.1.7"},
				Events:  []string{"Normal Published: published mqtt.shop.example.org: 10.244.1.7"},
				Status:  map[skydns.ObjectKey][]string{svcKey("shop", "mqtt"): {"mqtt.shop.example.org"}},
				Probes:  map[string][]string{"service/shop/mqtt": {"10.244.1.7:1883"}},
			},
		},
		{
			name:    "no endpoints yet: the Warning waits for the grace period",
			grace:   time.Minute,
			objects: append(clone(nodes), lbService("shop", "web", t0)),
			key:     svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org -"},
				Events:  []string{"Normal Published: published web.shop.example.org: no addresses yet"},
				// The status lists the usable nodes at once, endpoints or not.
				Status:  map[skydns.ObjectKey][]string{svcKey("shop", "web"): {"10.0.0.2", "192.0.2.1"}},
				Requeue: []skydns.ObjectKey{svcKey("shop", "web")},
			},
		},
		{
			name:    "no endpoints without a grace period",
			objects: append(clone(nodes), lbService("shop", "web", t0)),
			key:     svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org -"},
				Events: []string{
					"Normal Published: published web.shop.example.org: no addresses yet",
					"Warning NoEndpoints: no ready endpoints on usable nodes; no records are published",
				},
				Status: map[skydns.ObjectKey][]string{svcKey("shop", "web"): {"10.0.0.2", "192.0.2.1"}},
			},
		},
		{
			name: "a hostname shared with other clusters",
			cfg:  statusMode,
			objects: []runtime.Object{annotated(lbService("shop", "web", t0, "192.0.2.10"),
				source.AnnotationHostname, "www.example.org", source.AnnotationShared, "true")},
			key: svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org 192.0.2.10 shared balanced 100", "www.example.org 192.0.2.10 shared balanced 100"},
				Events:  []string{"Normal Published: published web.shop.example.org, www.example.org: 192.0.2.10"},
			},
		},
		{
			name: "a hostname shared in failover, with this cluster's priority",
			cfg:  statusMode,
			objects: []runtime.Object{annotated(lbService("shop", "web", t0, "192.0.2.10"),
				source.AnnotationHostname, "www.example.org", source.AnnotationShared, "true",
				source.AnnotationClusterPolicy, "failover", source.AnnotationClusterPriority, "20")},
			key: svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org 192.0.2.10 shared failover 20", "www.example.org 192.0.2.10 shared failover 20"},
				Events:  []string{"Normal Published: published web.shop.example.org, www.example.org: 192.0.2.10"},
			},
		},
		{
			name: "an invalid cluster priority: a Warning, and the name still shared",
			cfg:  statusMode,
			objects: []runtime.Object{annotated(lbService("shop", "web", t0, "192.0.2.10"),
				source.AnnotationHostname, "www.example.org", source.AnnotationShared, "true",
				source.AnnotationClusterPolicy, "failover", source.AnnotationClusterPriority, "high")},
			key: svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org 192.0.2.10 shared failover 100", "www.example.org 192.0.2.10 shared failover 100"},
				Events: []string{
					"Normal Published: published web.shop.example.org, www.example.org: 192.0.2.10",
					`Warning InvalidAnnotation: annotation skylb.io/cluster-priority: "high" is not a number from 0 to 65535; using 100`,
				},
			},
		},
		{
			name: "a Service no longer a LoadBalancer: the status skylb wrote is cleared",
			objects: append(clone(nodes), func() *corev1.Service {
				svc := lbService("shop", "web", t0)
				svc.Spec.Type = corev1.ServiceTypeClusterIP
				vip := corev1.LoadBalancerIPModeVIP
				svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.2", IPMode: &vip}}
				return svc
			}()),
			key:  svcKey("shop", "web"),
			want: controller.Decision{Status: map[skydns.ObjectKey][]string{svcKey("shop", "web"): {}}},
		},
		{
			name: "an ExternalName Service with a hostname annotation: a CNAME, and no status",
			objects: []runtime.Object{annotated(externalNameService("shop", "db", "db.example.net"),
				source.AnnotationHostname, "db.example.com")},
			key: svcKey("shop", "db"),
			want: controller.Decision{
				Records: []string{"db.example.com db.example.net", "db.shop.example.org db.example.net"},
				Events:  []string{"Normal Published: published db.example.com, db.shop.example.org: CNAME db.example.net"},
			},
		},
		{
			name: "an ExternalName Service with an IP address for a name",
			objects: []runtime.Object{annotated(externalNameService("shop", "db", "192.0.2.10"),
				source.AnnotationHostname, "")},
			key: svcKey("shop", "db"),
			want: controller.Decision{
				Records: []string{"db.shop.example.org -"},
				Events: []string{
					"Normal Published: published db.shop.example.org: no CNAME: spec.externalName is not a host name",
					`Warning InvalidExternalName: spec.externalName "192.0.2.10": an IP address`,
				},
			},
		},
		{
			name:    "an ExternalName Service without a hostname annotation",
			objects: []runtime.Object{externalNameService("shop", "db", "db.example.net")},
			key:     svcKey("shop", "db"),
		},
		{
			name: "an ExternalName Service pointing beneath its own name",
			objects: []runtime.Object{annotated(externalNameService("shop", "db", "a.db.shop.example.org"),
				source.AnnotationHostname, "")},
			key: svcKey("shop", "db"),
			want: controller.Decision{
				Records: []string{"db.shop.example.org -"},
				Events: []string{
					"Normal Published: published db.shop.example.org: CNAME a.db.shop.example.org",
					"Warning CNAMELoop: hostname db.shop.example.org is not published as a CNAME to a.db.shop.example.org",
				},
			},
		},
		{
			name:    "addresses in a reverse zone get PTR records, to the name a person gave",
			cfg:     statusMode,
			reverse: []string{"192.0.2.0/24"},
			objects: []runtime.Object{annotated(lbService("shop", "web", t0, "192.0.2.10", "198.51.100.10"),
				source.AnnotationHostname, "www.example.org")},
			key: svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{
					"10.2.0.192.in-addr.arpa www.example.org follows www.example.org",
					"web.shop.example.org 192.0.2.10", "web.shop.example.org 198.51.100.10",
					"www.example.org 192.0.2.10", "www.example.org 198.51.100.10",
				},
				Events: []string{"Normal Published: published web.shop.example.org, www.example.org: 192.0.2.10, 198.51.100.10"},
			},
		},
		{
			name:    "the name refused: no PTR record for its address",
			cfg:     statusMode,
			reverse: []string{"203.0.113.0/24"},
			objects: []runtime.Object{older, newer},
			synced:  []skydns.ObjectKey{svcKey("team-a", "web")},
			key:     svcKey("team-b", "web"),
			want: controller.Decision{
				Records: []string{
					"1.113.0.203.in-addr.arpa web.team-b.example.org follows web.team-b.example.org",
					"web.team-b.example.org 203.0.113.1", "www.example.org 192.0.2.1",
				},
				Events: []string{
					"Normal Published: published web.team-b.example.org: 203.0.113.1",
					"Warning HostnameConflict: hostname www.example.org is not published",
				},
			},
		},
		{
			name:    "a deleted Service takes its PTR record with it",
			cfg:     statusMode,
			reverse: []string{"192.0.2.0/24"},
			objects: []runtime.Object{lbService("shop", "web", t0, "192.0.2.10")},
			synced:  []skydns.ObjectKey{svcKey("shop", "web")},
			deleted: []runtime.Object{lbService("shop", "web", t0, "192.0.2.10")},
			key:     svcKey("shop", "web"),
			want:    controller.Decision{Records: []string{"10.2.0.192.in-addr.arpa -", "web.shop.example.org -"}},
		},
		{
			name: "a malformed hostname annotation",
			cfg:  statusMode,
			objects: []runtime.Object{annotated(lbService("shop", "web", t0, "192.0.2.10"),
				source.AnnotationHostname, "bad_name!.example.org, www.example.net")},
			key: svcKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"web.shop.example.org 192.0.2.10"},
				Events: []string{
					"Normal Published: published web.shop.example.org: 192.0.2.10",
					"Warning InvalidHostname: ",
					"Warning InvalidHostname: ",
				},
			},
		},
		{
			name:    "a hostname another namespace claimed first",
			cfg:     statusMode,
			objects: []runtime.Object{older, newer},
			synced:  []skydns.ObjectKey{svcKey("team-a", "web")},
			key:     svcKey("team-b", "web"),
			want: controller.Decision{
				Records: []string{"web.team-b.example.org 203.0.113.1", "www.example.org 192.0.2.1"},
				Events: []string{
					"Normal Published: published web.team-b.example.org: 203.0.113.1",
					"Warning HostnameConflict: hostname www.example.org is not published",
				},
			},
		},
		{
			name:    "the older claim goes: the other namespace gets the name",
			cfg:     statusMode,
			objects: []runtime.Object{older, newer},
			synced:  []skydns.ObjectKey{svcKey("team-a", "web"), svcKey("team-b", "web")},
			deleted: []runtime.Object{older},
			key:     svcKey("team-a", "web"),
			want: controller.Decision{
				Records: []string{"web.team-a.example.org -", "www.example.org 203.0.113.1"},
				Events:  []string{"Normal Published: published web.team-b.example.org, www.example.org: 203.0.113.1"},
			},
		},
		{
			name: "the same namespace shares a name",
			cfg:  statusMode,
			objects: []runtime.Object{older,
				annotated(lbService("team-a", "web2", t0.Add(time.Hour), "192.0.2.2"), source.AnnotationHostname, "www.example.org")},
			synced: []skydns.ObjectKey{svcKey("team-a", "web")},
			key:    svcKey("team-a", "web2"),
			want: controller.Decision{
				// The group of names is resolved again as a whole; web's
				// own names did not change, and it is not told again.
				Records: []string{
					"web.team-a.example.org 192.0.2.1", "web2.team-a.example.org 192.0.2.2",
					"www.example.org 192.0.2.1", "www.example.org 192.0.2.2",
				},
				Events: []string{"Normal Published: published web2.team-a.example.org, www.example.org: 192.0.2.2"},
			},
		},
		{
			name: "an Ingress with a status and rules outside the zones",
			objects: []runtime.Object{&networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: metav1.NewTime(t0)},
				Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "app.example.org"}, {Host: "outside.example.net"}}},
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
					Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.30"}},
				}},
			}},
			key: ingKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"app.example.org 192.0.2.30"},
				Events: []string{
					"Normal Published: published app.example.org: 192.0.2.30",
					"Warning InvalidHostname: ",
				},
			},
		},
		{
			name: "an Ingress through the ingress controller's Service",
			cfg:  source.Config{IngressService: "ingress/nginx"},
			objects: append(clone(nodes), lbService("ingress", "nginx", t0),
				slice("ingress", "nginx", ep{ip: "10.244.1.3", node: "n2", ready: true}),
				&networkingv1.Ingress{
					ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: metav1.NewTime(t0)},
					Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "app.example.org"}}},
				}),
			key: ingKey("shop", "web"),
			want: controller.Decision{
				Records: []string{"app.example.org 10.0.0.2"},
				Events:  []string{"Normal Published: published app.example.org: 10.0.0.2"},
			},
		},
		{
			name:    "a deleted Service",
			cfg:     statusMode,
			objects: []runtime.Object{lbService("shop", "web", t0, "192.0.2.10")},
			synced:  []skydns.ObjectKey{svcKey("shop", "web")},
			deleted: []runtime.Object{lbService("shop", "web", t0, "192.0.2.10")},
			key:     svcKey("shop", "web"),
			want:    controller.Decision{Records: []string{"web.shop.example.org -"}},
		},
	}
	zones, err := dnsname.ParseZones([]string{"example.org", "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Zones, cfg.TTL, cfg.DefaultNamespace, cfg.ApexNamespaces = zones, 30, "default", []string{"default"}
			reverse, err := dnsname.ParseReverseZones(tt.reverse)
			if err != nil {
				t.Fatal(err)
			}
			c, err := controller.NewOnListers(controller.Config{Source: cfg, ReverseZones: reverse, NoEndpointsGrace: tt.grace, Log: quietLog()}, tt.objects...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, key := range tt.synced {
				if _, err := c.Sync(ctx, key); err != nil {
					t.Fatalf("Sync(%s) = %v", key, err)
				}
			}
			for _, obj := range tt.deleted {
				if err := c.Delete(obj); err != nil {
					t.Fatal(err)
				}
			}
			got, err := c.Sync(ctx, tt.key)
			if err != nil {
				t.Fatalf("Sync(%s) = %v", tt.key, err)
			}
			// An Event's message is compared by its beginning, given in want.
			prefix := cmp.Comparer(func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) })
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() != "" && strings.Contains(p.GoString(), "Events")
			}, prefix)); diff != "" {
				t.Errorf("Sync(%s) (-want +got):\n%s", tt.key, diff)
			}
		})
	}
}

func svcKey(ns, name string) skydns.ObjectKey {
	return skydns.ObjectKey{Kind: source.KindService, Namespace: ns, Name: name}
}

func ingKey(ns, name string) skydns.ObjectKey {
	return skydns.ObjectKey{Kind: source.KindIngress, Namespace: ns, Name: name}
}

func externalNameService(ns, name, target string) *corev1.Service {
	svc := lbService(ns, name, t0)
	svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, target
	return svc
}

// clone copies objects, so that each case appends to its own list.
func clone(objs []runtime.Object) []runtime.Object { return append([]runtime.Object(nil), objs...) }
