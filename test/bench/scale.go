package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The scale run measures skylb and external-dns at several sizes of the
// large cluster, on one stack: it grows the cluster to each size in turn and
// measures, at each, both cold starts (process start to the last record),
// their peak RSS and CPU time, and a Service's status address changed to
// CoreDNS's answer. It writes the figures as JSON and a chart of them as SVG.

// Services and Ingresses per namespace of the scale run: every size has the
// shape of the default large cluster, so growing it keeps every object's
// name and address.
const (
	scaleServicesPerNS  = 100
	scaleIngressesPerNS = 20
)

// scaleOf returns the large cluster of n Services.
func scaleOf(n int) scale {
	ns := n / scaleServicesPerNS
	return scale{Namespaces: ns, Services: n, Ingresses: ns * scaleIngressesPerNS}
}

// parseSizes parses the -scale flag: Service counts, each a multiple of 100,
// in increasing order.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < scaleServicesPerNS || n%scaleServicesPerNS != 0 {
			return nil, fmt.Errorf("-scale %q: each size is a number of Services, a multiple of %d", s, scaleServicesPerNS)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-scale %q: sizes must increase", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// scaleResults is what a scale run measured; it is written as JSON.
type scaleResults struct {
	Started  time.Time         `json:"started"`
	Seconds  float64           `json:"seconds"`
	Machine  machine           `json:"machine"`
	Versions map[string]string `json:"versions"`
	Points   []scalePoint      `json:"points"`
}

// scalePoint is one size of the scale run.
type scalePoint struct {
	Scale           scale         `json:"scale"`
	PopulateSeconds float64       `json:"populate_seconds"` // growing the cluster to this size
	Skylb           *scaleFigures `json:"skylb,omitempty"`
	ExternalDNS     *scaleFigures `json:"external_dns,omitempty"`
}

// scaleFigures are one controller's figures at one size.
type scaleFigures struct {
	// Records is the records waited for: every record and SRV record of
	// the large cluster for skylb, the Services' A records for external-dns.
	Records int `json:"records"`
	// ColdStartSeconds is process start to the last of them in etcd.
	ColdStartSeconds float64 `json:"cold_start_seconds"`
	// CachesSyncedSeconds is process start to caches synced (skylb).
	CachesSyncedSeconds float64 `json:"caches_synced_seconds,omitempty"`
	PeakRSSMiB          float64 `json:"peak_rss_mib"`
	PeakFileMiB         float64 `json:"peak_rss_file_mib"`
	// RSSAfterMiB is skylb's RSS a second after it is ready.
	RSSAfterMiB float64 `json:"rss_after_mib,omitempty"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	// StatusChange is a Service's status address changed, API write to
	// CoreDNS's answer.
	StatusChange quantiles `json:"status_change_to_dns"`
	// Load is the 1-minute load average of the machine when the cold start
	// began and when the status changes ended.
	Load [2]float64 `json:"load_average"`
}

// runScale starts the stack and measures skylb and external-dns at each size.
func runScale(ctx context.Context, o options) (*scaleResults, error) {
	res := &scaleResults{Started: time.Now().UTC(), Machine: describeMachine()}
	b, err := newBench(ctx, o)
	if b != nil {
		defer b.close()
		res.Versions = b.versions()
	}
	if err != nil {
		return res, err
	}
	// Creating objects through the API server takes about 60 per second
	// on two loaded cores; each size adds its cold starts and the status
	// changes, 6 s each for external-dns.
	largest := o.sizes[len(o.sizes)-1]
	limit := 20*time.Minute + time.Duration(largest)*40*time.Millisecond +
		time.Duration(len(o.sizes))*(o.extLimit+time.Duration(o.extChanges)*10*time.Second)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var prev scale
	for _, n := range o.sizes {
		sc := scaleOf(n)
		pt := scalePoint{Scale: sc}
		t := time.Now()
		logf("scale %d: creating %d Services and %d Ingresses more", n, sc.Services-prev.Services, sc.Ingresses-prev.Ingresses)
		if err := populateFrom(ctx, b.kube, prev, sc, o.creators, logf); err != nil {
			return res, err
		}
		prev = sc
		pt.PopulateSeconds = time.Since(t).Seconds()
		if pt.Skylb, err = b.scaleSkylb(ctx, sc); err != nil {
			return res, fmt.Errorf("scale %d: skylb: %w", n, err)
		}
		res.Points = append(res.Points, pt)
		if o.externalDNS {
			if pt.ExternalDNS, err = b.scaleExternalDNS(ctx, sc); err != nil {
				return res, fmt.Errorf("scale %d: external-dns: %w", n, err)
			}
			res.Points[len(res.Points)-1] = pt
		}
	}
	res.Seconds = time.Since(res.Started).Seconds()
	return res, nil
}

// clearRecords stops skylb and removes every record and claim.
func (b *bench) clearRecords(ctx context.Context) error {
	if b.skylb != nil {
		if err := b.skylb.Stop(); err != nil {
			return err
		}
	}
	for _, dir := range []string{"/skydns/", "/skylb/"} {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := b.etcd.Delete(dctx, dir, clientv3.WithPrefix())
		cancel()
		if err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	return nil
}

// scaleSkylb measures skylb's cold start over the cluster sc, with nothing
// of it in etcd, and the status changes of one of its Services; it leaves
// skylb stopped.
func (b *bench) scaleSkylb(ctx context.Context, sc scale) (*scaleFigures, error) {
	if err := b.clearRecords(ctx); err != nil {
		return nil, err
	}
	f := &scaleFigures{Records: (1+2*srvPerPort())*sc.Services + sc.Ingresses}
	f.Load[0] = loadAverage()
	c := &coldStart{Keys: f.Records}
	if err := b.skylbColdStart(ctx, c); err != nil {
		return nil, err
	}
	f.ColdStartSeconds, f.CachesSyncedSeconds = c.LastRecordSeconds, c.CachesSyncedSeconds
	f.PeakRSSMiB, f.PeakFileMiB, f.RSSAfterMiB, f.CPUSeconds = c.PeakRSSMiB, c.PeakFileMiB, c.RSSMiB, c.CPUSeconds
	var err error
	if f.StatusChange, err = b.statusChanges(ctx, b.o.extChanges, 10*time.Second); err != nil {
		return nil, err
	}
	f.Load[1] = loadAverage()
	logf("scale %d: skylb cold start %.2fs (caches synced %.2fs), peak RSS %.1f MiB (%.1f MiB once ready), CPU %.2fs; status change p50 %.1f ms, p99 %.1f ms; load %.1f-%.1f",
		sc.Services, f.ColdStartSeconds, f.CachesSyncedSeconds, f.PeakRSSMiB, f.RSSAfterMiB, f.CPUSeconds, f.StatusChange.P50, f.StatusChange.P99, f.Load[0], f.Load[1])
	return f, b.skylb.Stop()
}

// scaleExternalDNS measures external-dns's cold start over the cluster sc
// and the status changes of one of its Services; it leaves it stopped.
func (b *bench) scaleExternalDNS(ctx context.Context, sc scale) (*scaleFigures, error) {
	if err := b.clearRecords(ctx); err != nil {
		return nil, err
	}
	f := &scaleFigures{Records: sc.Services}
	f.Load[0] = loadAverage()
	e, p, err := b.externalDNSColdStart(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	f.ColdStartSeconds, f.PeakRSSMiB, f.PeakFileMiB, f.CPUSeconds = e.LastRecordSeconds, e.PeakRSSMiB, e.PeakFileMiB, e.CPUSeconds
	if f.StatusChange, err = b.statusChanges(ctx, b.o.extChanges, 90*time.Second); err != nil {
		return nil, err
	}
	f.Load[1] = loadAverage()
	logf("scale %d: external-dns cold start %.2fs, peak RSS %.1f MiB, CPU %.2fs; status change p50 %.1f ms, p99 %.1f ms; load %.1f-%.1f",
		sc.Services, f.ColdStartSeconds, f.PeakRSSMiB, f.CPUSeconds, f.StatusChange.P50, f.StatusChange.P99, f.Load[0], f.Load[1])
	return f, nil
}

// loadAverage returns the machine's 1-minute load average, or 0.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// markdown renders the scale run as a table, a row per size.
func (r *scaleResults) markdown() string {
	var b strings.Builder
	b.WriteString("| Services (+ Ingresses) | records | cold start, process start → last record | peak RSS (mapped binary) | CPU | status change → answer, p50 / p99 | load average |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	row := func(who string, sc scale, f *scaleFigures) {
		fmt.Fprintf(&b, "| %s, %d (+ %d) | %d | %.2f s | %.1f MiB (%.1f MiB) | %.2f s | %.1f / %.1f ms | %.1f–%.1f |\n",
			who, sc.Services, sc.Ingresses, f.Records, f.ColdStartSeconds, f.PeakRSSMiB, f.PeakFileMiB, f.CPUSeconds,
			f.StatusChange.P50, f.StatusChange.P99, min(f.Load[0], f.Load[1]), max(f.Load[0], f.Load[1]))
	}
	for _, p := range r.Points {
		if p.Skylb != nil {
			row("skylb", p.Scale, p.Skylb)
		}
		if p.ExternalDNS != nil {
			row("external-dns", p.Scale, p.ExternalDNS)
		}
	}
	writeMachine(&b, r.Machine, r.Versions, fmt.Sprintf("scale run, %.0f s", r.Seconds))
	return b.String()
}

// writeChart writes the chart of the scale run as SVG.
func writeChart(path string, r *scaleResults) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, scaleChart(r), 0o644)
}

// series are the values of one controller, by size.
type series struct {
	name, color string
	x, y        []float64
}

// scaleChart draws the cold start, the peak RSS and the status change's p99
// of each controller against the number of Services, a panel each, on
// logarithmic axes where the values span more than a factor of 20.
func scaleChart(r *scaleResults) []byte {
	type panel struct {
		title, unit string
		value       func(*scaleFigures) float64
	}
	panels := []panel{
		{"Cold start: process start → last record", "s", func(f *scaleFigures) float64 { return f.ColdStartSeconds }},
		{"Peak RSS", "MiB", func(f *scaleFigures) float64 { return f.PeakRSSMiB }},
		{"Status change → CoreDNS answer, p99", "ms", func(f *scaleFigures) float64 { return f.StatusChange.P99 }},
	}
	const (
		pw, ph         = 320, 300 // panel
		ml, mr, mt, mb = 58, 16, 46, 44
		w, h           = 3 * pw, ph + 44
	)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	for i, p := range panels {
		var all []series
		for _, who := range []struct {
			name, color string
			get         func(scalePoint) *scaleFigures
		}{
			{"skylb", "#1f77b4", func(s scalePoint) *scaleFigures { return s.Skylb }},
			{"external-dns", "#d62728", func(s scalePoint) *scaleFigures { return s.ExternalDNS }},
		} {
			s := series{name: who.name, color: who.color}
			for _, pt := range r.Points {
				if f := who.get(pt); f != nil {
					s.x = append(s.x, float64(pt.Scale.Services))
					s.y = append(s.y, p.value(f))
				}
			}
			if len(s.x) > 0 {
				all = append(all, s)
			}
		}
		x0 := float64(i * pw)
		plot := box{x0 + ml, mt, x0 + pw - mr, ph - mb}
		fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="12" font-weight="bold">%s</text>`+"\n", x0+ml-40, xmlEscape(p.title))
		fmt.Fprintf(&b, `<text x="%.0f" y="34" fill="#555">%s</text>`+"\n", x0+ml-40, p.unit)
		var xs, ys []float64
		for _, s := range all {
			xs = append(xs, s.x...)
			ys = append(ys, s.y...)
		}
		if len(xs) == 0 {
			continue
		}
		xa := newAxis(xs, true)
		ya := newAxis(ys, spread(ys) > 20)
		for _, t := range ya.ticks() {
			y := plot.y1 - ya.pos(t)*(plot.y1-plot.y0)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plot.x0, y, plot.x1, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", plot.x0-4, y+4, tickLabel(t))
		}
		for _, t := range xa.ticks() {
			x := plot.x0 + xa.pos(t)*(plot.x1-plot.x0)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, plot.y0, x, plot.y1)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", x, plot.y1+14, tickLabel(t))
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", plot.x0, plot.y0, plot.x1-plot.x0, plot.y1-plot.y0)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">Services (log scale)</text>`+"\n", (plot.x0+plot.x1)/2, plot.y1+30)
		if ya.log {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">log scale</text>`+"\n", plot.x1, plot.y0-4)
		}
		for _, s := range all {
			var pts []string
			for j := range s.x {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", plot.x0+xa.pos(s.x[j])*(plot.x1-plot.x0), plot.y1-ya.pos(s.y[j])*(plot.y1-plot.y0)))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.color)
			for j, pt := range pts {
				x, y, _ := strings.Cut(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, s.color)
				fmt.Fprintf(&b, `<text x="%s" y="%s" dx="5" dy="-5" fill="%s">%s</text>`+"\n", x, y, s.color, valueLabel(s.y[j]))
			}
		}
	}
	// Legend and the machine.
	ly := float64(ph + 10)
	for i, s := range []series{{name: "skylb", color: "#1f77b4"}, {name: "external-dns v0.22.0 (CoreDNS provider, --events)", color: "#d62728"}} {
		if i == 1 && r.Versions["external-dns"] != "" {
			s.name = "external-dns " + r.Versions["external-dns"] + " (CoreDNS provider, --events)"
		}
		x := float64(ml + i*120)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2"/>`+"\n", x, ly-4, x+18, ly-4, s.color)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", x+22, ly, xmlEscape(s.name))
	}
	var loads []float64
	for _, p := range r.Points {
		for _, f := range []*scaleFigures{p.Skylb, p.ExternalDNS} {
			if f != nil {
				loads = append(loads, f.Load[0], f.Load[1])
			}
		}
	}
	note := fmt.Sprintf("%d CPUs (%s), %s", r.Machine.CPUs, r.Machine.Model, r.Machine.Go)
	if len(loads) > 0 {
		note = fmt.Sprintf("%d CPUs (%s), %s; 1-minute load average %.1f to %.1f during the measurements",
			r.Machine.CPUs, r.Machine.Model, r.Machine.Go, slices.Min(loads), slices.Max(loads))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%.0f" fill="#555">%s</text>`+"\n", ml, ly+20, xmlEscape(note))
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// box is a rectangle: the plotting area of a panel.
type box struct{ x0, y0, x1, y1 float64 }

// axis maps values to [0, 1], linearly from 0 or logarithmically.
type axis struct {
	lo, hi float64
	log    bool
}

func newAxis(vs []float64, log bool) axis {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if log {
		lo = max(lo, 1e-3)
		return axis{lo: lo / 1.6, hi: hi * 1.6, log: true}
	}
	return axis{lo: 0, hi: niceCeil(hi * 1.15)}
}

func (a axis) pos(v float64) float64 {
	if a.log {
		return (math.Log(max(v, a.lo)) - math.Log(a.lo)) / (math.Log(a.hi) - math.Log(a.lo))
	}
	if a.hi == a.lo {
		return 0
	}
	return (v - a.lo) / (a.hi - a.lo)
}

// ticks returns the tick values: 1, 2 and 5 times the powers of ten within
// a logarithmic axis (1 and 10 times when there are many), about five even
// steps on a linear one.
func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		for _, steps := range [][]float64{{1, 2, 5}, {1}} {
			out = out[:0]
			for p := math.Pow10(int(math.Floor(math.Log10(a.lo)))); p <= a.hi; p *= 10 {
				for _, m := range steps {
					if v := p * m; v >= a.lo && v <= a.hi {
						out = append(out, v)
					}
				}
			}
			if len(out) <= 8 {
				break
			}
		}
		return out
	}
	step := niceCeil(a.hi / 5)
	for v := 0.0; v <= a.hi+step/1e6; v += step {
		out = append(out, v)
	}
	return out
}

// spread is the largest value over the smallest positive one.
func spread(vs []float64) float64 {
	lo, hi := 0.0, 0.0
	for _, v := range vs {
		if v > 0 && (lo == 0 || v < lo) {
			lo = v
		}
		hi = max(hi, v)
	}
	if lo == 0 {
		return 1
	}
	return hi / lo
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{1, 2, 5, 10} {
		if p*m >= v {
			return p * m
		}
	}
	return 10 * p
}

func tickLabel(v float64) string {
	switch {
	case v >= 1000 && v == float64(int64(v)) && int64(v)%1000 == 0:
		return strconv.FormatInt(int64(v)/1000, 10) + "k"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

// valueLabel formats a measured value with two or three significant digits.
func valueLabel(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
