package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/skylb/skylb/test/stack"
)

// Probe asks a DNS server for a name every 100 ms, until stopped, and
// counts the answers other than the one wanted: what a client of the zone
// sees while the test changes the cluster under it.
type Probe struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	stats  ProbeStats
}

// ProbeStats sums up a probe: a failure is an error, an rcode other than
// NOERROR or an answer other than the one wanted.
type ProbeStats struct {
	Queries, Failed int
	Longest         int           // longest run of failed queries
	LongestFor      time.Duration // how long that run lasted
	Slowest         time.Duration // the slowest answer, failed or not
	Span            time.Duration // from the start to the stop
	Failures        []string      // when (since the start) and why, the first few
}

// StartProbe asks server (host:port) for name's A records every 100 ms until
// Stop.
func StartProbe(ctx context.Context, server, name string, want []string) *Probe {
	ctx, cancel := context.WithCancel(ctx)
	p := &Probe{cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		start := time.Now()
		run, runStart := 0, time.Time{}
		for ctx.Err() == nil {
			at := time.Now()
			rcode, got, err := stack.Query(server, name, dns.TypeA)
			p.stats.Queries++
			p.stats.Slowest = max(p.stats.Slowest, time.Since(at))
			if err == nil && rcode == dns.RcodeSuccess && slices.Equal(got, want) {
				run = 0
			} else {
				p.stats.Failed++
				if len(p.stats.Failures) < 10 {
					p.stats.Failures = append(p.stats.Failures, fmt.Sprintf("%v (%v): %s %v %v",
						at.Sub(start).Round(100*time.Millisecond), time.Since(at).Round(time.Millisecond), dns.RcodeToString[rcode], got, err))
				}
				if run == 0 {
					runStart = at
				}
				run++
				if run > p.stats.Longest {
					p.stats.Longest, p.stats.LongestFor = run, time.Since(runStart)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(at.Add(100 * time.Millisecond))):
			}
		}
		p.stats.Span = time.Since(start)
	}()
	return p
}

// Stop ends the probe and returns its statistics; calling it again returns
// them again.
func (p *Probe) Stop() ProbeStats {
	p.once.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
	return p.stats
}
