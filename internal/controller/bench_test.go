package controller

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// benchCluster returns LoadBalancer Services of another implementation, with
// their status, and Ingresses, spread over namespaces: the shape of
// scripts/bench.sh's large cluster.
func benchCluster(namespaces, services, ingresses int) []runtime.Object {
	var objs []runtime.Object
	class := "other.example/lb"
	perNS, ingPerNS := services/namespaces, ingresses/namespaces
	addr := netip.MustParseAddr("10.128.0.1")
	for n := range namespaces {
		ns := fmt.Sprintf("bench-%03d", n)
		for i := range perNS {
			addr = addr.Next()
			objs = append(objs, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%04d", i), UID: types.UID(fmt.Sprintf("svc-%s-%d", ns, i))},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class},
				Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: addr.String()}}}},
			})
		}
		for i := range ingPerNS {
			addr = addr.Next()
			name := fmt.Sprintf("ing-%03d", i)
			objs = append(objs, &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("ing-%s-%d", ns, i))},
				Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: name + "." + ns + ".example.org"}}},
				Status:     networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: addr.String()}}}},
			})
		}
	}
	return objs
}

// emptyAtStart is a Publisher that found etcd empty, as at a first start,
// without an etcd to read.
type emptyAtStart struct{ *publish.Group }

func (emptyAtStart) Loaded(context.Context) map[string]uint64 { return map[string]uint64{} }

// BenchmarkSyncAll measures the first full pass over a large cluster: every
// object's publication, the resolution of every name and the records handed
// to the publisher (keys and values encoded), as at start or after a relist.
func BenchmarkSyncAll(b *testing.B) {
	for _, size := range []struct{ ns, svcs, ings int }{{10, 1000, 200}, {100, 10000, 2000}} {
		b.Run(fmt.Sprintf("services=%d,ingresses=%d", size.svcs, size.ings), func(b *testing.B) {
			if testing.Short() && size.svcs > 1000 {
				b.Skip("large cluster")
			}
			objs := benchCluster(size.ns, size.svcs, size.ings)
			log := logrus.New()
			log.SetOutput(io.Discard)
			zones, err := dnsname.ParseZones([]string{"example.org"})
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				b.StopTimer()
				kube := kubefake.New(objs...)
				pub := publish.NewGroup(nil, publish.Config{Prefix: "/skydns", Owner: "bench", Log: log})
				c := New(Config{Source: source.Config{Zones: zones, TTL: 30}, Log: log}, kube, emptyAtStart{pub}, &record.FakeRecorder{}) // no channel: Events are dropped
				ctx, cancel := context.WithCancel(context.Background())
				stop := c.runInformers(ctx)
				if !cache.WaitForCacheSync(ctx.Done(), c.caches.synced...) {
					b.Fatal("caches did not sync")
				}
				b.StartTimer()
				n, err := c.syncAll(ctx)
				b.StopTimer()
				if err != nil || n != size.svcs+size.ings {
					b.Fatalf("synced %d objects (%v), want %d", n, err, size.svcs+size.ings)
				}
				cancel()
				stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size.svcs+size.ings), "ns/object")
		})
	}
}

// BenchmarkSyncService100Endpoints measures the desired state of one Service
// with 100 endpoints (pods address source, 64 published) in a namespace of 100
// Services, from the caches to the records handed to the publisher: the
// publication, the resolution of its group and the publisher's comparison.
// Each iteration makes one endpoint ready or not, so every sync changes one
// address.
func BenchmarkSyncService100Endpoints(b *testing.B) {
	objs := benchCluster(1, 100, 0)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench-000", Name: "web", UID: "web", Annotations: map[string]string{"skylb.io/address-source": "pods"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "bench-000", Name: "web-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := range 100 {
		ready := true
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.0.%d", 1+i)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	objs = append(objs, svc, slice)
	log := logrus.New()
	log.SetOutput(io.Discard)
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		b.Fatal(err)
	}
	kube := kubefake.New(objs...)
	pub := publish.NewGroup(nil, publish.Config{Prefix: "/skydns", Owner: "bench", Log: log})
	// Not leading: no status is queued, so the measure is the records alone.
	c := New(Config{Source: source.Config{Zones: zones, TTL: 30}, Leading: func() bool { return false }, Log: log},
		kube, pub, &record.FakeRecorder{}) // no channel: Events are dropped
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer c.runInformers(ctx)()
	if !cache.WaitForCacheSync(ctx.Done(), c.caches.synced...) {
		b.Fatal("caches did not sync")
	}
	if _, err := c.syncAll(ctx); err != nil {
		b.Fatal(err)
	}
	store := c.caches.informers.slices.list[0].GetStore()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s := slice.DeepCopy()
		ready := i%2 == 1
		s.Endpoints[0].Conditions.Ready = &ready
		if err := store.Update(s); err != nil {
			b.Fatal(err)
		}
		out, err := c.sync(ctx, skydns.ObjectKey{Kind: source.KindService, Namespace: "bench-000", Name: "web"})
		if err != nil {
			b.Fatal(err)
		}
		c.apply(out)
	}
}
