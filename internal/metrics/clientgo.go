package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// clientGo holds client-go's own metrics, under the names Kubernetes'
// components and controller-runtime export them: the work queues'
// (workqueue_*, by queue name) and the REST client's (rest_client_*).
type clientGo struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	queueLatency, workDuration *prometheus.HistogramVec
	requestLatency             *prometheus.HistogramVec
	requestResults             *prometheus.CounterVec
}

var (
	clientGoOnce    sync.Once
	clientGoMetrics *clientGo
)

// clientGoCollectors returns the collectors of client-go's metrics. The
// first call hands them to client-go, whose hooks are set once per process,
// before any queue or client exists: every registry shares them.
func clientGoCollectors() []prometheus.Collector {
	clientGoOnce.Do(func() {
		c := newClientGo()
		workqueue.SetProvider(c)
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency: latencyFunc(func(verb string, u url.URL, d time.Duration) {
				c.requestLatency.WithLabelValues(verb, u.Host).Observe(d.Seconds())
			}),
			RequestResult: resultFunc(func(code, method, host string) {
				c.requestResults.WithLabelValues(code, method, host).Inc()
			}),
		})
		clientGoMetrics = c
	})
	c := clientGoMetrics
	return []prometheus.Collector{c.depth, c.unfinished, c.longest, c.adds, c.retries,
		c.queueLatency, c.workDuration, c.requestLatency, c.requestResults}
}

func newClientGo() *clientGo {
	queue := []string{"name"}
	buckets := prometheus.ExponentialBuckets(1e-6, 10, 10) // 1 µs to 1000 s
	return &clientGo{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "workqueue_depth", Help: "Current depth of the work queue.",
		}, queue),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workqueue_adds_total", Help: "Adds handled by the work queue.",
		}, queue),
		queueLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "workqueue_queue_duration_seconds", Help: "How long an item stays in the work queue before it is requested.", Buckets: buckets,
		}, queue),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "workqueue_work_duration_seconds", Help: "How long processing an item from the work queue takes.", Buckets: buckets,
		}, queue),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "workqueue_unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers.",
		}, queue),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "workqueue_longest_running_processor_seconds", Help: "Seconds the longest running worker has been processing its item.",
		}, queue),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workqueue_retries_total", Help: "Retries handled by the work queue.",
		}, queue),
		requestLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_request_duration_seconds",
			Help:    "Latency of the API server's answers to skylb, by verb and host.",
			Buckets: []float64{.005, .025, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
		}, []string{"verb", "host"}),
		requestResults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_requests_total", Help: "Requests to the API server, by status code, method and host.",
		}, []string{"code", "method", "host"}),
	}
}

func (c *clientGo) NewDepthMetric(name string) workqueue.GaugeMetric {
	return c.depth.WithLabelValues(name)
}

func (c *clientGo) NewAddsMetric(name string) workqueue.CounterMetric {
	return c.adds.WithLabelValues(name)
}

func (c *clientGo) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return c.queueLatency.WithLabelValues(name)
}

func (c *clientGo) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return c.workDuration.WithLabelValues(name)
}

func (c *clientGo) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return c.unfinished.WithLabelValues(name)
}

func (c *clientGo) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return c.longest.WithLabelValues(name)
}

func (c *clientGo) NewRetriesMetric(name string) workqueue.CounterMetric {
	return c.retries.WithLabelValues(name)
}

// latencyFunc is a client-go LatencyMetric.
type latencyFunc func(verb string, u url.URL, d time.Duration)

func (f latencyFunc) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	f(verb, u, d)
}

// resultFunc is a client-go ResultMetric.
type resultFunc func(code, method, host string)

func (f resultFunc) Increment(_ context.Context, code, method, host string) {
	f(code, method, host)
}
