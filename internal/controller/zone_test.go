package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/internal/zone"
)

// runZone is runWith with the zone records on: nameservers and the apex guard.
func runZone(t *testing.T, srv *etcdtest.Server, zc controller.ZoneConfig, objects ...runtime.Object) (*env, *controller.Controller) {
	t.Helper()
	return runZones(t, srv, zc, nil, objects...)
}

// runZones is runZone with reverse zones too.
func runZones(t *testing.T, srv *etcdtest.Server, zc controller.ZoneConfig, reverse []dnsname.ReverseZone, objects ...runtime.Object) (*env, *controller.Controller) {
	t.Helper()
	e := &env{t: t, kube: fake.NewClientset(objects...), etcd: srv.NewClient(t), recorder: record.NewFakeRecorder(1000)}
	zones, err := dnsname.ParseZones([]string{"example.org", "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e.pub = publish.NewGroup(e.etcd, publish.Config{Prefix: "/skydns", Owner: owner, Log: quietLog()})
	cfg := source.Config{Zones: zones, TTL: 30, DefaultNamespace: "default", AddressSource: source.ModeStatus, ApexNamespaces: []string{"default"}}
	ctrl := controller.New(controller.Config{Source: cfg, Zone: &zc, ReverseZones: reverse, Log: quietLog()}, kubefake.For(e.kube), e.pub, e.recorder)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { e.pub.Run(ctx); done <- struct{}{} }()
	go func() {
		if err := ctrl.Run(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
		done <- struct{}{}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	return e, ctrl
}

func statics(t *testing.T, in ...string) []zone.Static {
	t.Helper()
	out, err := zone.ParseStatics(in, []string{"example.org", "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// guards are the apex guards of both test zones.
var guards = []string{"apex.dns.example.org example.org", "apex.dns.example.com example.com"}

func TestZoneRecordsFromFlags(t *testing.T) {
	srv := etcdtest.Start(t)
	e, ctrl := runZone(t, srv, controller.ZoneConfig{Nameservers: statics(t, "192.0.2.54", "ns1=192.0.2.53")},
		lbService("shop", "web", t0, "192.0.2.1"))
	e.expect(append([]string{
		"web.shop.example.org 192.0.2.1",
		"ns.dns.example.org 192.0.2.53", "ns.dns.example.org 192.0.2.54",
		"ns.dns.example.com 192.0.2.53", "ns.dns.example.com 192.0.2.54",
	}, guards...)...)

	// The keys are those CoreDNS names the nameservers after.
	resp, err := e.etcd.Get(context.Background(), "/skydns/org/example/dns/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	want := []string{"/skydns/org/example/dns/ns/ns1", "/skydns/org/example/dns/ns/ns2"}
	if got := slices.DeleteFunc(keys, func(k string) bool { return !slices.Contains(want, k) }); !slices.Equal(got, want) {
		t.Errorf("nameserver keys %q, want %q", got, want)
	}
	if diff := cmp.Diff(map[string]int{"example.org": 2, "example.com": 2}, ctrl.Nameservers()); diff != "" {
		t.Errorf("Nameservers() (-want +got):\n%s", diff)
	}
}

// The guard is there only while no object publishes the apex.
func TestApexGuardMakesWayForTheApex(t *testing.T) {
	srv := etcdtest.Start(t)
	e, _ := runZone(t, srv, controller.ZoneConfig{})
	e.expect(guards...)

	ctx := context.Background()
	// A namespace not given the apex is refused it, and told so; the guard stays.
	evil := lbService("evil", "web", t0, "198.51.100.66")
	evil.Annotations = map[string]string{source.AnnotationHostname: "example.com"}
	if _, err := e.kube.CoreV1().Services("evil").Create(ctx, evil, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expectEvent("ApexRefused", "example.com", "evil")
	e.expect(append([]string{"web.evil.example.org 198.51.100.66"}, guards...)...)
	if err := e.kube.CoreV1().Services("evil").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	front := lbService("default", "front", t0, "192.0.2.20")
	front.Annotations = map[string]string{source.AnnotationHostname: "example.com"}
	if _, err := e.kube.CoreV1().Services("default").Create(ctx, front, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect("front.default.example.org 192.0.2.20", "front.example.org 192.0.2.20",
		"apex.dns.example.com 192.0.2.20", "apex.dns.example.org example.org")

	if err := e.kube.CoreV1().Services("default").Delete(ctx, "front", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(guards...)
}

func TestNameserversFromSelector(t *testing.T) {
	srv := etcdtest.Start(t)
	dnsSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "coredns", Labels: map[string]string{"app.kubernetes.io/name": "coredns"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort},
	}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "other"}}
	sel, err := labels.Parse("app.kubernetes.io/name=coredns")
	if err != nil {
		t.Fatal(err)
	}
	e, ctrl := runZone(t, srv, controller.ZoneConfig{Nameservers: statics(t, "ns9=198.51.100.9"), NameserverSelector: sel},
		node("n1", true, internalIP("10.0.0.1"), externalIP("192.0.2.1")),
		node("n2", true, internalIP("10.0.0.2")),
		node("n3", true, internalIP("10.0.0.3")),
		node("n4", true, internalIP("127.0.0.4")),
		dnsSvc, other,
		slice("dns", "coredns",
			ep{ip: "10.244.1.53", node: "n1", ready: true},
			ep{ip: "10.244.2.53", node: "n2", ready: true},
			ep{ip: "10.244.3.53", node: "n3"},              // not ready
			ep{ip: "10.244.4.53", node: "n4", ready: true}, // loopback: refused by the default --denied-cidrs
		),
		slice("dns", "other", ep{ip: "10.244.3.54", node: "n3", ready: true}),
	)
	ns := func(addrs ...string) []string {
		var out []string
		for _, z := range []string{"example.org", "example.com"} {
			for _, a := range addrs {
				out = append(out, "ns.dns."+z+" "+a)
			}
		}
		return append(out, guards...)
	}
	e.expect(ns("10.0.0.2", "192.0.2.1", "198.51.100.9")...)
	if got := ctrl.Nameservers()["example.org"]; got != 3 {
		t.Errorf("Nameservers()[example.org] = %d, want 3", got)
	}

	// A node going NotReady stops being a nameserver.
	ctx := context.Background()
	nodes := e.kube.CoreV1().Nodes()
	n2, _ := nodes.Get(ctx, "n2", metav1.GetOptions{})
	n2.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := nodes.UpdateStatus(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(ns("192.0.2.1", "198.51.100.9")...)

	// The DNS server's pod moves to n3.
	if _, err := e.kube.DiscoveryV1().EndpointSlices("dns").Update(ctx,
		slice("dns", "coredns", ep{ip: "10.244.1.53", node: "n1", ready: true}, ep{ip: "10.244.3.53", node: "n3", ready: true}),
		metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(ns("10.0.0.3", "192.0.2.1", "198.51.100.9")...)

	// The Service no longer matches: only the flag's nameserver is left.
	cur, _ := e.kube.CoreV1().Services("dns").Get(ctx, "coredns", metav1.GetOptions{})
	cur.Labels = nil
	if _, err := e.kube.CoreV1().Services("dns").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(ns("198.51.100.9")...)
}

// A restart with nothing changed writes nothing, zone records included.
func TestZoneRecordsRestartWritesNothing(t *testing.T) {
	srv := etcdtest.Start(t)
	zc := controller.ZoneConfig{Nameservers: statics(t, "192.0.2.53", "192.0.2.54")}
	want := append([]string{
		"ns.dns.example.org 192.0.2.53", "ns.dns.example.org 192.0.2.54",
		"ns.dns.example.com 192.0.2.53", "ns.dns.example.com 192.0.2.54",
	}, guards...)
	// The first skylb stops when its subtest ends.
	t.Run("first", func(t *testing.T) {
		first, _ := runZone(t, srv, zc)
		first.expect(want...)
	})

	second, _ := runZone(t, srv, zc)
	second.expect(want...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := second.pub.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := second.pub.Stats(); s.Puts != 0 || s.Deletes != 0 {
		t.Errorf("second publisher wrote %d keys and deleted %d, want none", s.Puts, s.Deletes)
	}
}

// A reverse zone gets its nameservers and apex guard like the others, and
// the PTR records of the addresses in it follow the Services.
func TestReverseZoneRecords(t *testing.T) {
	srv := etcdtest.Start(t)
	reverse, err := dnsname.ParseReverseZones([]string{"192.0.2.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	e, ctrl := runZones(t, srv, controller.ZoneConfig{Nameservers: statics(t, "192.0.2.53")}, reverse,
		lbService("shop", "web", t0, "192.0.2.1", "198.51.100.1"))
	zoneRecords := append([]string{
		"ns.dns.example.org 192.0.2.53", "ns.dns.example.com 192.0.2.53", "ns.dns.2.0.192.in-addr.arpa 192.0.2.53",
		"apex.dns.2.0.192.in-addr.arpa 2.0.192.in-addr.arpa",
	}, guards...)
	e.expect(append([]string{
		"web.shop.example.org 192.0.2.1", "web.shop.example.org 198.51.100.1",
		"1.2.0.192.in-addr.arpa web.shop.example.org",
	}, zoneRecords...)...)
	if got := ctrl.Nameservers()["2.0.192.in-addr.arpa"]; got != 1 {
		t.Errorf("Nameservers()[2.0.192.in-addr.arpa] = %d, want 1", got)
	}
	// The PTR record is the key CoreDNS reads for the address.
	resp, err := e.etcd.Get(context.Background(), "/skydns/arpa/in-addr/192/0/2/1")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get the PTR key = %v, %v; want one key", resp, err)
	}

	// The Service goes: its PTR record with it.
	if err := e.kube.CoreV1().Services("shop").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(zoneRecords...)
}
