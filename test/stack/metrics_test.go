package stack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const page = `# HELP skylb_etcd_transactions_total Transactions.
# TYPE skylb_etcd_transactions_total counter
skylb_etcd_transactions_total 12
skylb_etcd_transactions_total_extra 3
skylb_records{kind="A"} 4
skylb_records{kind="AAAA"} 2.5
go_goroutines 40
`

func metricsServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, page)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestScrape(t *testing.T) {
	addr := metricsServer(t)
	got, err := Scrape(context.Background(), addr, "skylb_records")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{`skylb_records{kind="A"}`: 4, `skylb_records{kind="AAAA"}`: 2.5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Scrape(skylb_records) (-want +got):\n%s", diff)
	}
}

func TestMetric(t *testing.T) {
	addr := metricsServer(t)
	for _, tc := range []struct {
		sample  string
		want    float64
		wantErr bool
	}{
		{sample: "skylb_etcd_transactions_total", want: 12},
		{sample: `skylb_records{kind="AAAA"}`, want: 2.5},
		{sample: "skylb_records", wantErr: true}, // only samples with labels
		{sample: "skylb_missing", wantErr: true},
	} {
		got, err := Metric(context.Background(), addr, tc.sample)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Metric(%s) = %v, %v, want %v (error: %v)", tc.sample, got, err, tc.want, tc.wantErr)
		}
	}
}
