package stack

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Scrape returns the samples of the Prometheus text page at
// http://addr/metrics whose line starts with prefix, keyed by the sample's name
// and labels as printed: `skylb_etcd_transactions_total` or
// `skylb_records{kind="A"}`.
func Scrape(ctx context.Context, addr, prefix string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	return out, nil
}

// Metric returns the value of the sample named exactly sample (a name, with
// its labels if it has some) on the metrics page at addr.
func Metric(ctx context.Context, addr, sample string) (float64, error) {
	samples, err := Scrape(ctx, addr, sample)
	if err != nil {
		return 0, err
	}
	v, ok := samples[sample]
	if !ok {
		return 0, fmt.Errorf("scrape %s: no sample %s", addr, sample)
	}
	return v, nil
}
