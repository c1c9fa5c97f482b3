// Package metrics defines skylb's Prometheus metrics, named skylb_*, and
// exports client-go's own (workqueue_*, rest_client_*). The histograms are
// observed by the code that measures them; everything else is read from the
// components' own counters at scrape time.
package metrics

import (
	"runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds skylb's histograms and the registry of all its metrics.
type Metrics struct {
	Registry          *prometheus.Registry
	ReconcileDuration prometheus.Histogram
	Propagation       prometheus.Histogram
	ProbeDuration     prometheus.Histogram
	ProbeErrors       *prometheus.CounterVec
}

// New returns a registry with the histograms, skylb_build_info for version, and
// the Go runtime and process collectors.
func New(version string) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		ReconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "skylb_reconcile_duration_seconds",
			Help:    "Time to compute what one object publishes.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		Propagation: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "skylb_propagation_seconds",
			Help:    "Time from a Kubernetes change being observed to its records committed in etcd.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	m.ProbeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skylb_health_probe_duration_seconds",
		Help:    "Duration of health probes.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.ProbeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skylb_health_probe_errors_total", Help: "Failed health probes by reason (timeout, refused, status, other).",
	}, []string{"reason"})
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "skylb_build_info", Help: "Always 1; the labels say which skylb runs.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	m.Registry.MustRegister(m.ReconcileDuration, m.Propagation, m.ProbeDuration, m.ProbeErrors, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(clientGoCollectors()...)
	return m
}

// Gauge registers a gauge read from f at each scrape.
func (m *Metrics) Gauge(name, help string, f func() float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// Counter registers a counter read from f at each scrape; f must never decrease.
func (m *Metrics) Counter(name, help string, f func() float64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
}

// Vec registers a metric family with one label, read from f at each scrape.
func (m *Metrics) Vec(name, help string, kind prometheus.ValueType, labels []string, f func() map[string]float64) {
	m.Registry.MustRegister(&funcVec{desc: prometheus.NewDesc(name, help, labels, nil), kind: kind, f: f, labels: len(labels)})
}

type funcVec struct {
	desc   *prometheus.Desc
	kind   prometheus.ValueType
	labels int
	f      func() map[string]float64
}

func (c *funcVec) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect emits one sample per key; a key holds the label values joined by LabelSep.
func (c *funcVec) Collect(ch chan<- prometheus.Metric) {
	for key, v := range c.f() {
		ch <- prometheus.MustNewConstMetric(c.desc, c.kind, v, strings.SplitN(key, LabelSep, c.labels)...)
	}
}

// LabelSep separates label values in the keys of a Vec's map.
const LabelSep = "\x00"
