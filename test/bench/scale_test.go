package main

import (
	"encoding/xml"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "1000,10000,30000", want: []int{1000, 10000, 30000}},
		{in: "200", want: []int{200}},
		{in: " 100, 300", want: []int{100, 300}},
		{in: "1000,150", wantErr: true},
		{in: "10000,1000", wantErr: true},
		{in: "1000,1000", wantErr: true},
		{in: "50", wantErr: true},
		{in: "ten", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseSizes(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseSizes(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseSizes(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestScaleOfKeepsTheShape(t *testing.T) {
	for _, n := range []int{1000, 10000, 30000} {
		sc := scaleOf(n)
		perNS, ingPerNS := sc.Services/sc.Namespaces, sc.Ingresses/sc.Namespaces
		if perNS != scaleServicesPerNS || ingPerNS != scaleIngressesPerNS || sc.Services != n {
			t.Errorf("scaleOf(%d) = %+v: %d Services and %d Ingresses per namespace, want %d and %d",
				n, sc, perNS, ingPerNS, scaleServicesPerNS, scaleIngressesPerNS)
		}
	}
	if got, want := scaleOf(10000), (scale{Namespaces: 100, Services: 10000, Ingresses: 2000}); got != want {
		t.Errorf("scaleOf(10000) = %+v, want the default large cluster %+v", got, want)
	}
}

// svgDoc is the part of the chart the test reads.
type svgDoc struct {
	Polylines []struct {
		Points string `xml:"points,attr"`
		Stroke string `xml:"stroke,attr"`
	} `xml:"polyline"`
	Texts []string `xml:"text"`
}

func TestScaleChart(t *testing.T) {
	fig := func(cold, rss, p99, load float64) *scaleFigures {
		return &scaleFigures{ColdStartSeconds: cold, PeakRSSMiB: rss, StatusChange: quantiles{N: 10, P99: p99}, Load: [2]float64{load, load + 1}}
	}
	r := &scaleResults{
		Machine:  machine{CPUs: 2, Model: "AMD EPYC", Go: "go1.26.8"},
		Versions: map[string]string{"external-dns": "v0.22.0"},
		Points: []scalePoint{
			{Scale: scaleOf(1000), Skylb: fig(0.6, 40, 20, 5), ExternalDNS: fig(3, 90, 6000, 6)},
			{Scale: scaleOf(10000), Skylb: fig(3.4, 70, 50, 7), ExternalDNS: fig(26, 180, 6822.4, 8)},
			{Scale: scaleOf(30000), Skylb: fig(9, 150, 60, 9)},
		},
	}
	out := scaleChart(r)
	var doc svgDoc
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("the chart is not XML: %v\n%s", err, out)
	}
	// Three panels, each a line of skylb (3 points) and of external-dns (2).
	var got []string
	for _, p := range doc.Polylines {
		got = append(got, p.Stroke+" "+string(rune('0'+len(strings.Fields(p.Points)))))
	}
	want := []string{"#1f77b4 3", "#d62728 2", "#1f77b4 3", "#d62728 2", "#1f77b4 3", "#d62728 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (colour, points) (-want +got):\n%s", diff)
	}
	for _, label := range []string{"Cold start: process start → last record", "Peak RSS", "Status change → CoreDNS answer, p99",
		"external-dns v0.22.0 (CoreDNS provider, --events)", "26", "6822", "0.60", "150", "load average 5.0 to 10.0"} {
		if !slices.ContainsFunc(doc.Texts, func(s string) bool { return strings.Contains(s, label) }) {
			t.Errorf("no text %q in the chart; texts: %q", label, doc.Texts)
		}
	}
}

func TestAxisTicks(t *testing.T) {
	tests := []struct {
		name string
		a    axis
		want []float64
	}{
		{name: "log, few decades", a: axis{lo: 600, hi: 48000, log: true}, want: []float64{1000, 2000, 5000, 10000, 20000}},
		{name: "log, many decades", a: axis{lo: 5, hi: 20000, log: true}, want: []float64{10, 100, 1000, 10000}},
		{name: "linear", a: axis{lo: 0, hi: 200}, want: []float64{0, 50, 100, 150, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.a.ticks()); diff != "" {
				t.Errorf("ticks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSRVPerPort(t *testing.T) {
	defer func(saved []string) { skylbArgs = saved }(skylbArgs)
	tests := []struct {
		args []string
		want int
	}{
		{args: nil, want: 1},
		{args: []string{"--log-level=info"}, want: 1},
		{args: []string{"--srv=false"}, want: 0},
		{args: []string{"--srv=false", "--srv"}, want: 1},
		{args: []string{"--srv=true", "--srv=false"}, want: 0},
	}
	for _, tt := range tests {
		skylbArgs = tt.args
		if got := srvPerPort(); got != tt.want {
			t.Errorf("srvPerPort() with %q = %d, want %d", tt.args, got, tt.want)
		}
	}
}
