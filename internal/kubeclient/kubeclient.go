// Package kubeclient is skylb's client of the Kubernetes API: REST clients
// on a scheme of only the API groups skylb reads and writes (client.go), whose
// reads wait for the API server while it is unreachable, rather than fail.
//
// client-go's reflectors list and watch with GET requests; when one fails to
// connect they back off, up to 30 s with jitter, so after an API server
// outage a change could wait that long before skylb sees it. A GET that waits
// for the server instead never fails, the back-off never grows, and the
// informers list and watch again as soon as the server answers.
package kubeclient

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// DefaultInterval is how often a waiting request tries to connect again: a
// refused connection costs nothing, and the informers resume within it.
const DefaultInterval = 500 * time.Millisecond

// Waiter wraps the transport of a Kubernetes client: a GET request that
// cannot connect to the API server (connection refused, host unreachable,
// name not resolving yet) is tried again every interval until it connects,
// its context ends or the Waiter is stopped; so is one that a server which
// was unreachable answers 503 with Retry-After, as it does for the paths it
// has not installed yet while it starts. Other requests fail as before;
// writes are never repeated. It also tells whether the server is reachable.
type Waiter struct {
	interval time.Duration
	stop     <-chan struct{}
	log      logrus.FieldLogger

	mu    sync.Mutex
	err   error // the last connection error; nil once the server answered
	since time.Time
}

// New returns a Waiter whose requests stop waiting when stop is closed
// (skylb stopping); interval 0 means DefaultInterval.
func New(stop <-chan struct{}, interval time.Duration, log logrus.FieldLogger) *Waiter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Waiter{interval: interval, stop: stop, log: log}
}

// Wrap returns rt with waiting added; it fits rest.Config.Wrap.
func (w *Waiter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{w: w, next: rt}
}

// Err returns why the API server could not be reached, or nil once it answered.
func (w *Waiter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	return fmt.Errorf("API server unreachable since %s: %w", w.since.Format(time.RFC3339), w.err)
}

func (w *Waiter) observe(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil && w.err != nil:
		w.log.WithField("down", time.Since(w.since).Round(time.Second)).Info("API server reachable again")
		w.err = nil
	case err != nil && w.err == nil:
		w.log.WithError(err).Warn("API server unreachable; reads wait for it")
		w.err, w.since = err, time.Now()
	case err != nil:
		w.err = err
	}
}

type roundTripper struct {
	w    *Waiter
	next http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	idempotent := req.Method == http.MethodGet && (req.Body == nil || req.Body == http.NoBody)
	for {
		resp, err := r.next.RoundTrip(req)
		switch {
		case err == nil && idempotent && starting(resp) && r.w.Err() != nil:
			// The server answers but is still starting: keep waiting.
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			err = fmt.Errorf("API server starting: %s", resp.Status)
		case err == nil || !unreachable(err):
			r.w.observe(nil)
			return resp, err
		default:
			r.w.observe(err)
			if !idempotent {
				return resp, err
			}
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-r.w.stop:
			return nil, err
		case <-time.After(r.w.interval):
		}
	}
}

// starting reports whether resp is how a starting API server answers a
// request for a path it has not installed yet (a custom resource's): 503 with
// Retry-After, 5 s, which client-go would honour.
func starting(resp *http.Response) bool {
	return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
}

// unreachable reports whether err says the request never reached the
// server: it could not connect, or its name did not resolve.
func unreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
