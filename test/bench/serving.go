package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skylb/skylb/test/stack"
)

// serving is what a query costs: CoreDNS with the shipped Corefile (its
// cache in front of the etcd plugin) against the same CoreDNS serving the
// same records from a zone file with its file plugin, the ceiling, measured
// by Debian's dnsperf in the same run.
type serving struct {
	Names    int `json:"names"`
	CacheTTL int `json:"cache_ttl"`
	// Pinning says where the servers ran for the sets at the highest rate
	// and the flood; the fixed rate ran on every core.
	Pinning string `json:"pinning"`
	// Sets are the query sets at the highest rate dnsperf gets answered.
	Sets []servingSet `json:"sets"`
	// Fixed is the 10,000-name mix at a fixed rate: latency percentiles.
	Fixed servingFixed `json:"fixed_rate"`
	// Flood is propagation with and without a flood of names that do not
	// exist sent to the shipped CoreDNS.
	Flood *servingFlood `json:"nxdomain_flood,omitempty"`
	// LeasedSeconds is the time from skylb's restart with --record-expiry to
	// every claim written again with its lease.
	LeasedSeconds float64 `json:"leased_seconds"`
}

// servingSet is one query set against both servers, and against the shipped
// one once more with skylb run with --record-expiry.
type servingSet struct {
	Name    string  `json:"name"`
	Rcode   string  `json:"rcode"` // the answer every query should get
	Shipped perfRun `json:"shipped"`
	Ceiling perfRun `json:"ceiling"`
	Leased  perfRun `json:"leased,omitempty"`
}

type servingFixed struct {
	Rate    int     `json:"qps"`
	Shipped perfRun `json:"shipped"`
	Ceiling perfRun `json:"ceiling"`
	Leased  perfRun `json:"leased,omitempty"`
}

type servingFlood struct {
	// NXQPS is the flood's answer rate while the changes were timed.
	NXQPS float64 `json:"nxdomain_qps"`
	// Idle and Flooded are a Service's change, API write to the answer of
	// the CoreDNS without cache, without and with the flood.
	Idle    quantiles `json:"idle"`
	Flooded quantiles `json:"flooded"`
}

// wrongAnswers counts the answers of every run with another response code
// than their query set's (lost queries aside), and the answers.
func (s *serving) wrongAnswers() (wrong, answered int64) {
	add := func(r perfRun, rcode string) {
		wrong += r.Completed - r.Rcodes[rcode]
		answered += r.Completed
	}
	for _, set := range s.Sets {
		add(set.Shipped, set.Rcode)
		add(set.Ceiling, set.Rcode)
		add(set.Leased, set.Rcode)
	}
	add(s.Fixed.Shipped, "NOERROR")
	add(s.Fixed.Ceiling, "NOERROR")
	add(s.Fixed.Leased, "NOERROR")
	return wrong, answered
}

// servingPhase measures the serving path on the large cluster's names.
func (b *bench) servingPhase(ctx context.Context, res *results) error {
	sc := b.o.scale
	names := sc.serviceNames()
	dir := filepath.Join(b.dir, "serving")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The ceiling serves what the etcd plugin answers for each name.
	answers := make(map[string][]string, len(names))
	for _, n := range names {
		rcode, got, err := b.dns.query(n)
		if err != nil || rcode != 0 || len(got) == 0 {
			return fmt.Errorf("%s: rcode %d, %v, %v: the large cluster's records are not all served", n, rcode, got, err)
		}
		answers[n] = got
	}
	zone := filepath.Join(dir, "zone.db")
	if err := zoneFile(zone, b.st.Zone, answers, 30); err != nil {
		return err
	}
	shippedFile := filepath.Join(b.root, "coredns", "Corefile")
	ceilingFile, err := fileCorefile(shippedFile, dir, zone)
	if err != nil {
		return err
	}
	shipped, addr, err := b.st.StartCoreDNS(ctx, "coredns-shipped", shippedFile, b.o.cacheTTL)
	if err != nil {
		return err
	}
	defer shipped.Stop()
	ceiling, ceilingAddr, err := b.st.StartCoreDNS(ctx, "coredns-ceiling", ceilingFile, b.o.cacheTTL)
	if err != nil {
		return err
	}
	defer ceiling.Stop()
	var etcdPIDs []int
	for _, m := range b.st.EtcdCluster {
		if p := b.st.Proc(m.Name); p != nil {
			etcdPIDs = append(etcdPIDs, p.PID())
		}
	}
	unpin, pinning := pin(append([]int{shipped.PID(), ceiling.PID()}, etcdPIDs...)...)
	defer unpin()
	// On the servers' core, etcd and CoreDNS get the shares of a busy core
	// the kubelet would give them from the manifests' CPU requests.
	etcdGroup, corednsGroup, weights, err := b.weighServers(etcdPIDs, shipped.PID(), ceiling.PID())
	if err != nil {
		return err
	}
	defer etcdGroup.remove()
	defer corednsGroup.remove()
	s := &serving{Names: len(names), CacheTTL: b.o.cacheTTL, Pinning: pinning + "; " + weights}
	res.Serving = s
	hot, mix, nx, flood := filepath.Join(dir, "hot"), filepath.Join(dir, "mix"), filepath.Join(dir, "nx"), filepath.Join(dir, "flood")
	// Enough names that do not exist for none to repeat in a run; the
	// flood's are others, which the shipped CoreDNS has not cached.
	nxCount := int(b.o.rate.Seconds()) * 60000
	for path, ns := range map[string][]string{
		hot: names[:1], mix: shuffled(names),
		nx: randomNames(b.st.Zone, nxCount, 1), flood: randomNames(b.st.Zone, 2*nxCount, 2),
	} {
		if err := writeQueries(path, ns); err != nil {
			return err
		}
	}
	sets := []struct {
		name, file, rcode string
		leased, warm      bool
	}{
		{"one hot name", hot, "NOERROR", true, true},
		{fmt.Sprintf("the %d names, random order", len(names)), mix, "NOERROR", true, true},
		// Each asked once: nothing to warm.
		{"names that do not exist", nx, "NXDOMAIN", false, false},
	}
	run := func(p *stack.Proc, a perfArgs) (perfRun, error) { return b.perf(ctx, p, a) }
	// warm asks every name of a file once, so that a run measures a cache
	// in its steady state, as clients keep it.
	warm := func(a, file string) error {
		_, err := runDNSPerf(ctx, perfArgs{addr: a, data: file, passes: 1})
		return err
	}
	for _, set := range sets {
		ss := servingSet{Name: set.name, Rcode: set.rcode}
		if set.warm {
			if err := warm(addr, set.file); err != nil {
				return err
			}
		}
		if ss.Shipped, err = run(shipped, perfArgs{addr: addr, data: set.file, length: b.o.rate}); err != nil {
			return err
		}
		if set.warm {
			if err := warm(ceilingAddr, set.file); err != nil {
				return err
			}
		}
		if ss.Ceiling, err = run(ceiling, perfArgs{addr: ceilingAddr, data: set.file, length: b.o.rate}); err != nil {
			return err
		}
		logf("serving, %s: shipped %.0f/s, ceiling %.0f/s (%.2f); etcd Ranges per 1,000 answers %.1f",
			set.name, ss.Shipped.QPS, ss.Ceiling.QPS, ss.Shipped.QPS/max(ss.Ceiling.QPS, 1), ss.Shipped.RangesPer1k)
		s.Sets = append(s.Sets, ss)
	}
	if s.Flood, err = b.flood(ctx, addr, flood); err != nil {
		return err
	}
	// Latency at a fixed rate, on every core: one core pinned for a Go
	// server that runs as many threads as the machine has cores (CoreDNS,
	// etcd) makes its threads wait for each other's time slices, and adds
	// milliseconds that no deployment without such pinning sees.
	unpin()
	s.Fixed.Rate = 1000
	fixed := func(p *stack.Proc, a string) (perfRun, error) {
		if err := warm(a, mix); err != nil {
			return perfRun{}, err
		}
		return run(p, perfArgs{addr: a, data: mix, length: b.o.rate, rate: s.Fixed.Rate, verbose: true})
	}
	if s.Fixed.Shipped, err = fixed(shipped, addr); err != nil {
		return err
	}
	if s.Fixed.Ceiling, err = fixed(ceiling, ceilingAddr); err != nil {
		return err
	}
	logf("serving at %d/s: shipped p50 %.0f µs, p99 %.0f µs; ceiling p50 %.0f µs, p99 %.0f µs",
		s.Fixed.Rate, s.Fixed.Shipped.P50Micros, s.Fixed.Shipped.P99Micros, s.Fixed.Ceiling.P50Micros, s.Fixed.Ceiling.P99Micros)

	// With --record-expiry the claims carry a lease, the records they hold
	// none: the etcd plugin asks etcd for the time left on the lease of
	// every key it answers from, and finds none to ask about.
	t := time.Now()
	if err := b.restartSkylb(ctx, "--record-expiry=2m"); err != nil {
		return err
	}
	if err := b.waitLeased(ctx); err != nil {
		return err
	}
	s.LeasedSeconds = time.Since(t).Seconds()
	logf("claims leased in %.1fs", s.LeasedSeconds)
	// The shipped CoreDNS still holds the plain answers: start another.
	shipped.Stop()
	leased, leasedAddr, err := b.st.StartCoreDNS(ctx, "coredns-leased", shippedFile, b.o.cacheTTL)
	if err != nil {
		return err
	}
	defer leased.Stop()
	if s.Fixed.Leased, err = fixed(leased, leasedAddr); err != nil {
		return err
	}
	unpin, _ = pin(append([]int{leased.PID()}, etcdPIDs...)...)
	defer unpin()
	if corednsGroup != nil {
		if err := corednsGroup.add(leased.PID()); err != nil {
			return err
		}
	}
	for i, set := range sets {
		if !set.leased {
			continue
		}
		if err := warm(leasedAddr, set.file); err != nil {
			return err
		}
		if s.Sets[i].Leased, err = run(leased, perfArgs{addr: leasedAddr, data: set.file, length: b.o.rate}); err != nil {
			return err
		}
		logf("serving, %s, leased records: %.0f/s (plain %.0f/s); etcd TimeToLive per 1,000 answers %.1f",
			set.name, s.Sets[i].Leased.QPS, s.Sets[i].Shipped.QPS, s.Sets[i].Leased.LeaseTTLPer1k)
	}
	return nil
}

// weighServers puts etcd's members and the CoreDNS processes into CPU
// cgroups weighted by the CPU requests of etcd's StatefulSet and CoreDNS's
// Deployment, and describes what it did; the caller removes the groups. On a
// machine without a writable CPU controller, the groups are nil.
func (b *bench) weighServers(etcdPIDs []int, corednsPIDs ...int) (etcd, coredns *cpuGroup, desc string, err error) {
	etcdM, err := cpuRequest(filepath.Join(b.root, "etcd", "deploy", "statefulset.yaml"))
	if err != nil {
		return nil, nil, "", err
	}
	corednsM, err := cpuRequest(filepath.Join(b.root, "coredns", "deploy", "deployment.yaml"))
	if err != nil {
		return nil, nil, "", err
	}
	if etcd, err = weigh("skylb-bench-etcd", etcdM, etcdPIDs...); err != nil {
		return nil, nil, fmt.Sprintf("no CPU weights (%v)", err), nil
	}
	if coredns, err = weigh("skylb-bench-coredns", corednsM, corednsPIDs...); err != nil {
		etcd.remove()
		return nil, nil, fmt.Sprintf("no CPU weights (%v)", err), nil
	}
	return etcd, coredns, fmt.Sprintf("CPU weights of the manifests' requests, etcd %dm and CoreDNS %dm", etcdM, corednsM), nil
}

// perf runs dnsperf against p and adds what etcd and p's cache counted
// meanwhile.
func (b *bench) perf(ctx context.Context, p *stack.Proc, a perfArgs) (perfRun, error) {
	metricsURL := "http://" + p.Env("SKYLB_METRICS_ADDR") + "/metrics"
	e0, err := b.etcdMetrics(ctx)
	if err != nil {
		return perfRun{}, err
	}
	c0, err := fetchMetrics(ctx, metricsURL)
	if err != nil {
		return perfRun{}, err
	}
	r, err := runDNSPerf(ctx, a)
	if err != nil {
		return r, err
	}
	e1, err := b.etcdMetrics(ctx)
	if err != nil {
		return r, err
	}
	c1, err := fetchMetrics(ctx, metricsURL)
	if err != nil {
		return r, err
	}
	g0, g1 := e0.byLabel("grpc_server_started_total", "grpc_method"), e1.byLabel("grpc_server_started_total", "grpc_method")
	per1k := func(method string) float64 {
		return (g1[method] - g0[method]) * 1000 / float64(max(r.Completed, 1))
	}
	r.RangesPer1k, r.LeaseTTLPer1k = per1k("Range"), per1k("LeaseTimeToLive")
	hits := c1.sum("coredns_cache_hits_total", nil) - c0.sum("coredns_cache_hits_total", nil)
	misses := c1.sum("coredns_cache_misses_total", nil) - c0.sum("coredns_cache_misses_total", nil)
	if hits+misses > 0 {
		r.CacheHitsShare = hits / (hits + misses)
	}
	if r.Completed > 0 {
		stale := c1.sum("coredns_cache_served_stale_total", nil) - c0.sum("coredns_cache_served_stale_total", nil)
		r.StaleShare = stale / float64(r.Completed)
	}
	return r, nil
}

// flood times changes of one Service through the CoreDNS without cache,
// first with nothing else asking, then while dnsperf sends names that do not
// exist to the shipped CoreDNS as fast as it answers them: every one of
// those is read from the etcd skylb writes to.
func (b *bench) flood(ctx context.Context, addr, nxFile string) (*servingFlood, error) {
	f := &servingFlood{}
	n := max(b.o.atScale/2, 4)
	idle, err := b.changes(ctx, n)
	if err != nil {
		return nil, err
	}
	// The flood runs until the changes are timed.
	stop := make(chan struct{})
	type result struct {
		r   perfRun
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := runDNSPerf(ctx, perfArgs{addr: addr, data: nxFile, length: 5 * time.Minute, stop: stop})
		done <- result{r, err}
	}()
	time.Sleep(time.Second) // the flood at full rate
	flooded, err := b.changes(ctx, n)
	close(stop)
	fr := <-done
	if err != nil {
		return nil, err
	}
	if fr.err != nil {
		return nil, fr.err
	}
	f.NXQPS = fr.r.QPS
	f.Idle, f.Flooded = summarise(idle), summarise(flooded)
	logf("NXDOMAIN flood at %.0f/s: change to answer p50 %.1f ms, p99 %.1f ms (without it %.1f ms, %.1f ms)",
		f.NXQPS, f.Flooded.P50, f.Flooded.P99, f.Idle.P50, f.Idle.P99)
	return f, nil
}

// changes makes n changes of the scaled Service of the large cluster
// (scaledChange) and returns the time from each API write to CoreDNS's
// answer.
func (b *bench) changes(ctx context.Context, n int) ([]time.Duration, error) {
	var lat []time.Duration
	for i := range n {
		t, err := b.measure(ctx, b.scaledChange(i), 100*time.Millisecond)
		if err != nil {
			return nil, err
		}
		lat = append(lat, t.dns)
	}
	return lat, nil
}

// fileCorefile writes the ceiling's Corefile into dir: the shipped one with
// its cache and etcd plugins replaced by the file plugin serving zone.
func fileCorefile(src, dir, zone string) (string, error) {
	lines, err := corefileWithout(src, "cache", "etcd")
	if err != nil {
		return "", err
	}
	var out []string
	for _, line := range lines {
		out = append(out, line)
		if strings.TrimSpace(line) == "loadbalance" {
			out = append(out, "\tfile "+zone+" {$SKYLB_ZONE}")
		}
	}
	if !slices.Contains(out, "\tfile "+zone+" {$SKYLB_ZONE}") {
		return "", fmt.Errorf("%s: no loadbalance line to put the file plugin after", src)
	}
	path := filepath.Join(dir, "Corefile.file")
	return path, os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644)
}

// markdown writes the serving table.
func (s *serving) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "\n**Serving**: %d names, CoreDNS with the shipped Corefile (cache %d s) against the same CoreDNS serving them from a zone file (file plugin, the ceiling); Debian's dnsperf, %s.\n\n", s.Names, s.CacheTTL, s.Pinning)
	b.WriteString("| query set | shipped | ceiling | shipped / ceiling | etcd Ranges per 1,000 answers | cache hits | leased records (`--record-expiry`) | leased / plain | etcd TimeToLive per 1,000 answers |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	qps := func(r perfRun, rcode string) string {
		if r.Sent == 0 {
			return "–"
		}
		out := fmt.Sprintf("%.0f /s", r.QPS)
		if w := r.Completed - r.Rcodes[rcode]; w > 0 {
			out += fmt.Sprintf(", %d not %s", w, rcode)
		}
		if r.Lost > 0 {
			out += fmt.Sprintf(", %d lost", r.Lost)
		}
		return out
	}
	ratio := func(a, b perfRun) string {
		if a.Sent == 0 || b.QPS == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", a.QPS/b.QPS)
	}
	for _, set := range s.Sets {
		ttl := "–"
		if set.Leased.Sent > 0 {
			ttl = fmt.Sprintf("%.1f", set.Leased.LeaseTTLPer1k)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.1f | %.0f%% | %s | %s | %s |\n", set.Name,
			qps(set.Shipped, set.Rcode), qps(set.Ceiling, set.Rcode), ratio(set.Shipped, set.Ceiling),
			set.Shipped.RangesPer1k, set.Shipped.CacheHitsShare*100, qps(set.Leased, set.Rcode), ratio(set.Leased, set.Shipped), ttl)
	}
	f := s.Fixed
	lat := func(r perfRun) string {
		if r.Sent == 0 {
			return "–"
		}
		out := fmt.Sprintf("%.0f / %.0f µs", r.P50Micros, r.P99Micros)
		if r.StaleShare > 0 {
			out += fmt.Sprintf(" (%.2f%% stale)", 100*r.StaleShare)
		}
		return out
	}
	fmt.Fprintf(b, "| the mix at %d queries/s, on every core: p50 / p99 | %s | %s | | | | %s | | |\n", f.Rate, lat(f.Shipped), lat(f.Ceiling), lat(f.Leased))
	if fl := s.Flood; fl != nil {
		fmt.Fprintf(b, "\nA Service's change, API write to the answer (p50 / p99): %.1f / %.1f ms while the shipped CoreDNS answers %.0f names that do not exist a second, %.1f / %.1f ms without them (%d changes each).\n",
			fl.Flooded.P50, fl.Flooded.P99, fl.NXQPS, fl.Idle.P50, fl.Idle.P99, fl.Idle.N)
	}
	if s.LeasedSeconds > 0 {
		fmt.Fprintf(b, "skylb restarted with `--record-expiry=2m` wrote every claim again with its lease in %.1f s (the records keep none).\n", s.LeasedSeconds)
	}
}
