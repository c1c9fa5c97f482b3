package kubeclient_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/skylb/skylb/internal/kubeclient"
)

// listenLater returns a free loopback address, and a function that starts
// serving on it.
func listenLater(t *testing.T) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, func() {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
}

func client(w *kubeclient.Waiter) *http.Client {
	return &http.Client{Transport: w.Wrap(&http.Transport{})}
}

func TestGetWaitsForTheServer(t *testing.T) {
	addr, serve := listenLater(t)
	w := kubeclient.New(make(chan struct{}), 50*time.Millisecond, logrus.New())
	go func() {
		time.Sleep(500 * time.Millisecond)
		if err := w.Err(); err == nil || !strings.Contains(err.Error(), "API server unreachable") {
			t.Errorf("Err() while the server is down = %v, want API server unreachable", err)
		}
		serve()
	}()
	resp, err := client(w).Get("http://" + addr + "/api")
	if err != nil {
		t.Fatalf("Get() = %v, want it to wait for the server", err)
	}
	resp.Body.Close()
	if err := w.Err(); err != nil {
		t.Errorf("Err() once the server answered = %v, want nil", err)
	}
}

func TestWhatDoesNotWait(t *testing.T) {
	addr, _ := listenLater(t)
	stopped := make(chan struct{})
	close(stopped)
	tests := []struct {
		name string
		stop chan struct{}
		do   func(c *http.Client) error
	}{
		{"write", make(chan struct{}), func(c *http.Client) error {
			resp, err := c.Post("http://"+addr+"/api", "text/plain", strings.NewReader("x"))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"get whose context ends", make(chan struct{}), func(c *http.Client) error {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api", nil)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"get once skylb stops", stopped, func(c *http.Client) error {
			resp, err := c.Get("http://" + addr + "/api")
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := kubeclient.New(tt.stop, 50*time.Millisecond, logrus.New())
			start := time.Now()
			err := tt.do(client(w))
			if err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("request = %v, want connection refused", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("request took %v, want it to give up", took)
			}
		})
	}
}

// startingServer answers 503 with Retry-After, as kube-apiserver does for
// the paths it has not installed yet, until ready is closed, then 200.
func startingServer(t *testing.T, addr string, ready <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			io.WriteString(w, "ok")
		default:
			w.Header().Set("Retry-After", "5")
			http.Error(w, "the request has been made before all known HTTP paths have been installed", http.StatusServiceUnavailable)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func TestGetWaitsForAStartingServer(t *testing.T) {
	addr, _ := listenLater(t)
	ready := make(chan struct{})
	w := kubeclient.New(make(chan struct{}), 50*time.Millisecond, logrus.New())
	go func() {
		time.Sleep(300 * time.Millisecond)
		startingServer(t, addr, ready)
		time.Sleep(300 * time.Millisecond)
		close(ready)
	}()
	start := time.Now()
	resp, err := client(w).Get("http://" + addr + "/apis/gateway.networking.k8s.io/v1")
	if err != nil {
		t.Fatalf("Get() = %v, want it to wait for the server", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Get() status = %d, want 200 once the server has started", resp.StatusCode)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Get() took %v, want well under the 5 s of Retry-After", took)
	}
}

func TestRetryAfterOfAServerThatWasUpIsHonoured(t *testing.T) {
	addr, _ := listenLater(t)
	startingServer(t, addr, make(chan struct{}))
	w := kubeclient.New(make(chan struct{}), 50*time.Millisecond, logrus.New())
	resp, err := client(w).Get("http://" + addr + "/apis/gateway.networking.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("Get() status = %d, want the server's 503 passed on", resp.StatusCode)
	}
}
