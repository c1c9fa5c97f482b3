package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    Spec
		invalid int
	}{
		{"defaults", nil, Default, 0},
		{"http with everything", map[string]string{
			AnnotationCheck: "HTTP", AnnotationPort: "8443", AnnotationPath: "/ready", AnnotationStatus: "200-399",
			AnnotationInterval: "5s", AnnotationTimeout: "1s", AnnotationThreshold: "3",
		}, Spec{Kind: HTTP, Port: 8443, Path: "/ready", StatusMin: 200, StatusMax: 399, Interval: 5 * time.Second, Timeout: time.Second, Threshold: 3}, 0},
		{"invalid values keep their defaults", map[string]string{
			AnnotationCheck: "ping", AnnotationPort: "99999", AnnotationPath: "ready", AnnotationStatus: "600",
			AnnotationInterval: "10ms", AnnotationTimeout: "soon", AnnotationThreshold: "0",
		}, Default, 7},
		{"timeout no longer than half the interval", map[string]string{
			AnnotationCheck: "tcp", AnnotationInterval: "2s", AnnotationTimeout: "5s",
		}, Spec{Kind: TCP, Path: "/healthz", StatusMin: 200, StatusMax: 200, Interval: 2 * time.Second, Timeout: time.Second, Threshold: 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%v) (-want +got):\n%s", tt.in, diff)
			}
			if len(errs) != tt.invalid {
				t.Errorf("Parse(%v) reported %d problems (%v), want %d", tt.in, len(errs), errs, tt.invalid)
			}
		})
	}
}

// TestParseReadsEachAnnotationAlone checks that an object with any one of the
// health annotations is read: Parse skips objects with none of those it
// lists.
func TestParseReadsEachAnnotationAlone(t *testing.T) {
	for _, key := range []string{AnnotationCheck, AnnotationPort, AnnotationPath, AnnotationStatus,
		AnnotationInterval, AnnotationTimeout, AnnotationThreshold} {
		if _, errs := Parse(map[string]string{key: "bogus"}); len(errs) != 1 {
			t.Errorf("Parse(%s: bogus) reported %v, want one problem", key, errs)
		}
	}
	if s, errs := Parse(map[string]string{"skylb.io/hostname": "www.example.org"}); s != Default || errs != nil {
		t.Errorf("Parse(without health annotations) = %+v, %v; want the defaults and no problem", s, errs)
	}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestSelect(t *testing.T) {
	all := addrs("192.0.2.1", "192.0.2.2", "192.0.2.3")
	down := func(bad ...string) func(netip.Addr) bool {
		return func(a netip.Addr) bool {
			for _, b := range bad {
				if a.String() == b {
					return false
				}
			}
			return true
		}
	}
	tests := []struct {
		name     string
		healthy  func(netip.Addr) bool
		mode     Mode
		current  string
		want     []netip.Addr
		failOpen bool
	}{
		{"balanced, all healthy", down(), Balanced, "", all, false},
		{"balanced, one down", down("192.0.2.2"), Balanced, "", addrs("192.0.2.1", "192.0.2.3"), false},
		{"balanced, all down: fail open", down("192.0.2.1", "192.0.2.2", "192.0.2.3"), Balanced, "", all, true},
		{"exclusive picks the first", down(), Exclusive, "", addrs("192.0.2.1"), false},
		{"exclusive keeps the current one", down(), Exclusive, "192.0.2.2", addrs("192.0.2.2"), false},
		{"exclusive moves on to the next", down("192.0.2.2"), Exclusive, "192.0.2.2", addrs("192.0.2.3"), false},
		{"exclusive wraps around", down("192.0.2.3"), Exclusive, "192.0.2.3", addrs("192.0.2.1"), false},
		{"exclusive, all down: one of them", down("192.0.2.1", "192.0.2.2", "192.0.2.3"), Exclusive, "192.0.2.2", addrs("192.0.2.2"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cur netip.Addr
			if tt.current != "" {
				cur = netip.MustParseAddr(tt.current)
			}
			got, failOpen := Select(all, tt.healthy, tt.mode, cur)
			if !cmp.Equal(got, tt.want, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })) || failOpen != tt.failOpen {
				t.Errorf("Select(%s, current %s) = %v, %v; want %v, %v", tt.mode, tt.current, got, failOpen, tt.want, tt.failOpen)
			}
		})
	}
}

// target returns a target for an httptest server's address.
func target(t *testing.T, hostport string, spec Spec) Target {
	t.Helper()
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Addr: ap.Addr(), Port: int(ap.Port()), Spec: spec}
}

func TestProbe(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	var host atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host.Store(r.Host)
		if r.URL.Path != "/healthz" {
			w.WriteHeader(404)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	spec := Default
	spec.Timeout = time.Second
	httpSpec := spec
	httpSpec.Kind, httpSpec.Host = HTTP, "web.example.org"
	httpsSpec := httpSpec
	httpsSpec.Kind = HTTPS
	tcpSpec := spec
	tcpSpec.Kind = TCP
	ctx := context.Background()

	if err := Probe(ctx, target(t, srv.Listener.Addr().String(), httpSpec)); err != nil {
		t.Errorf("HTTP probe of a healthy server: %v", err)
	}
	if got := host.Load(); got != "web.example.org" {
		t.Errorf("Host header = %v, want the published name", got)
	}
	status.Store(503)
	if err := Probe(ctx, target(t, srv.Listener.Addr().String(), httpSpec)); err == nil {
		t.Errorf("HTTP probe of a server answering 503 succeeded")
	}
	if err := Probe(ctx, target(t, tlsSrv.Listener.Addr().String(), httpsSpec)); err != nil {
		t.Errorf("HTTPS probe of a server with a self-signed certificate: %v", err)
	}
	if err := Probe(ctx, target(t, l.Addr().String(), tcpSpec)); err != nil {
		t.Errorf("TCP probe of a listening port: %v", err)
	}
	if err := Probe(ctx, target(t, closedAddr, tcpSpec)); err == nil {
		t.Errorf("TCP probe of a closed port succeeded")
	}
}

func TestProberStateChanges(t *testing.T) {
	var up atomic.Bool
	up.Store(true)
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		if !up.Load() {
			w.WriteHeader(500)
		}
	}))
	defer srv.Close()
	spec := Default
	spec.Kind, spec.Interval, spec.Timeout, spec.Threshold = HTTP, 50*time.Millisecond, 40*time.Millisecond, 2
	tgt := target(t, srv.Listener.Addr().String(), spec)

	var mu sync.Mutex
	var changes []Change
	p := NewProber(4, func(c Change) { mu.Lock(); changes = append(changes, c); mu.Unlock() }, nil)
	p.Want("service/shop/web", []Target{tgt})
	if !p.Healthy(tgt) {
		t.Fatalf("a target not yet probed is unhealthy")
	}
	time.Sleep(150 * time.Millisecond)
	if probes.Load() != 0 {
		t.Fatalf("probed %d times before Run", probes.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	up.Store(false)
	waitFor("unhealthy", func() bool { return !p.Healthy(tgt) })
	// Wanting the same target again, as every sync of its object does, keeps its state.
	p.Want("service/shop/web", []Target{tgt})
	if p.Healthy(tgt) {
		t.Fatalf("wanting a target again reset its state to healthy")
	}
	up.Store(true)
	waitFor("healthy again", func() bool { return p.Healthy(tgt) })
	mu.Lock()
	if len(changes) != 2 || changes[0].Healthy || !changes[1].Healthy || changes[0].Sources[0] != "service/shop/web" {
		t.Errorf("changes = %+v, want down then up, naming the object", changes)
	}
	mu.Unlock()

	// A target nobody wants is no longer probed.
	p.Want("service/shop/web", nil)
	time.Sleep(100 * time.Millisecond)
	before := probes.Load()
	time.Sleep(200 * time.Millisecond)
	if after := probes.Load(); after != before {
		t.Errorf("probed %d more times after the target was dropped", after-before)
	}
	cancel()
	<-done
}
