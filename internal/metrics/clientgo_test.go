package metrics

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// TestClientGoMetrics checks that a named work queue and the REST client's
// hooks reach every registry New returns, under Kubernetes' metric names.
func TestClientGoMetrics(t *testing.T) {
	first, second := New("test"), New("test")
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "metrics-test"})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	item, _ := q.Get()
	q.Done(item)
	clientmetrics.RequestResult.Increment(context.Background(), "200", "GET", "api.test:6443")
	clientmetrics.RequestLatency.Observe(context.Background(), "GET", url.URL{Host: "api.test:6443"}, 20*time.Millisecond)

	for _, m := range []*Metrics{first, second} {
		want := `
# HELP workqueue_adds_total Adds handled by the work queue.
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="metrics-test"} 2
# HELP workqueue_depth Current depth of the work queue.
# TYPE workqueue_depth gauge
workqueue_depth{name="metrics-test"} 1
# HELP rest_client_requests_total Requests to the API server, by status code, method and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="api.test:6443",method="GET"} 1
`
		if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
			"workqueue_adds_total", "workqueue_depth", "rest_client_requests_total"); err != nil {
			t.Error(err)
		}
		if n, err := testutil.GatherAndCount(m.Registry, "rest_client_request_duration_seconds", "workqueue_work_duration_seconds"); err != nil || n != 2 {
			t.Errorf("Got %d latency and work duration series (%v), want 2", n, err)
		}
	}
}
