// Command bench measures skylb on the real local stack (test/stack): a DNS
// etcd with mutual TLS and RBAC, kube-apiserver, kube-controller-manager,
// CoreDNS and the skylb binary, all on loopback. It prints a Markdown table
// and writes the numbers as JSON.
//
// Phases, in order:
//
//  1. propagation on a small cluster: Services created, endpoints added
//     ("scaled") and endpoints made unready, each timed from the API write to
//     the moment CoreDNS (without its cache) answers the new address set,
//     polled over UDP every millisecond; and skylb's own part, event observed
//     to etcd commit, from its skylb_propagation_seconds histogram;
//  2. cold start at scale: LoadBalancer Services of another implementation
//     (status written by the benchmark, as MetalLB would) and Ingresses
//     across namespaces, created while skylb is stopped; then skylb starts and
//     is timed until the last record is in etcd;
//  3. restart at scale over the converged state: time to ready, keys written;
//  4. one change at scale: an endpoint of one Service added or made unready;
//     keys written (from etcd's watch) and latency;
//  5. idle cost: etcd requests while nothing changes (etcd's own metrics);
//  6. full reconciliation: skylb restarted with a short --resync-interval,
//     its CPU per full pass and its memory after a few;
//  7. serving: Debian's dnsperf against CoreDNS with the shipped Corefile
//     and against the same CoreDNS serving the same records from a zone file
//     (the file plugin, the ceiling): one hot name, every name in random
//     order, names that do not exist; the mix at 1,000 queries/s for the
//     latency; propagation during a flood of names that do not exist; the
//     same with skylb run with --record-expiry (its claims leased);
//  8. status at scale: Services skylb implements (1,000), created while it
//     is stopped; then it starts and is timed until every one has a status,
//     and its memory once they are deleted again;
//
// Then, unless -quick, the Go micro-benchmarks of the hot paths.
//
// Every count and wait is bounded; the run stops the stack and removes its
// directory (unless -keep) however it ends.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type options struct {
	out           string
	quick         bool
	keep          bool
	scale         scale
	changes       int
	deployChanges int
	atScale       int
	idle          time.Duration
	rate          time.Duration
	creators      int
	cacheTTL      int
	micro         bool
	benchtime     string
	strict        bool
	externalDNS   bool
	extChanges    int
	extLimit      time.Duration
	// statusServices are the Services skylb implements created while it is
	// stopped, whose status it then writes.
	statusServices int
	// sizes, when set, runs the scale run at these numbers of Services
	// instead of the phases; chart is where it writes its SVG.
	sizes []int
	chart string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", ".bench/results.json", "where to write the results as JSON")
	flag.BoolVar(&o.quick, "quick", false, "smoke mode: 200 Services, 40 Ingresses, 20 changes, short idle and rate phases, no micro-benchmarks")
	flag.BoolVar(&o.keep, "keep", false, "keep the stack's directory (logs) after the run")
	flag.IntVar(&o.scale.Namespaces, "namespaces", 0, "namespaces of the large cluster (default 100; quick 10)")
	flag.IntVar(&o.scale.Services, "services", 0, "LoadBalancer Services of the large cluster (default 10000; quick 200)")
	flag.IntVar(&o.scale.Ingresses, "ingresses", 0, "Ingresses of the large cluster (default 2000; quick 40)")
	flag.IntVar(&o.changes, "changes", 0, "changes timed on the small cluster (default 200; quick 20)")
	flag.IntVar(&o.deployChanges, "deployment-changes", 0, "Deployment scales timed through kube-controller-manager (default 20; quick 4)")
	flag.IntVar(&o.atScale, "changes-at-scale", 0, "changes of one Service timed at scale (default 40; quick 6)")
	flag.DurationVar(&o.idle, "idle", 0, "idle window (default 60s; quick 5s)")
	flag.DurationVar(&o.rate, "rate-duration", 0, "duration of each dnsperf run (default 10s; quick 2s)")
	flag.IntVar(&o.creators, "creators", 16, "goroutines creating objects")
	flag.IntVar(&o.cacheTTL, "cache-ttl", 5, "CoreDNS cache cap (SKYLB_DNS_CACHE_TTL) of the serving phase; 5 is the cluster default")
	flag.StringVar(&o.benchtime, "benchtime", "1s", "-benchtime of the micro-benchmarks")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when an invariant is broken (a restart or a full reconciliation writes keys, one change writes keys of other names, idle range reads); timings never fail the run")
	flag.BoolVar(&o.externalDNS, "external-dns", false, "measure external-dns (bin/external-dns, CoreDNS provider) after skylb on the same objects (default on; off in quick mode)")
	flag.IntVar(&o.extChanges, "status-changes", 0, "status address changes of one Service timed at scale, for skylb and external-dns (default 20; quick 4)")
	flag.DurationVar(&o.extLimit, "external-dns-limit", 10*time.Minute, "how long external-dns may take to write the last record")
	flag.IntVar(&o.statusServices, "status-services", 0, "LoadBalancer Services skylb implements, created while it is stopped, whose status writes are timed after it starts (default 1000; quick 50)")
	flag.Func("skylb-flag", "a flag skylb runs with, e.g. --kube-api-qps=5 (repeatable)", func(v string) error {
		skylbArgs = append(skylbArgs, v)
		return nil
	})
	sizes := flag.String("scale", "", "scale run: measure skylb's and external-dns's cold start, peak RSS and status change at these numbers of Services, e.g. 1000,10000,30000 (100 Services and 20 Ingresses per namespace), instead of the phases")
	flag.StringVar(&o.chart, "chart", "scripts/bench-scale.svg", "where the scale run writes its chart (SVG)")
	chartFrom := flag.String("chart-from", "", "draw the chart and print the table of a scale run's JSON results instead of running")
	flag.Parse()
	o.externalDNS = o.externalDNS || !o.quick && !flagSet("external-dns")
	o.defaults()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *chartFrom != "" {
		os.Exit(redraw(*chartFrom, o.chart))
	}
	if *sizes != "" {
		var err error
		if o.sizes, err = parseSizes(*sizes); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		if !flagSet("out") {
			o.out = ".bench/scale.json"
		}
		os.Exit(scaleMain(ctx, o))
	}
	res, err := run(ctx, o)
	if res != nil {
		fmt.Println()
		fmt.Print(res.markdown())
		if werr := writeJSON(o.out, res); werr != nil {
			fmt.Fprintln(os.Stderr, "bench:", werr)
			if err == nil {
				err = werr
			}
		} else {
			fmt.Fprintf(os.Stderr, "bench: results written to %s\n", o.out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if missed := res.invariantsMissed(); o.strict && len(missed) > 0 {
		fmt.Fprintf(os.Stderr, "bench: invariants broken: %s\n", strings.Join(missed, "; "))
		os.Exit(1)
	}
}

// scaleMain runs the scale run, prints its table, writes its figures and
// chart, and returns the exit code.
func scaleMain(ctx context.Context, o options) int {
	res, err := runScale(ctx, o)
	if res != nil && len(res.Points) > 0 {
		fmt.Println()
		fmt.Print(res.markdown())
		if werr := writeJSON(o.out, res); werr != nil {
			fmt.Fprintln(os.Stderr, "bench:", werr)
		} else {
			fmt.Fprintf(os.Stderr, "bench: results written to %s\n", o.out)
		}
		if werr := writeChart(o.chart, res); werr != nil {
			fmt.Fprintln(os.Stderr, "bench:", werr)
		} else {
			fmt.Fprintf(os.Stderr, "bench: chart written to %s\n", o.chart)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// redraw writes the chart of the scale run results in path from, prints their
// table, and returns the exit code.
func redraw(from, chart string) int {
	b, err := os.ReadFile(from)
	if err == nil {
		var res scaleResults
		if err = json.Unmarshal(b, &res); err == nil {
			fmt.Print(res.markdown())
			err = writeChart(chart, &res)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "bench: chart written to %s\n", chart)
	return 0
}

func (o *options) defaults() {
	def := func(v *int, full, quick int) {
		if *v == 0 {
			*v = full
			if o.quick {
				*v = quick
			}
		}
	}
	def(&o.scale.Namespaces, 100, 10)
	def(&o.scale.Services, 10000, 200)
	def(&o.scale.Ingresses, 2000, 40)
	def(&o.changes, 200, 20)
	def(&o.deployChanges, 20, 4)
	def(&o.atScale, 40, 6)
	def(&o.extChanges, 20, 4)
	def(&o.statusServices, 1000, 50)
	if o.idle == 0 {
		o.idle = 60 * time.Second
		if o.quick {
			o.idle = 5 * time.Second
		}
	}
	if o.rate == 0 {
		o.rate = 10 * time.Second
		if o.quick {
			o.rate = 2 * time.Second
		}
	}
	o.micro = !o.quick
}

func writeJSON(path string, res any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// run starts the stack, runs the phases and stops the stack. It returns what
// it measured even when a phase fails.
func run(ctx context.Context, o options) (*results, error) {
	res := &results{
		Mode: map[bool]string{true: "quick", false: "full"}[o.quick], Started: time.Now().UTC(),
		Scale: o.scale, Machine: describeMachine(),
	}
	b, err := newBench(ctx, o)
	if b != nil {
		defer b.close()
		res.Versions = b.versions()
	}
	if err != nil {
		return res, err
	}
	limit := 18 * time.Minute
	if o.quick {
		limit = 3 * time.Minute
	}
	if o.externalDNS {
		limit += o.extLimit + 5*time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t0 := time.Now()
	type phase struct {
		name string
		f    func(context.Context, *results) error
	}
	phases := []phase{
		{"propagation", b.propagation},
		{"cold start", b.coldStart},
		{"restart", b.restart},
		{"one change at scale", b.oneChange},
		{"idle", b.idle},
		{"full reconciliation", b.resync},
		{"serving", b.servingPhase},
		{"status at scale", b.statusAtScale},
		// Last of skylb's: it rewrites every record, which the phases
		// above must not find in etcd's history.
		{"a second view", b.secondView},
	}
	if o.externalDNS {
		phases = append(phases, phase{"external-dns", b.externalDNS})
	}
	for _, p := range phases {
		logf("phase: %s", p.name)
		pt := time.Now()
		if err := p.f(ctx, res); err != nil {
			return res, fmt.Errorf("%s: %w", p.name, err)
		}
		res.Load = append(res.Load, phaseLoad{Phase: p.name, Load: loadAverage()})
		logf("phase %s done in %.1fs (load average %.1f)", p.name, time.Since(pt).Seconds(), res.Load[len(res.Load)-1].Load)
	}
	b.close()
	if o.micro {
		logf("phase: micro-benchmarks")
		if res.Micro, err = microBenchmarks(ctx, b.root, o.benchtime); err != nil {
			return res, fmt.Errorf("micro-benchmarks: %w", err)
		}
		res.Load = append(res.Load, phaseLoad{Phase: "micro-benchmarks", Load: loadAverage()})
	}
	res.Seconds = time.Since(res.Started).Seconds()
	logf("all phases done in %.1fs", time.Since(t0).Seconds())
	res.checkTargets()
	return res, nil
}

// machine describes where the benchmark ran.
type machine struct {
	CPUs   int    `json:"cpus"`
	Model  string `json:"cpu_model"`
	Memory string `json:"memory"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				var kb int64
				fmt.Sscan(f[1], &kb)
				m.Memory = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

var errSkipped = errors.New("skipped")

// flagSet reports whether the command line set the named flag.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
