package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/skylb/skylb/test/stack"
)

// probeNames are the Services whose names the DNS probe asks during an etcd
// fault: 20 of those the first fault creates (burst-NNN with NNN % 5 < 3),
// which no fault changes afterwards.
func probeNames() []string {
	var out []string
	for i := 400; len(out) < 20; i++ {
		if i%5 < 3 {
			out = append(out, dnsName(fmt.Sprintf("burst-%03d", i)))
		}
	}
	return out
}

// dnsProbe asks CoreDNS for names it answered before a fault, one after
// another every 10 ms, and counts the answers equal to those: what clients
// of the zone see while etcd is away.
type dnsProbe struct {
	want   map[string][]string
	names  []string
	cancel func()
	done   chan struct{}

	served0  float64 // coredns_cache_served_stale_total at the start
	reloads0 int     // CoreDNS's completed reloads at the start

	mu       sync.Mutex
	asked    int
	right    int
	slowest  time.Duration
	wrong    []string // the first few
	notReady int      // CoreDNS's /ready answers other than 200
	readies  int
}

// startDNSProbe waits until no CoreDNS reload is on its way and CoreDNS
// answers each of names as the Services in the API server say, then starts
// asking.
func startDNSProbe(ctx context.Context, t *faultT, names []string) *dnsProbe {
	t.Helper()
	// A reload empties CoreDNS's cache: one that the fault before this one
	// owed, completed after the names below are checked, would leave the
	// fault nothing to serve them from.
	if err := reloadsSettled(30 * time.Second); err != nil {
		t.Fatalf("before the fault: %v", err)
	}
	d, err := desired(ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	p := &dnsProbe{want: map[string][]string{}, names: names, done: make(chan struct{})}
	for _, n := range names {
		want, ok := d.names[n]
		if !ok {
			t.Fatalf("probe name %s is not published", n)
		}
		p.want[n] = want
		deadline := time.Now().Add(30 * time.Second)
		for {
			rcode, got, err := stack.Query(st.DNSAddr, n, dns.TypeA)
			if err == nil && rcode == dns.RcodeSuccess && slices.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("before the fault, CoreDNS answers %s with %s %v (%v), want %v", n, dns.RcodeToString[rcode], got, err, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	p.served0 = servedStale()
	p.reloads0 = reloadsDone()
	ctx, p.cancel = context.WithCancel(ctx)
	go p.run(ctx)
	return p
}

func (p *dnsProbe) run(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	ready := time.NewTicker(time.Second)
	defer ready.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-ready.C:
			p.checkReady(ctx)
			continue
		case <-tick.C:
		}
		name := p.names[i%len(p.names)]
		t0 := time.Now()
		rcode, got, err := stack.Query(st.DNSAddr, name, dns.TypeA)
		took := time.Since(t0)
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.asked++
		p.slowest = max(p.slowest, took)
		if err == nil && rcode == dns.RcodeSuccess && slices.Equal(got, p.want[name]) {
			p.right++
		} else if len(p.wrong) < 3 {
			p.wrong = append(p.wrong, fmt.Sprintf("%s: %s %v %v after %v", name, dns.RcodeToString[rcode], got, err, took.Round(time.Millisecond)))
		}
		p.mu.Unlock()
	}
}

// reloaderState reads the reloader's log: how many reloads it asked of
// CoreDNS, and whether etcd has answered it since the last outage it logged.
func reloaderState() (asked int, answering bool) {
	answering = true
	for _, l := range logSince("coredns-reloader", 0) {
		switch {
		case strings.Contains(l, "CoreDNS reloads"):
			// It reloads only once etcd answers.
			asked++
			answering = true
		case strings.Contains(l, "etcd does not answer"):
			answering = false
		case strings.Contains(l, "etcd answers again"):
			answering = true
		}
	}
	return asked, answering
}

// reloadsDone counts the reloads CoreDNS logged as complete.
func reloadsDone() int {
	n := 0
	for _, l := range logSince("coredns", 0) {
		if strings.Contains(l, "Reloading complete") {
			n++
		}
	}
	return n
}

// reloadsSettled waits, at most limit, until the reloader has seen etcd
// answer since its last outage and CoreDNS has completed every reload the
// reloader asked for.
func reloadsSettled(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		asked, answering := reloaderState()
		done := reloadsDone()
		if answering && done >= asked {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, the reloader sees etcd answer: %v; CoreDNS completed %d of the %d reloads it was asked", limit, answering, done, asked)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// servedStale returns CoreDNS's count of answers served stale
// (coredns_cache_served_stale_total, over its labels).
func servedStale() float64 {
	samples, _ := stack.Scrape(context.Background(), fmt.Sprintf("127.0.0.1:%d", st.Ports.DNSMetrics), "coredns_cache_served_stale_total")
	sum := 0.0
	for _, v := range samples {
		sum += v
	}
	return sum
}

// checkReady asks CoreDNS's readiness endpoint, as the kubelet would.
func (p *dnsProbe) checkReady(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/ready", st.Ports.DNSReady), nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if ctx.Err() != nil && err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readies++
	if err != nil || resp.StatusCode != http.StatusOK {
		p.notReady++
	}
	if err == nil {
		resp.Body.Close()
	}
}

// stop ends the probe and notes what it saw in the fault's row; it fails
// the fault if fewer than 99% of the answers were right, CoreDNS stopped
// being Ready, or CoreDNS reloaded meanwhile: the reloader never reloads
// while etcd does not answer, and a reload empties the cache the fault is
// about. The target, 99.9% and none slower than 50 ms, is read from
// the row.
func (p *dnsProbe) stop(t *faultT) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	share := 0.0
	if p.asked > 0 {
		share = 100 * float64(p.right) / float64(p.asked)
	}
	served := servedStale() - p.served0
	t.Notef("CoreDNS answered %d of %d queries (%.2f%%) for %d names asked before right, the slowest in %v; Ready %d of %d times; %.0f answers served stale (coredns_cache_served_stale_total)",
		p.right, p.asked, share, len(p.names), p.slowest.Round(time.Millisecond), p.readies-p.notReady, p.readies, served)
	if share < 99 {
		t.Errorf("CoreDNS answered %.2f%% of the queries right during the fault, want at least 99%%; the first wrong: %s", share, strings.Join(p.wrong, "; "))
	}
	if p.notReady > 0 {
		t.Errorf("CoreDNS was not Ready %d of %d times during the fault", p.notReady, p.readies)
	}
	if n := reloadsDone() - p.reloads0; n > 0 {
		t.Errorf("CoreDNS reloaded %d times during the fault", n)
	}
}
