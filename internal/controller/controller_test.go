package controller_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

const owner = "cluster1"

type env struct {
	t        *testing.T
	kube     *fake.Clientset
	etcd     *clientv3.Client
	pub      *publish.Group
	recorder *record.FakeRecorder
	events   []string
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// run starts a publisher and a controller over the given objects and etcd.
func run(t *testing.T, srv *etcdtest.Server, objects ...runtime.Object) *env {
	t.Helper()
	return runWith(t, srv, source.Config{AddressSource: source.ModeStatus}, objects...)
}

// runWith is run with a source configuration; zones, TTL, the default namespace
// and the namespace allowed the apex (default) are filled in.
func runWith(t *testing.T, srv *etcdtest.Server, cfg source.Config, objects ...runtime.Object) *env {
	t.Helper()
	return runScoped(t, srv, cfg, scope.Scope{}, objects...)
}

// runScoped is runWith with a scope.
func runScoped(t *testing.T, srv *etcdtest.Server, cfg source.Config, sc scope.Scope, objects ...runtime.Object) *env {
	t.Helper()
	e := &env{t: t, kube: fake.NewClientset(objects...), etcd: srv.NewClient(t), recorder: record.NewFakeRecorder(1000)}
	zones, err := dnsname.ParseZones([]string{"example.org", "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e.pub = publish.NewGroup(e.etcd, publish.Config{Prefix: "/skydns", Owner: owner, Log: quietLog()})
	cfg.Zones, cfg.TTL, cfg.DefaultNamespace, cfg.ApexNamespaces = zones, 30, "default", []string{"default"}
	ctrl := controller.New(controller.Config{Source: cfg, Scope: sc, Log: quietLog()}, kubefake.For(e.kube), e.pub, e.recorder)
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
	return e
}

// names returns the published records as "name host" lines, sorted.
func (e *env) names() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := etcdtest.Records(ctx, e.etcd, "/skydns")
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return out
}

// expect waits until the published records are exactly want.
func (e *env) expect(want ...string) {
	e.t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.names()
		if slices.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("published records (-want +got):\n%s", cmp.Diff(want, got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expectEvent waits for a Warning Event whose text contains all parts.
func (e *env) expectEvent(parts ...string) {
	e.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, ev := range e.events {
			if containsAll(ev, parts) {
				return
			}
		}
		select {
		case ev := <-e.recorder.Events:
			e.events = append(e.events, ev)
		case <-deadline:
			e.t.Fatalf("no event with %q among %q", parts, e.events)
		}
	}
}

// drainEvents adds the Events sent so far to e.events.
func (e *env) drainEvents() {
	for {
		select {
		case ev := <-e.recorder.Events:
			e.events = append(e.events, ev)
		default:
			return
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func lbService(ns, name string, created time.Time, ips ...string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, ip := range ips {
		if strings.ContainsAny(ip, "abcdefghijklmnopqrstuvwxyz") && !strings.Contains(ip, ":") {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{Hostname: ip})
		} else {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
	}
	return svc
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestServiceLifecycle(t *testing.T) {
	srv := etcdtest.Start(t)
	e := run(t, srv)
	ctx := context.Background()
	svcs := e.kube.CoreV1().Services("shop")

	svc := lbService("shop", "web", t0, "192.0.2.10")
	svc.Annotations = map[string]string{
		source.AnnotationHostname:                   "www.example.com, shop.example.org.",
		"external-dns.alpha.kubernetes.io/hostname": "legacy.example.org",
	}
	if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(
		"web.shop.example.org 192.0.2.10",
		"www.example.com 192.0.2.10",
		"shop.example.org 192.0.2.10",
		"legacy.example.org 192.0.2.10",
	)

	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.11"}, {IP: "2001:db8::11"}}
	svc.Annotations = map[string]string{source.AnnotationHostname: "www.example.com"}
	if _, err := svcs.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(
		"web.shop.example.org 192.0.2.11", "web.shop.example.org 2001:db8::11",
		"www.example.com 192.0.2.11", "www.example.com 2001:db8::11",
	)

	svc.Spec.Type = corev1.ServiceTypeClusterIP
	if _, err := svcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect()

	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	if _, err := svcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(
		"web.shop.example.org 192.0.2.11", "web.shop.example.org 2001:db8::11",
		"www.example.com 192.0.2.11", "www.example.com 2001:db8::11",
	)
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect()
}

func TestDefaultNamespaceApexAndCNAME(t *testing.T) {
	srv := etcdtest.Start(t)
	apex := lbService("default", "front", t0, "192.0.2.20")
	apex.Annotations = map[string]string{source.AnnotationHostname: "example.com"}
	e := run(t, srv, apex, lbService("default", "alias", t0, "lb.provider.net"))
	e.expect(
		"front.default.example.org 192.0.2.20",
		"front.example.org 192.0.2.20",
		"apex.dns.example.com 192.0.2.20",
		"alias.default.example.org lb.provider.net",
		"alias.example.org lb.provider.net",
	)
}

func TestIngress(t *testing.T) {
	srv := etcdtest.Start(t)
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: metav1.NewTime(t0)},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "app.example.org"}, {Host: "*.example.org"}, {Host: "outside.example.net"}},
			TLS:   []networkingv1.IngressTLS{{Hosts: []string{"secure.example.org", "app.example.org"}}},
		},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
			Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.30"}},
		}},
	}
	e := run(t, srv, ing)
	e.expect("app.example.org 192.0.2.30", "secure.example.org 192.0.2.30")
	e.expectEvent("Warning", source.ReasonInvalidHostname, "*.example.org")
	e.expectEvent("Warning", source.ReasonInvalidHostname, "outside.example.net", "outside every served zone")
}

func TestHostnameConflictAcrossNamespaces(t *testing.T) {
	srv := etcdtest.Start(t)
	older := lbService("team-a", "web", t0, "192.0.2.1")
	older.Annotations = map[string]string{source.AnnotationHostname: "www.example.org"}
	newer := lbService("team-b", "web", t0.Add(time.Hour), "203.0.113.1")
	newer.Annotations = map[string]string{source.AnnotationHostname: "www.example.org,api.www.example.org"}
	sameNS := lbService("team-a", "web2", t0.Add(2*time.Hour), "192.0.2.2")
	sameNS.Annotations = map[string]string{source.AnnotationHostname: "www.example.org"}

	e := run(t, srv, newer, older, sameNS)
	e.expect(
		"web.team-a.example.org 192.0.2.1",
		"web2.team-a.example.org 192.0.2.2",
		"web.team-b.example.org 203.0.113.1",
		"www.example.org 192.0.2.1", "www.example.org 192.0.2.2",
	)
	e.expectEvent("Warning", source.ReasonHostnameConflict, "www.example.org is not published", "team-a")
	e.expectEvent("Warning", source.ReasonHostnameConflict, "api.www.example.org is not published", "team-a")

	// Once the older claims are gone, the newer object gets the names.
	ctx := context.Background()
	for _, name := range []string{"web", "web2"} {
		if err := e.kube.CoreV1().Services("team-a").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.expect(
		"web.team-b.example.org 203.0.113.1",
		"www.example.org 203.0.113.1",
		"api.www.example.org 203.0.113.1",
	)
}

func TestRecordsOfObjectsDeletedWhileDownAreRemoved(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	gone := skydns.Record{Name: "gone.shop.example.org", Host: "192.0.2.99", TTL: 30, Source: "service/shop/gone"}
	foreign := `{"host":"192.0.2.98","owner":"cluster2"}`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, skydns.Key("/skydns", owner, gone), string(skydns.Encode(owner, gone))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "/skydns/org/example/shop/gone/cluster2-1", foreign); err != nil {
		t.Fatal(err)
	}
	e := run(t, srv, lbService("shop", "web", t0, "192.0.2.1"))
	e.expect("web.shop.example.org 192.0.2.1", "gone.shop.example.org 192.0.2.98")
}

// TestAStartTellsWhatChangedWhileDown: a skylb started over the records an
// earlier one published sends the Published Event of the objects that
// changed or came while none ran, and not that of the others again.
func TestAStartTellsWhatChangedWhileDown(t *testing.T) {
	srv := etcdtest.Start(t)
	t.Run("first start", func(t *testing.T) {
		e := run(t, srv, lbService("shop", "web", t0, "192.0.2.1"), lbService("shop", "db", t0, "192.0.2.2"))
		e.expect("web.shop.example.org 192.0.2.1", "db.shop.example.org 192.0.2.2")
		e.expectEvent("Published", "published web.shop.example.org: 192.0.2.1")
	})

	e := run(t, srv, lbService("shop", "web", t0, "192.0.2.1"), lbService("shop", "db", t0, "192.0.2.3"), lbService("shop", "api", t0, "192.0.2.4"))
	// The records are written after the first pass has sent its Events.
	e.expect("web.shop.example.org 192.0.2.1", "db.shop.example.org 192.0.2.3", "api.shop.example.org 192.0.2.4")
	e.drainEvents()
	want := []string{
		"Normal Published published api.shop.example.org: 192.0.2.4",
		"Normal Published published db.shop.example.org: 192.0.2.3",
	}
	got := slices.Sorted(slices.Values(e.events))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events of the second start (-want +got):\n%s", diff)
	}
}
