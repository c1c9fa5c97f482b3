package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dnsperf 2.10's output, with -v, abridged.
const dnsperfOutput = `DNS Performance Testing Tool
Version 2.10.0

[Status] Command line: dnsperf -s 127.0.0.1 -p 15399 -d q -l 1 -Q 4 -v
[Status] Sending queries (to 127.0.0.1:15399)
> NOERROR a.example.org A 0.000843
> NXDOMAIN nx.example.org A 0.000781
> NOERROR a.example.org A 0.000896
> T a.example.org A
> NOERROR a.example.org A 0.000428
[Status] Testing complete (time limit)

Statistics:

  Queries sent:         5
  Queries completed:    4 (80.00%)
  Queries lost:         1 (20.00%)

  Response codes:       NOERROR 3 (75.00%), NXDOMAIN 1 (25.00%)
  Average packet size:  request 31, response 102
  Run time (s):         1.000643
  Queries per second:   3.997430

  Average Latency (s):  0.000737 (min 0.000428, max 0.000896)
  Latency StdDev (s):   0.000190
`

func TestParseDNSPerf(t *testing.T) {
	r, err := parseDNSPerf([]byte(dnsperfOutput))
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 5 || r.Completed != 4 || r.Lost != 1 {
		t.Errorf("sent %d, completed %d, lost %d; want 5, 4, 1", r.Sent, r.Completed, r.Lost)
	}
	if r.Rcodes["NOERROR"] != 3 || r.Rcodes["NXDOMAIN"] != 1 || len(r.Rcodes) != 2 {
		t.Errorf("rcodes %v", r.Rcodes)
	}
	if r.QPS < 3.99 || r.QPS > 4 || r.Seconds < 1 || r.Seconds > 1.001 {
		t.Errorf("qps %v over %v s", r.QPS, r.Seconds)
	}
	if int(r.AvgMicros) != 737 {
		t.Errorf("average %v µs, want 737", r.AvgMicros)
	}
	// Four latencies, sorted 428, 781, 843, 896 µs: the timeout has none.
	if int(r.P50Micros+0.5) != 843 || int(r.P99Micros+0.5) != 896 {
		t.Errorf("p50 %v, p99 %v µs; want 843, 896", r.P50Micros, r.P99Micros)
	}
	// In a set of names that exist, the NXDOMAIN is wrong; the lost query
	// is not counted.
	sv := serving{Sets: []servingSet{{Rcode: "NOERROR", Shipped: r}}}
	if wrong, answered := sv.wrongAnswers(); wrong != 1 || answered != 4 {
		t.Errorf("wrong answers %d of %d, want 1 of 4", wrong, answered)
	}
	if _, err := parseDNSPerf([]byte("[Fatal] unable to open data file\n")); err == nil {
		t.Error("output without statistics parsed")
	}
}

func TestFileCorefile(t *testing.T) {
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	path, err := fileCorefile(filepath.Join(root, "coredns", "Corefile"), dir, "/z/zone.db")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var directives []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			directives = append(directives, f[0])
		}
	}
	for _, gone := range []string{"cache", "etcd", "serve_stale", "prefetch", "success", "endpoint", "tls", "path"} {
		if slices.Contains(directives, gone) {
			t.Errorf("the ceiling's Corefile still has %s:\n%s", gone, b)
		}
	}
	for _, kept := range []string{"errors", "health", "ready", "prometheus", "loadbalance", "file"} {
		if !slices.Contains(directives, kept) {
			t.Errorf("the ceiling's Corefile lacks %s:\n%s", kept, b)
		}
	}
	if !strings.Contains(string(b), "file /z/zone.db {$SKYLB_ZONE}") {
		t.Errorf("no file line for the zone:\n%s", b)
	}
	if strings.Count(string(b), "{") != strings.Count(string(b), "}") {
		t.Errorf("unbalanced braces:\n%s", b)
	}
	if _, err := corefileWithout(filepath.Join(root, "coredns", "Corefile"), "rewrite"); err == nil {
		t.Error("dropping a plugin the Corefile lacks is no error")
	}
}

func TestZoneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zone.db")
	if err := zoneFile(path, "example.org", map[string][]string{"b.example.org": {"192.0.2.2"}, "a.example.org": {"192.0.2.1", "192.0.2.3"}}, 30); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `$ORIGIN example.org.
@ 30 IN SOA ns.dns.example.org. hostmaster.example.org. 1 7200 1800 86400 30
@ 30 IN NS ns.dns.example.org.
a.example.org. 30 IN A 192.0.2.1
a.example.org. 30 IN A 192.0.2.3
b.example.org. 30 IN A 192.0.2.2
`
	if string(b) != want {
		t.Errorf("zone file:\n%s\nwant:\n%s", b, want)
	}
}
