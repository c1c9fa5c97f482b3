package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// perfRun is what one dnsperf run measured.
type perfRun struct {
	Seconds   float64 `json:"seconds"`
	Sent      int64   `json:"sent"`
	Completed int64   `json:"completed"`
	Lost      int64   `json:"lost"`
	QPS       float64 `json:"qps"`
	// Rcodes counts the answers by response code (NOERROR, NXDOMAIN, ...).
	Rcodes map[string]int64 `json:"rcodes"`
	// AvgMicros is dnsperf's mean latency; P50Micros and P99Micros are
	// computed from every answer's latency, in runs at a fixed rate only.
	AvgMicros float64 `json:"avg_us"`
	P50Micros float64 `json:"p50_us,omitempty"`
	P99Micros float64 `json:"p99_us,omitempty"`
	// Etcd calls made while it ran, per 1,000 answers (etcd's metrics).
	RangesPer1k    float64 `json:"etcd_ranges_per_1k"`
	LeaseTTLPer1k  float64 `json:"etcd_lease_ttl_per_1k"`
	CacheHitsShare float64 `json:"cache_hits_share,omitempty"`
	// StaleShare is the share of the answers served stale
	// (coredns_cache_served_stale_total): etcd did not answer the refresh
	// of an expired answer within the cache's verify timeout.
	StaleShare float64 `json:"stale_share,omitempty"`
}

// perfArgs is one dnsperf run.
type perfArgs struct {
	addr    string        // server, loopback host:port
	data    string        // query file, one "name type" per line
	length  time.Duration // run time
	rate    int           // queries per second; 0 for as many as it gets answered
	verbose bool          // every answer's latency, for the percentiles
	passes  int           // run through the file at most this many times (0: no limit)
	// stop, when closed, ends the run early: dnsperf prints its statistics
	// on SIGINT.
	stop <-chan struct{}
}

// dnsperfCPU is where dnsperf runs: the first core when there are two or
// more, the servers being moved to the others (pin).
const dnsperfCPU = "0"

// runDNSPerf runs Debian's dnsperf against a loopback server.
func runDNSPerf(ctx context.Context, a perfArgs) (perfRun, error) {
	host, port, err := net.SplitHostPort(a.addr)
	if err != nil {
		return perfRun{}, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return perfRun{}, fmt.Errorf("dnsperf: %s is not a loopback address", a.addr)
	}
	args := []string{"-s", host, "-p", port, "-d", a.data, "-t", "2",
		// 8 clients (sockets), 200 queries in flight: enough to keep one
		// core of CoreDNS busy on loopback.
		"-c", "8", "-q", "200"}
	if a.length > 0 {
		args = append(args, "-l", strconv.FormatFloat(a.length.Seconds(), 'f', 3, 64))
	}
	if a.rate > 0 {
		args = append(args, "-Q", strconv.Itoa(a.rate))
	}
	if a.passes > 0 {
		args = append(args, "-n", strconv.Itoa(a.passes))
	}
	if a.verbose {
		args = append(args, "-v")
	}
	// dnsperf runs at the lowest priority, so that on a machine with few
	// cores it takes what skylb, the API server and the benchmark leave: a
	// flood's load generator is not on their nodes.
	cmdline := []string{"-n", "19"}
	if runtime.NumCPU() > 1 {
		cmdline = append(cmdline, "taskset", "-c", dnsperfCPU)
	}
	args = append(append(cmdline, "dnsperf"), args...)
	name := "nice"
	limit := a.length + 30*time.Second
	if a.length == 0 {
		limit = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return perfRun{}, err
	}
	exited := make(chan struct{})
	defer close(exited)
	if a.stop != nil {
		go func() {
			select {
			case <-a.stop:
				_ = cmd.Process.Signal(os.Interrupt)
			case <-exited:
			}
		}()
	}
	err = cmd.Wait()
	out := stdout.Bytes()
	if err != nil {
		return perfRun{}, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return parseDNSPerf(out)
}

// parseDNSPerf reads dnsperf's statistics, and with -v the latency of every
// answer ("> NOERROR name A 0.000123").
func parseDNSPerf(out []byte) (perfRun, error) {
	r := perfRun{Rcodes: map[string]int64{}}
	var lat []float64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	field := func(line, key string) (string, bool) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), key)
		return strings.TrimSpace(v), ok
	}
	first := func(s string) string {
		if f := strings.Fields(s); len(f) > 0 {
			return f[0]
		}
		return ""
	}
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "> "); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				if s, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
					lat = append(lat, s*1e6)
				}
			}
			continue
		}
		if v, ok := field(line, "Queries sent:"); ok {
			r.Sent, _ = strconv.ParseInt(first(v), 10, 64)
		} else if v, ok := field(line, "Queries completed:"); ok {
			r.Completed, _ = strconv.ParseInt(first(v), 10, 64)
		} else if v, ok := field(line, "Queries lost:"); ok {
			r.Lost, _ = strconv.ParseInt(first(v), 10, 64)
		} else if v, ok := field(line, "Run time (s):"); ok {
			r.Seconds, _ = strconv.ParseFloat(first(v), 64)
		} else if v, ok := field(line, "Queries per second:"); ok {
			r.QPS, _ = strconv.ParseFloat(first(v), 64)
		} else if v, ok := field(line, "Average Latency (s):"); ok {
			s, _ := strconv.ParseFloat(first(v), 64)
			r.AvgMicros = s * 1e6
		} else if v, ok := field(line, "Response codes:"); ok {
			// "NOERROR 123 (100.00%), NXDOMAIN 4 (0.01%)"
			for _, part := range strings.Split(v, ",") {
				f := strings.Fields(part)
				if len(f) >= 2 {
					n, _ := strconv.ParseInt(f[1], 10, 64)
					r.Rcodes[f[0]] += n
				}
			}
		}
	}
	if r.Sent == 0 || r.Seconds == 0 {
		return r, fmt.Errorf("dnsperf printed no statistics: %q", tail(string(out), 400))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.P50Micros = lat[len(lat)/2]
		r.P99Micros = lat[len(lat)*99/100]
	}
	return r, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// writeQueries writes a dnsperf query file: each name with type A.
func writeQueries(path string, names []string) error {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteString(" A\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// randomNames returns n names under zone that nothing publishes: a random
// first label each, as a random-subdomain flood sends.
func randomNames(zone string, n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("nx-%016x.%s", rng.Uint64(), zone)
	}
	return out
}

// shuffled returns names in a random order.
func shuffled(names []string) []string {
	out := slices.Clone(names)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// pin moves the processes' threads to every core but dnsperf's and returns
// a function that gives them every core back. One core, or taskset missing:
// nothing is pinned.
func pin(pids ...int) (unpin func(), desc string) {
	n := runtime.NumCPU()
	if n < 2 {
		return func() {}, "not pinned (one core)"
	}
	servers := "1"
	if n > 2 {
		servers = fmt.Sprintf("1-%d", n-1)
	}
	all := fmt.Sprintf("0-%d", n-1)
	var done []int
	for _, pid := range pids {
		if err := exec.Command("taskset", "-a", "-p", "-c", servers, strconv.Itoa(pid)).Run(); err == nil {
			done = append(done, pid)
		}
	}
	return func() {
		for _, pid := range done {
			_ = exec.Command("taskset", "-a", "-p", "-c", all, strconv.Itoa(pid)).Run()
		}
	}, fmt.Sprintf("dnsperf on CPU %s; CoreDNS and etcd on CPU %s", dnsperfCPU, servers)
}

// zoneFile writes the zone file the ceiling's file plugin serves: the SOA
// and NS of zone and, for each name, the A records answers holds for it.
func zoneFile(path, zone string, answers map[string][]string, ttl int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s.\n", zone)
	fmt.Fprintf(&b, "@ %d IN SOA ns.dns.%s. hostmaster.%s. 1 7200 1800 86400 %d\n", ttl, zone, zone, ttl)
	fmt.Fprintf(&b, "@ %d IN NS ns.dns.%s.\n", ttl, zone)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range answers {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		for _, a := range answers[n] {
			fmt.Fprintf(&b, "%s. %d IN A %s\n", strings.TrimSuffix(n, "."), ttl, a)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// cpuGroup is a CPU cgroup the benchmark made: its processes get a share of
// a busy core in proportion to its weight, as the kubelet weighs pods by
// their CPU requests.
type cpuGroup struct {
	dir    string // the cgroup's directory
	parent string // where its processes go back to
}

// weigh puts pids into a new CPU cgroup named name whose weight is that of
// a pod requesting millicores of CPU (cgroup v1 cpu.shares, v2 cpu.weight,
// computed as the kubelet does). A machine without a writable CPU
// controller returns an error, and the processes stay where they are.
func weigh(name string, millicores int, pids ...int) (*cpuGroup, error) {
	shares := max(millicores*1024/1000, 2)
	var g cpuGroup
	var file, value string
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.shares"); err == nil {
		g.parent = "/sys/fs/cgroup/cpu"
		file, value = "cpu.shares", strconv.Itoa(shares)
	} else if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		g.parent = "/sys/fs/cgroup"
		// The kubelet's conversion of shares to a weight.
		file, value = "cpu.weight", strconv.Itoa(1+((shares-2)*9999)/262142)
		_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0o644)
	} else {
		return nil, fmt.Errorf("no cgroup CPU controller")
	}
	g.dir = filepath.Join(g.parent, name)
	if err := os.Mkdir(g.dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0o644); err != nil {
		g.remove()
		return nil, err
	}
	if err := g.add(pids...); err != nil {
		g.remove()
		return nil, err
	}
	return &g, nil
}

// add moves processes into the group.
func (g *cpuGroup) add(pids ...int) error {
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move %d to %s: %w", pid, g.dir, err)
		}
	}
	return nil
}

// remove moves the group's processes back and removes it.
func (g *cpuGroup) remove() {
	if g == nil {
		return
	}
	if b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs")); err == nil {
		for _, pid := range strings.Fields(string(b)) {
			_ = os.WriteFile(filepath.Join(g.parent, "cgroup.procs"), []byte(pid), 0o644)
		}
	}
	_ = os.Remove(g.dir)
}

// cpuRequest returns the CPU request, in millicores, of the first container
// of a manifest that sets one ("cpu: 50m").
func cpuRequest(manifest string) (int, error) {
	b, err := os.ReadFile(manifest)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^\s*requests:\s*\n(?:\s+\w+:.*\n)*?\s+cpu:\s*"?(\d+)m"?`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("%s: no CPU request in millicores", manifest)
	}
	return strconv.Atoi(string(m[1]))
}
