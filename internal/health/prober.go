package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Target is one address to probe with one Spec.
type Target struct {
	Addr netip.Addr
	Port int
	Spec Spec
}

// String names the target for logs and metrics.
func (t Target) String() string { return net.JoinHostPort(t.Addr.String(), strconv.Itoa(t.Port)) }

// Change is a target changing state.
type Change struct {
	Target  Target
	Healthy bool
	Reason  string   // the last probe's error, for a target going down
	Sources []string // the objects that want the target
}

// Result is the outcome of one probe, for metrics.
type Result struct {
	Target   Target
	Duration time.Duration
	Err      error
}

// Prober probes targets and keeps their state. Want says what to probe; Run
// probes it, starting the targets wanted while it runs as they come.
type Prober struct {
	sem      chan struct{}
	onChange func(Change)
	onResult func(Result)
	// wake tells Run that targets wait to be started.
	wake chan struct{}

	mu      sync.Mutex
	targets map[Target]*state
	wants   map[string][]Target // source -> targets
}

type state struct {
	healthy   bool
	successes int
	failures  int
	sources   map[string]struct{}
	cancel    context.CancelFunc // nil while the target is not being probed
}

// NewProber returns a Prober running at most workers probes at once. onChange
// is called on every change of a target's state,
// onResult after every probe; either may be nil.
func NewProber(workers int, onChange func(Change), onResult func(Result)) *Prober {
	return &Prober{
		sem:      make(chan struct{}, max(1, workers)),
		onChange: onChange,
		onResult: onResult,
		wake:     make(chan struct{}, 1),
		targets:  make(map[Target]*state),
		wants:    make(map[string][]Target),
	}
}

// Want replaces the targets one object wants probed. Targets that stay wanted
// keep their state; targets no object wants any more are no longer probed and
// are forgotten.
func (p *Prober) Want(source string, targets []Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := make(map[Target]bool, len(targets))
	for _, t := range targets {
		keep[t] = true
	}
	for _, t := range p.wants[source] {
		if keep[t] {
			continue
		}
		if st := p.targets[t]; st != nil {
			delete(st.sources, source)
			if len(st.sources) == 0 {
				if st.cancel != nil {
					st.cancel()
				}
				delete(p.targets, t)
			}
		}
	}
	if len(targets) == 0 {
		delete(p.wants, source)
		return
	}
	p.wants[source] = targets
	added := false
	for _, t := range targets {
		st := p.targets[t]
		if st == nil {
			st = &state{healthy: true, sources: make(map[string]struct{})}
			p.targets[t] = st
			added = true
		}
		st.sources[source] = struct{}{}
	}
	if added {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// Healthy reports whether a target is healthy; a target never probed is.
func (p *Prober) Healthy(t Target) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.targets[t]; st != nil {
		return st.healthy
	}
	return true
}

// States returns the state of every target, for metrics.
func (p *Prober) States() map[Target]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Target]bool, len(p.targets))
	for t, st := range p.targets {
		out[t] = st.healthy
	}
	return out
}

// Run probes every wanted target until ctx ends, and returns once every probe
// has stopped. Each run starts from every target healthy. Only one Run may
// run at a time.
func (p *Prober) Run(ctx context.Context) {
	var wg sync.WaitGroup
	p.mu.Lock()
	for _, st := range p.targets {
		st.healthy, st.successes, st.failures = true, 0, 0
	}
	p.mu.Unlock()
	for {
		p.startWaiting(ctx, &wg)
		select {
		case <-p.wake:
		case <-ctx.Done():
			p.mu.Lock()
			for _, st := range p.targets {
				if st.cancel != nil {
					st.cancel()
					st.cancel = nil
				}
			}
			p.mu.Unlock()
			wg.Wait()
			return
		}
	}
}

// startWaiting starts probing the targets not being probed.
func (p *Prober) startWaiting(ctx context.Context, wg *sync.WaitGroup) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for t, st := range p.targets {
		if st.cancel != nil {
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		st.cancel = cancel
		wg.Go(func() { p.loop(tctx, t) })
	}
}

// loop probes one target at its interval, starting at a random point of the
// first interval so that many targets do not probe in step.
func (p *Prober) loop(ctx context.Context, t Target) {
	delay := time.Duration(time.Now().UnixNano() % int64(t.Spec.Interval))
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		select {
		case <-ctx.Done():
			return
		case p.sem <- struct{}{}:
		}
		start := time.Now()
		err := Probe(ctx, t)
		<-p.sem
		if ctx.Err() != nil {
			return
		}
		if p.onResult != nil {
			p.onResult(Result{Target: t, Duration: time.Since(start), Err: err})
		}
		p.record(ctx, t, err)
		timer.Reset(t.Spec.Interval)
	}
}

// record counts a result and reports a change of state after Threshold
// consecutive results that disagree with it.
func (p *Prober) record(ctx context.Context, t Target, err error) {
	p.mu.Lock()
	st := p.targets[t]
	if st == nil || ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	var change *Change
	if err == nil {
		st.successes, st.failures = st.successes+1, 0
		if !st.healthy && st.successes >= t.Spec.Threshold {
			st.healthy = true
			change = &Change{Target: t, Healthy: true}
		}
	} else {
		st.failures, st.successes = st.failures+1, 0
		if st.healthy && st.failures >= t.Spec.Threshold {
			st.healthy = false
			change = &Change{Target: t, Healthy: false, Reason: err.Error()}
		}
	}
	if change != nil {
		for s := range st.sources {
			change.Sources = append(change.Sources, s)
		}
	}
	p.mu.Unlock()
	if change != nil && p.onChange != nil {
		p.onChange(*change)
	}
}

// Probe checks a target once.
func Probe(ctx context.Context, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, t.Spec.Timeout)
	defer cancel()
	addr := t.String()
	var d net.Dialer
	switch t.Spec.Kind {
	case TCP:
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	case HTTP, HTTPS:
		client := &http.Client{
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return d.DialContext(ctx, "tcp", addr)
				},
				// Backends behind a load-balanced name rarely carry a
				// certificate for each address: do not verify.
				TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, ServerName: t.Spec.Host},
				DisableKeepAlives: true,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, string(t.Spec.Kind)+"://"+addr+t.Spec.Path, nil)
		if err != nil {
			return err
		}
		if t.Spec.Host != "" {
			req.Host = t.Spec.Host
		}
		req.Header.Set("User-Agent", "skylb-health-check")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < t.Spec.StatusMin || resp.StatusCode > t.Spec.StatusMax {
			return fmt.Errorf("status %d, want %d-%d", resp.StatusCode, t.Spec.StatusMin, t.Spec.StatusMax)
		}
		return nil
	}
	return errors.New("no check configured")
}
