package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/leader"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/registry"
	"github.com/skylb/skylb/internal/scope"
	"github.com/skylb/skylb/internal/source"
)

// testConfig returns the configuration of a skylb publishing the status
// addresses of Services into example.org.
func testConfig(t *testing.T) Config {
	t.Helper()
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	return Config{
		Version: "test",
		Controller: controller.Config{
			Source:        source.Config{Zones: zones, TTL: 30, AddressSource: source.ModeStatus},
			HealthWorkers: 2,
		},
		Publish: publish.Config{Prefix: "/skydns", Owner: "cluster1", Timeout: 5 * time.Second},
		Log:     log,
	}
}

func webService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web",
			Annotations: map[string]string{source.AnnotationHostname: "www.example.org"}},
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}}},
	}
}

// published returns the records under /skydns as "name host" lines, sorted.
func published(t *testing.T, c *clientv3.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := etcdtest.Records(ctx, c, "/skydns")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunOnce(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	kube := fake.NewClientset(webService())
	want := []string{"web.shop.example.org 192.0.2.10", "www.example.org 192.0.2.10"}
	for _, tt := range []struct {
		name    string
		summary string
	}{
		{
			name:    "first run writes",
			summary: "names: 2\nrecords: 2\nrecords written: 2\nrecords deleted: 0\nrecords unchanged: 0\n",
		},
		{
			name:    "second run finds everything in place",
			summary: "names: 2\nrecords: 2\nrecords written: 0\nrecords deleted: 0\nrecords unchanged: 2\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			var summary bytes.Buffer
			cfg.Once, cfg.OnceTimeout, cfg.Summary = true, 30*time.Second, &summary
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := Run(ctx, cfg, Clients{Kube: kubefake.For(kube)}, etcd); err != nil {
				t.Fatalf("Run = %v", err)
			}
			if diff := cmp.Diff(tt.summary, summary.String()); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, published(t, etcd)); diff != "" {
				t.Errorf("published (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunOnceRefusesAnotherScope: skylb --once fails at once, writing
// nothing, while a skylb of another scope runs with its owner id.
func TestRunOnceRefusesAnotherScope(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := etcd.Put(ctx, "/skylb/scopes/cluster1/other", `{"scope":"namespace=blog","instance":"other"}`); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []scope.Scope{{}, {Namespaces: []string{"shop"}}} {
		cfg := testConfig(t)
		cfg.Controller.Scope = sc
		cfg.Once, cfg.OnceTimeout, cfg.Summary = true, 30*time.Second, io.Discard
		start := time.Now()
		err := Run(ctx, cfg, Clients{Kube: kubefake.New(webService())}, etcd)
		if !errors.Is(err, registry.ErrConflict) {
			t.Errorf("Run with scope %q = %v, want ErrConflict", sc, err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("Run with scope %q took %v to refuse", sc, d)
		}
		if got := published(t, etcd); len(got) != 0 {
			t.Errorf("Run with scope %q published %q", sc, got)
		}
	}
}

// replicaConfig is testConfig with leader election, as replica-1.
func replicaConfig(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.LeaderElect = true
	cfg.Leader = leader.Config{Namespace: "skylb", Name: "skylb", Identity: "replica-1", EtcdKey: "/skylb/leader/cluster1"}
	return cfg
}

// TestStandsForLeaderOnceReady: a replica does not take the Lease while its
// caches have not synced, so that a ready standby takes it rather than a
// replica that could publish nothing yet; once they have, it does.
func TestStandsForLeaderOnceReady(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	cfg := replicaConfig(t)
	kube := fake.NewClientset(webService())
	var listable atomic.Bool
	kube.PrependReactor("list", "services", func(clienttesting.Action) (bool, runtime.Object, error) {
		if listable.Load() {
			return false, nil, nil
		}
		return true, nil, errors.New("the API server is slow today")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, Clients{Kube: kubefake.For(kube)}, etcd) }()
	defer func() {
		cancel()
		<-done
	}()
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("skylb").Get(ctx, "skylb", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	time.Sleep(1500 * time.Millisecond)
	if h := holder(); h != "" {
		t.Fatalf("the Lease is held by %s before the caches synced, want it not taken", h)
	}
	listable.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for holder() != "replica-1" {
		if time.Now().After(deadline) {
			t.Fatal("replica-1 did not take the Lease within 30s of its caches syncing")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunStopsWhenCtxEnds runs skylb with leader election until its records
// are in etcd, then ends ctx: Run returns once every component has stopped.
func TestRunStopsWhenCtxEnds(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	cfg := replicaConfig(t)
	cfg.Controller.ResyncInterval = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, Clients{Kube: kubefake.New(webService())}, etcd) }()

	want := []string{"web.shop.example.org 192.0.2.10", "www.example.org 192.0.2.10"}
	deadline := time.Now().Add(30 * time.Second)
	for got := published(t, etcd); !slices.Equal(got, want); got = published(t, etcd) {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v before ctx ended", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("published %q, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil once ctx ended", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of ctx ending")
	}
}

func TestProbeErrorReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{err: fmt.Errorf("get: %w", context.DeadlineExceeded), want: "timeout"},
		{err: &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, want: "timeout"},
		{err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, want: "refused"},
		{err: errors.New("status 503, want 200-399"), want: "status"},
		{err: errors.New("tls: handshake failure"), want: "other"},
	}
	for _, tt := range tests {
		if got := probeErrorReason(tt.err); got != tt.want {
			t.Errorf("probeErrorReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// timeoutError is a network error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
