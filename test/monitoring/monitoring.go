// Package monitoring checks the Prometheus Operator component
// manifests/monitoring with Prometheus's own promtool (bin/promtool, built
// by scripts/build-bins.sh from the Prometheus module): the PrometheusRule's
// groups are valid rules, every alert has unit tests that see it fire and
// stay quiet (prometheusrule_test.yaml, run by promtool test rules), and
// every query of the Grafana dashboard parses.
package monitoring

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// metricName matches skylb's metric names in queries.
var metricName = regexp.MustCompile(`\bskylb_[a-z_]+`)

// UsedMetrics returns the skylb metrics the rules and the dashboard query,
// sorted, histograms by their family name (without _bucket, _count, _sum).
func UsedMetrics(root string) ([]string, error) {
	var names []string
	for _, f := range []string{"prometheusrule.yaml", "dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", f))
		if err != nil {
			return nil, err
		}
		for _, m := range metricName.FindAllString(string(b), -1) {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if strings.HasSuffix(m, "_seconds"+suffix) {
					m = strings.TrimSuffix(m, suffix)
				}
			}
			names = append(names, m)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
