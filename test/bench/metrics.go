package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sample is one line of the Prometheus text format: a metric name, its labels
// and its value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is a parsed /metrics page.
type scrape []sample

// fetchMetrics reads and parses a Prometheus text page.
func fetchMetrics(ctx context.Context, url string) (scrape, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (scrape, error) {
	var out scrape
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.name = line[:i]
			parseLabels(line[i+1:j], s.labels)
			rest = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			s.name, rest = f[0], strings.Join(f[1:], " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads `a="x",b="y"` (values without escaped quotes suffice here).
func parseLabels(s string, into map[string]string) {
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return
		}
		key := strings.TrimSpace(s[:eq])
		rest := s[eq+2:]
		end := 0
		for end < len(rest) && !(rest[end] == '"' && (end == 0 || rest[end-1] != '\\')) {
			end++
		}
		if end >= len(rest) {
			return
		}
		into[key] = rest[:end]
		s = strings.TrimPrefix(strings.TrimSpace(rest[end+1:]), ",")
	}
}

// sum adds the values of every sample of name whose labels include match.
func (sc scrape) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range sc {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// byLabel sums the values of name by the value of one label.
func (sc scrape) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range sc {
		if s.name == name {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

// histogram is the cumulative buckets of a Prometheus histogram.
type histogram struct {
	bounds []float64 // upper bounds, ascending, +Inf last
	counts []float64 // cumulative counts
}

func (sc scrape) histogram(name string) histogram {
	type b struct{ le, n float64 }
	var bs []b
	for _, s := range sc {
		if s.name != name+"_bucket" {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if s.labels["le"] == "+Inf" {
			le, err = math.Inf(1), nil
		}
		if err == nil {
			bs = append(bs, b{le, s.value})
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	var h histogram
	for _, x := range bs {
		h.bounds = append(h.bounds, x.le)
		h.counts = append(h.counts, x.n)
	}
	return h
}

// minus returns the observations made between an earlier scrape and this one.
func (h histogram) minus(old histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(old.counts) {
			out.counts[i] -= old.counts[i]
		}
	}
	return out
}

func (h histogram) count() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile estimates a quantile as Prometheus's histogram_quantile does:
// linear interpolation within the bucket it falls in. It returns the bound
// below which the quantile lies too, for an honest "at most".
func (h histogram) quantile(q float64) (est, upper float64) {
	n := h.count()
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	rank := q * n
	lower, prev := 0.0, 0.0
	for i, c := range h.counts {
		if c >= rank {
			up := h.bounds[i]
			if math.IsInf(up, 1) {
				return lower, up
			}
			if c == prev {
				return up, up
			}
			return lower + (up-lower)*(rank-prev)/(c-prev), up
		}
		lower, prev = h.bounds[i], c
	}
	return math.NaN(), math.NaN()
}

// --- /proc ------------------------------------------------------------------------

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on Linux.
const clockTicks = 100

// procUsage is what /proc says about a process.
type procUsage struct {
	PeakRSS int64   // VmHWM, bytes
	RSS     int64   // VmRSS, bytes
	Anon    int64   // RssAnon: heap, stacks, runtime
	File    int64   // RssFile: the mapped binary
	CPU     float64 // user + system seconds
}

func readProc(pid int) (procUsage, error) {
	var u procUsage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			u.PeakRSS = kb << 10
		case "VmRSS:":
			u.RSS = kb << 10
		case "RssAnon:":
			u.Anon = kb << 10
		case "RssFile:":
			u.File = kb << 10
		}
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return u, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return u, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	// fields[0] is field 3; utime and stime are fields 14 and 15.
	ut, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	u.CPU = (ut + stime) / clockTicks
	return u, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// rssPeaks samples a process's anonymous and file-backed RSS every 10 ms
// until stop is called, and returns the peak of each: VmHWM has only their
// peak sum.
func rssPeaks(pid func() int) (stop func() (anon, file int64)) {
	done := make(chan struct{})
	var anon, file int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if u, err := readProc(pid()); err == nil {
				anon, file = max(anon, u.Anon), max(file, u.File)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		<-finished
		return anon, file
	}
}
