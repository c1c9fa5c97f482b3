package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/test/stack"
)

// backend is a small HTTP server on one loopback address, standing in for a node.
type backend struct {
	addr   string
	status atomic.Int32
	hits   atomic.Int32
	mu     sync.Mutex
	srv    *http.Server
}

func (b *backend) start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", b.addr)
	if err != nil {
		t.Fatalf("listen %s: %v", b.addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		w.WriteHeader(int(b.status.Load()))
	})}
	go srv.Serve(l)
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
}

func (b *backend) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Close()
		b.srv = nil
	}
}

// freePortOn returns a port free on every given loopback address.
func freePortOn(t *testing.T, ips ...string) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for _, ip := range ips[1:] {
			l2, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			l2.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no port free on all addresses")
	return 0
}

func TestHealthChecks(t *testing.T) {
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	port := freePortOn(t, ips...)
	backends := map[string]*backend{}
	for _, ip := range ips {
		b := &backend{addr: net.JoinHostPort(ip, strconv.Itoa(port))}
		b.status.Store(200)
		b.start(t)
		t.Cleanup(b.stop)
		backends[ip] = b
	}

	// A skylb that may publish loopback addresses, which these "nodes" are.
	args := append(replicaArgs()[:0:0], skylbArgs[:len(skylbArgs)-1]...)
	args = append(args, "--denied-cidrs=224.0.0.0/4")
	withoutSkylb(t)
	sk, err := st.StartSkylbNamed(ctxT(t), "skylb-health", args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Stop() })
	if err := st.WaitSkylbReady(ctxT(t), sk); err != nil {
		t.Fatal(err)
	}
	// A skylb that has just started sends an Event for each object the
	// earlier tests left with a problem, within the client's rate limit: the
	// Events asserted on are not to wait behind them.
	drained(t)

	namespace(t, "health")
	status := []corev1.LoadBalancerIngress{{IP: ips[0]}, {IP: ips[1]}, {IP: ips[2]}}
	withPort := func(s *corev1.Service) { s.Spec.Ports[0].Port = int32(port) }
	checked := []svcOpt{withPort,
		annotate("skylb.io/health-check", "http"), annotate("skylb.io/health-interval", "1s"),
		annotate("skylb.io/health-timeout", "500ms"), annotate("skylb.io/health-threshold", "2")}
	metallb(t, "health", "web", status, checked...)
	metallb(t, "health", "single", status, append(checked, annotate("skylb.io/mode", "exclusive"))...)
	within(t, quick, "web.health.example.org", ips[0], ips[1], ips[2])
	within(t, quick, "single.health.example.org", ips[0])

	// Detection takes interval × threshold (2 s) plus up to an interval
	// until the first failing probe, plus CoreDNS's 1 s cache.
	const detect = 4500 * time.Millisecond

	t.Run("stopped backend leaves and returns", func(t *testing.T) {
		backends[ips[1]].stop()
		took := within(t, detect, "web.health.example.org", ips[0], ips[2])
		t.Logf("stopped %s left the answer after %v", ips[1], took.Round(time.Millisecond))
		expectEvent(t, "health", "web", "AddressUnhealthy", ips[1])
		backends[ips[1]].start(t)
		took = within(t, detect, "web.health.example.org", ips[0], ips[1], ips[2])
		t.Logf("restarted %s returned after %v", ips[1], took.Round(time.Millisecond))
	})
	t.Run("wrong status code counts as down", func(t *testing.T) {
		backends[ips[2]].status.Store(500)
		within(t, detect, "web.health.example.org", ips[0], ips[1])
		backends[ips[2]].status.Store(200)
		within(t, detect, "web.health.example.org", ips[0], ips[1], ips[2])
	})
	t.Run("exclusive fails over once and does not flap back", func(t *testing.T) {
		backends[ips[0]].status.Store(503)
		took := within(t, detect, "single.health.example.org", ips[1])
		t.Logf("exclusive mode failed over after %v", took.Round(time.Millisecond))
		hits := backends[ips[0]].hits.Load()
		backends[ips[0]].status.Store(200)
		// skylb probes the first address again and finds it healthy (more
		// probes than the threshold), and still answers with the second.
		healthy := fmt.Sprintf(`skylb_address_healthy{address="%s:%d",name="single.health.example.org"}`, ips[0], port)
		stack.Eventually(t, 2*detect, ips[0]+" healthy again", func() (bool, string) {
			n := backends[ips[0]].hits.Load() - hits
			v, err := stack.Metric(ctxT(t), sk.HTTPAddr(), healthy)
			return n > 3 && err == nil && v == 1, fmt.Sprintf("%d probes since; %s = %v (%v)", n, healthy, v, err)
		})
		within(t, quick, "single.health.example.org", ips[1])
	})
	t.Run("all down: fail open", func(t *testing.T) {
		for _, ip := range ips[:3] {
			backends[ip].status.Store(500)
		}
		expectEvent(t, "health", "web", "AllAddressesUnhealthy", "publishing all")
		within(t, quick, "web.health.example.org", ips[0], ips[1], ips[2])
		for _, ip := range ips[:3] {
			backends[ip].status.Store(200)
		}
	})
	t.Run("only candidates are probed", func(t *testing.T) {
		if n := backends[ips[3]].hits.Load(); n != 0 {
			t.Errorf("%s, which is no candidate, was probed %d times", ips[3], n)
		}
		m := scrape(t, sk.HTTPAddr(), "skylb_address_healthy")
		key := fmt.Sprintf(`skylb_address_healthy{address="%s:%d",name="web.health.example.org"}`, ips[0], port)
		if _, ok := m[key]; !ok {
			t.Errorf("metric %s missing; have %v", key, m)
		}
	})
}
