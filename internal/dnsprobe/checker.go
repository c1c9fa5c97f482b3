package dnsprobe

import (
	"context"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Defaults of Config.
const (
	DefaultInterval    = time.Minute
	DefaultTimeout     = 2 * time.Second
	DefaultStartWindow = 10 * time.Second
	DefaultRetry       = time.Second
)

// Config configures a Checker.
type Config struct {
	// Address is the DNS server's host:port.
	Address string
	// Zones are the zones it should serve.
	Zones []string
	// Interval is the time between two checks of every zone after the
	// start; DefaultInterval when 0.
	Interval time.Duration
	// Timeout bounds each query; DefaultTimeout when 0.
	Timeout time.Duration
	// StartWindow is how long after the start the zones whose state is
	// Unknown are asked again, every Retry; DefaultStartWindow and
	// DefaultRetry when 0. A server that has just started, or is starting
	// beside skylb, answers within it.
	StartWindow time.Duration
	Retry       time.Duration
	// Report is told of a zone's state, from Run's goroutine: the first
	// time it is Served or NotServed, whenever it changes between the two
	// after that, and once Unknown when the start window ends without an
	// answer that tells. A zone found Unknown after a state was reported
	// keeps that state: no answer says nothing of the server's zones, and
	// the same state back would be reported twice.
	Report func(ctx context.Context, c Change)
	// Log receives a debug line whenever a zone's latest state changes;
	// nil discards them.
	Log logrus.FieldLogger
}

func (c *Config) defaults() {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.StartWindow <= 0 {
		c.StartWindow = DefaultStartWindow
	}
	if c.Retry <= 0 {
		c.Retry = DefaultRetry
	}
	if c.Log == nil {
		log := logrus.New()
		log.SetOutput(io.Discard)
		c.Log = log
	}
	if c.Report == nil {
		c.Report = func(context.Context, Change) {}
	}
}

// Change is a zone's state as Config.Report is told of it.
type Change struct {
	Zone string
	Result
	// Prev is the state reported before for the zone; Unknown the first
	// time.
	Prev State
}

// Checker checks that a DNS server serves a list of zones, at start and then
// at an interval, and reports each zone's state when it changes.
type Checker struct {
	cfg Config

	mu     sync.Mutex
	latest map[string]State // the latest check's state of each zone

	reported map[string]State // what Report was told; Run's goroutine only
}

// New returns a Checker of cfg; Run starts it.
func New(cfg Config) *Checker {
	cfg.defaults()
	c := &Checker{cfg: cfg, latest: make(map[string]State, len(cfg.Zones)), reported: make(map[string]State, len(cfg.Zones))}
	for _, z := range cfg.Zones {
		c.latest[z] = Unknown
	}
	return c
}

// States returns the state of every zone as the latest check found it:
// Unknown before the first answer.
func (c *Checker) States() map[string]State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.latest)
}

// Run checks every zone until ctx ends: at once, again every Retry for the
// zones still Unknown as long as the retry starts within StartWindow, then
// every Interval.
func (c *Checker) Run(ctx context.Context) {
	start := time.Now()
	pending := slices.Clone(c.cfg.Zones)
	last := map[string]Result{}
	for len(pending) > 0 {
		results := c.checkAll(ctx, pending)
		if ctx.Err() != nil {
			return
		}
		var unknown []string
		for i, z := range pending {
			c.note(ctx, z, results[i])
			if results[i].State == Unknown {
				unknown = append(unknown, z)
				last[z] = results[i]
			}
		}
		pending = unknown
		if len(pending) == 0 || time.Since(start)+c.cfg.Retry > c.cfg.StartWindow {
			break
		}
		if !sleep(ctx, c.cfg.Retry) {
			return
		}
	}
	for _, z := range pending {
		c.report(ctx, z, last[z])
	}

	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		results := c.checkAll(ctx, c.cfg.Zones)
		if ctx.Err() != nil {
			return
		}
		for i, z := range c.cfg.Zones {
			c.note(ctx, z, results[i])
		}
	}
}

// checkAll queries the server about each of zones at once and returns the
// results in the same order.
func (c *Checker) checkAll(ctx context.Context, zones []string) []Result {
	results := make([]Result, len(zones))
	var wg sync.WaitGroup
	for i, z := range zones {
		wg.Go(func() { results[i] = Query(ctx, c.cfg.Address, z, c.cfg.Timeout) })
	}
	wg.Wait()
	return results
}

// note records r as zone's latest state, and reports it when it is Served
// or NotServed and not what was reported before.
func (c *Checker) note(ctx context.Context, zone string, r Result) {
	c.mu.Lock()
	prev := c.latest[zone]
	c.latest[zone] = r.State
	c.mu.Unlock()
	if prev != r.State {
		c.cfg.Log.WithFields(logrus.Fields{"zone": zone, "address": c.cfg.Address, "state": r.State.String(), "answer": r.Answer}).
			Debug("zone state changed")
	}
	if r.State == Unknown {
		return
	}
	if was, ok := c.reported[zone]; !ok || was != r.State {
		c.report(ctx, zone, r)
	}
}

// report tells Report of zone's state r.
func (c *Checker) report(ctx context.Context, zone string, r Result) {
	prev := c.reported[zone]
	c.reported[zone] = r.State
	c.cfg.Report(ctx, Change{Zone: zone, Result: r, Prev: prev})
}

// sleep waits for d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
