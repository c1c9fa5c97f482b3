package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// otherClass is the loadBalancerClass of the Services another implementation
// (MetalLB, say) handles; skylb publishes them read-only from their status.
const otherClass = "bench.skylb.io/other-lb"

// managedBy marks the EndpointSlices the benchmark maintains itself.
const managedBy = "bench.skylb.io"

func createNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// lastApplied returns obj as kubectl apply records it in
// kubectl.kubernetes.io/last-applied-configuration: objects in real clusters
// carry it, and it is as large as the object itself.
func lastApplied(obj any) string {
	b, _ := json.Marshal(obj)
	return string(b) + "\n"
}

func labelsFor(app string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       app,
		"app.kubernetes.io/instance":   app,
		"app.kubernetes.io/part-of":    "bench",
		"app.kubernetes.io/managed-by": "kubectl",
	}
}

// statusService is a LoadBalancer Service of another implementation, as
// kubectl apply would create it.
func statusService(ns, name string) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labelsFor(name)},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass:             ptrTo(otherClass),
			AllocateLoadBalancerNodePorts: ptrTo(false),
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP},
			},
		},
	}
	svc.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied(svc)}
	return svc
}

// podsService is a LoadBalancer Service skylb implements, publishing its
// endpoints' addresses; it has no selector, so the benchmark writes its
// EndpointSlice itself, as the endpointslice controller would.
func podsService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: labelsFor(name),
			Annotations: map[string]string{"skylb.io/address-source": "pods"},
		},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: ptrTo(false),
			Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
}

// endpoint is one address of an EndpointSlice and its readiness.
type endpoint struct {
	addr  string
	ready bool
}

func endpointSlice(ns, svc string, eps []endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: svc + "-bench",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: managedBy},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo[int32](8080), Protocol: ptrTo(corev1.ProtocolTCP)}},
	}
	for _, ep := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ep.addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(ep.ready), Serving: ptrTo(ep.ready), Terminating: ptrTo(false)},
		})
	}
	return s
}

// setEndpoints creates or replaces the benchmark's EndpointSlice of a Service.
func setEndpoints(ctx context.Context, kube kubernetes.Interface, ns, svc string, eps []endpoint) error {
	want := endpointSlice(ns, svc, eps)
	slices := kube.DiscoveryV1().EndpointSlices(ns)
	cur, err := slices.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cur.Endpoints = want.Endpoints
	_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func ingress(ns, name, host, backend string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labelsFor(name)},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptrTo("other"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: name + "-tls"}},
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{
						{Path: "/", PathType: ptrTo(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
							Service: &networkingv1.IngressServiceBackend{Name: backend, Port: networkingv1.ServiceBackendPort{Number: 80}}}},
						{Path: "/api", PathType: ptrTo(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
							Service: &networkingv1.IngressServiceBackend{Name: backend, Port: networkingv1.ServiceBackendPort{Number: 443}}}},
					},
				}},
			}},
		},
	}
	ing.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied(ing)}
	return ing
}

// addrN returns the n-th address after base.
func addrN(base netip.Addr, n int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

var (
	serviceBase = netip.MustParseAddr("10.128.0.1") // status addresses of the Services
	ingressBase = netip.MustParseAddr("10.160.0.1") // status addresses of the Ingresses
)

// scale is the shape of the large cluster.
type scale struct {
	Namespaces, Services, Ingresses int
}

func (s scale) namespace(i int) string { return fmt.Sprintf("bench-%03d", i) }

// populate creates the Services and Ingresses of the large cluster with their
// status, as MetalLB and an ingress controller would write it, from workers
// goroutines. It reports progress to logf.
func populate(ctx context.Context, kube kubernetes.Interface, sc scale, workers int, logf func(string, ...any)) error {
	return populateFrom(ctx, kube, scale{}, sc, workers, logf)
}

// populateFrom grows a cluster populated as from to sc: it creates the
// namespaces, Services and Ingresses of sc that from does not have. Both
// must have as many Services and Ingresses per namespace, so that each
// object keeps its name and address.
func populateFrom(ctx context.Context, kube kubernetes.Interface, from, sc scale, workers int, logf func(string, ...any)) error {
	for i := from.Namespaces; i < sc.Namespaces; i++ {
		if err := createNamespace(ctx, kube, sc.namespace(i)); err != nil {
			return err
		}
	}
	type job struct {
		ns, name string
		n        int
		ingress  bool
	}
	jobs := make(chan job)
	var done atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var err error
				if j.ingress {
					err = createIngress(ctx, kube, j.ns, j.name, j.n, sc)
				} else {
					err = createStatusService(ctx, kube, j.ns, j.name, j.n)
				}
				if err != nil {
					fail(fmt.Errorf("%s/%s: %w", j.ns, j.name, err))
					continue
				}
				done.Add(1)
			}
		}()
	}
	total := sc.Services + sc.Ingresses - from.Services - from.Ingresses
	t0 := time.Now()
	stopProgress := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopProgress:
				return
			case <-time.After(10 * time.Second):
				logf("created %d/%d objects (%.0f/s)", done.Load(), total, float64(done.Load())/time.Since(t0).Seconds())
			}
		}
	}()
	perNS := (sc.Services + sc.Namespaces - 1) / sc.Namespaces
	ingPerNS := (sc.Ingresses + sc.Namespaces - 1) / sc.Namespaces
send:
	for i := from.Services; i < sc.Services; i++ {
		ns := sc.namespace(i / perNS)
		select {
		case jobs <- job{ns: ns, name: fmt.Sprintf("svc-%04d", i%perNS), n: i}:
		case <-ctx.Done():
			break send
		}
		if k := i % perNS; k < ingPerNS && (i/perNS)*ingPerNS+k < sc.Ingresses && (i/perNS)*ingPerNS+k >= from.Ingresses {
			n := (i/perNS)*ingPerNS + k
			select {
			case jobs <- job{ns: ns, name: fmt.Sprintf("ing-%03d", k), n: n, ingress: true}:
			case <-ctx.Done():
				break send
			}
		}
	}
	close(jobs)
	wg.Wait()
	close(stopProgress)
	if firstErr != nil {
		return firstErr
	}
	if int(done.Load()) != total {
		return fmt.Errorf("created %d objects, want %d (%v)", done.Load(), total, ctx.Err())
	}
	return nil
}

func createStatusService(ctx context.Context, kube kubernetes.Interface, ns, name string, n int) error {
	svcs := kube.CoreV1().Services(ns)
	svc, err := svcs.Create(ctx, statusService(ns, name), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addrN(serviceBase, n).String(), IPMode: ptrTo(corev1.LoadBalancerIPModeVIP)}}
	_, err = svcs.UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	return err
}

func createIngress(ctx context.Context, kube kubernetes.Interface, ns, name string, n int, sc scale) error {
	ings := kube.NetworkingV1().Ingresses(ns)
	host := fmt.Sprintf("%s.%s.example.org", name, ns)
	ing, err := ings.Create(ctx, ingress(ns, name, host, "svc-0000"), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: addrN(ingressBase, n).String()}}
	_, err = ings.UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	return err
}

func ptrTo[T any](v T) *T { return &v }
