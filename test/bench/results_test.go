package main

import (
	"strings"
	"testing"
)

// tableRow returns the cells of the table row whose first cell contains label.
func tableRow(t *testing.T, table, label string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if strings.Contains(cells[0], label) {
			return cells
		}
	}
	t.Fatalf("no row %q in\n%s", label, table)
	return nil
}

func TestMarkdownExternalDNSColumn(t *testing.T) {
	r := &results{
		Mode:      "full",
		Scale:     scale{Namespaces: 10, Services: 1000, Ingresses: 200},
		ColdStart: &coldStart{LastRecordSeconds: 2, PeakRSSMiB: 40, KeysWritten: 3000},
		OneChange: &oneChange{StatusChange: quantiles{N: 4, P50: 10, P90: 12, P99: 20, Max: 20}},
		Idle:      &idleResult{Seconds: 60, GRPC: map[string]float64{"Range": 0, "Txn": 0, "Put": 0}, CPUSeconds: 0.1},
	}
	without := r.markdown()
	if got := tableRow(t, without, "peak RSS"); len(got) != 3 {
		t.Errorf("without external-dns, RSS row has %d cells, want 3: %q", len(got), got)
	}
	if strings.Contains(without, "external-dns") {
		t.Errorf("without external-dns, the table names it:\n%s", without)
	}

	r.ExternalDNS = &externalDNSResult{
		Version: "v0.22.0", Records: 1000,
		LastRecordSeconds: 8, PeakRSSMiB: 120, KeysWritten: 2000,
		StatusChange: quantiles{N: 4, P50: 5000, P90: 5100, P99: 6000, Max: 6000},
		Idle:         &idleResult{Seconds: 60, GRPC: map[string]float64{"Range": 1, "Txn": 0, "Put": 0}, CPUSeconds: 0.5},
	}
	with := r.markdown()
	for _, c := range []struct{ label, ext, ratio string }{
		{"process start → last record", "8.00 s", "×4"},
		{"peak RSS", "120.0 MiB (0.0 MiB) / 0.00 s", "×3 (RSS)"},
		{"keys written", "2000 keys, one request each", "×0.667 (keys)"},
		{"status address changed", "5000.0 / 5100.0 / 6000.0 / 6000.0 ms", "×500 (p50), ×300 (p99)"},
		{"**Idle**", "1 / 0 / 0", "∞ (skylb 0) (range reads)"},
		{"CPU of the controller", "none; 0.50 s", "×5 (CPU)"},
	} {
		got := tableRow(t, with, c.label)
		if len(got) != 5 || got[3] != c.ext || got[4] != c.ratio {
			t.Errorf("row %q = %q, want external-dns %q and ratio %q", c.label, got, c.ext, c.ratio)
		}
	}
}

func TestMarkdownMemoryRow(t *testing.T) {
	r := &results{
		Mode:  "full",
		Scale: scale{Namespaces: 10, Services: 1000, Ingresses: 200},
		ColdStart: &coldStart{LastRecordSeconds: 2, PeakRSSMiB: 40, RSSMiB: 38, RSSFileMiB: 20,
			Memory: &goMemory{HeapInuse: 12.5, NextGC: 15, HeapFree: 1.25, Stacks: 0.5, Runtime: 3}},
	}
	got := tableRow(t, r.markdown(), "skylb's memory once every record is written")
	if want := "38.0 MiB (20.0 MiB); 12.5 MiB (15.0 MiB); 1.2 MiB; 0.5 MiB; 3.0 MiB"; len(got) < 2 || got[1] != want {
		t.Errorf("memory row = %q, want skylb's cell %q", got, want)
	}
}

func TestReadGoMemory(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(`go_memstats_heap_inuse_bytes 2.097152e+07
go_memstats_heap_idle_bytes 4.194304e+06
go_memstats_heap_released_bytes 1.048576e+06
go_memstats_next_gc_bytes 2.62144e+07
go_memstats_stack_sys_bytes 1.048576e+06
go_memstats_mspan_sys_bytes 524288
go_memstats_mcache_sys_bytes 0
go_memstats_gc_sys_bytes 2.097152e+06
go_memstats_other_sys_bytes 524288
go_memstats_buck_hash_sys_bytes 0
`))
	if err != nil {
		t.Fatal(err)
	}
	want := goMemory{HeapInuse: 20, HeapFree: 3, NextGC: 25, Stacks: 1, Runtime: 3}
	if got := readGoMemory(m); *got != want {
		t.Errorf("readGoMemory() = %+v, want %+v", *got, want)
	}
}
