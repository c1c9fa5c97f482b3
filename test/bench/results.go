package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// results is everything one run measured; it is written as JSON.
type results struct {
	Mode     string            `json:"mode"`
	Started  time.Time         `json:"started"`
	Seconds  float64           `json:"seconds"`
	Machine  machine           `json:"machine"`
	Versions map[string]string `json:"versions"`
	Scale    scale             `json:"scale"`

	Propagation *propagation   `json:"propagation,omitempty"`
	ColdStart   *coldStart     `json:"cold_start,omitempty"`
	Restart     *restartResult `json:"restart,omitempty"`
	SecondView  *viewCost      `json:"second_view,omitempty"`
	OneChange   *oneChange     `json:"one_change_at_scale,omitempty"`
	Idle        *idleResult    `json:"idle,omitempty"`
	Resync      *resyncResult  `json:"resync,omitempty"`
	Serving     *serving       `json:"serving,omitempty"`
	Status      *statusResult  `json:"status_at_scale,omitempty"`
	// ExternalDNS is external-dns measured on the same stack and objects.
	ExternalDNS *externalDNSResult `json:"external_dns,omitempty"`
	Micro       []microResult      `json:"micro_benchmarks,omitempty"`
	Targets     []target           `json:"targets,omitempty"`
	// Load is the machine's 1-minute load average at the end of each
	// phase: timings depend on it, memory and counts hardly.
	Load []phaseLoad `json:"load_average,omitempty"`
}

// phaseLoad is the load average at the end of one phase.
type phaseLoad struct {
	Phase string  `json:"phase"`
	Load  float64 `json:"load"`
}

// quantiles summarises latencies in milliseconds.
type quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// summarise returns nearest-rank quantiles of ds.
func summarise(ds []time.Duration) quantiles {
	if len(ds) == 0 {
		return quantiles{P50: math.NaN(), P90: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return quantiles{N: len(s), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// histQuantiles are quantiles estimated from skylb's histogram (milliseconds),
// with the upper bound of the bucket each falls in.
type histQuantiles struct {
	N        int     `json:"n"`
	P50      float64 `json:"p50_ms"`
	P90      float64 `json:"p90_ms"`
	P99      float64 `json:"p99_ms"`
	P99Upper float64 `json:"p99_bucket_le_ms"`
}

func fromHistogram(h histogram) histQuantiles {
	p50, _ := h.quantile(0.5)
	p90, _ := h.quantile(0.9)
	p99, up := h.quantile(0.99)
	return histQuantiles{N: int(h.count()), P50: p50 * 1000, P90: p90 * 1000, P99: p99 * 1000, P99Upper: up * 1000}
}

type propagation struct {
	Changes int `json:"changes"`
	// DNS is API write to CoreDNS answering the new address set (no cache).
	DNS quantiles `json:"api_write_to_dns"`
	// ByKind splits DNS by the kind of change.
	ByKind map[string]quantiles `json:"api_write_to_dns_by_kind"`
	// Etcd is API write to the change arriving on the benchmark's etcd watch.
	Etcd quantiles `json:"api_write_to_etcd_watch"`
	// API is how long the API write itself took.
	API quantiles `json:"api_write_call"`
	// Skylb is skylb_propagation_seconds: event observed to etcd commit.
	Skylb histQuantiles `json:"skylb_event_to_commit"`
	// Deployment is a Deployment scaled up and down, through
	// kube-controller-manager and the simulated kubelet, to the answer.
	Deployment quantiles `json:"deployment_scaled_to_dns"`
}

type coldStart struct {
	Objects int `json:"objects"` // Services + Ingresses + the Service of phase 4
	Keys    int `json:"keys"`    // records expected in etcd
	// Populate is how long creating the objects (and their status) took.
	PopulateSeconds float64 `json:"populate_seconds"`
	// From skylb's process start.
	CachesSyncedSeconds float64 `json:"caches_synced_seconds"`
	DesiredSeconds      float64 `json:"desired_computed_seconds"`
	FirstRecordSeconds  float64 `json:"first_record_seconds"`
	LastRecordSeconds   float64 `json:"last_record_seconds"`
	ReadySeconds        float64 `json:"ready_seconds"`
	// LastRecordAfterSync is caches synced to the last record in etcd.
	LastRecordAfterSync float64 `json:"last_record_after_caches_synced_seconds"`
	PeakRSSMiB          float64 `json:"peak_rss_mib"`
	PeakAnonMiB         float64 `json:"peak_rss_anon_mib"` // sampled every 10 ms
	PeakFileMiB         float64 `json:"peak_rss_file_mib"` // sampled every 10 ms: the mapped binary
	RSSMiB              float64 `json:"rss_after_mib"`
	RSSFileMiB          float64 `json:"rss_file_after_mib"`
	HeapInuseMiB        float64 `json:"heap_inuse_after_mib"`
	// Memory is where skylb's memory is, by the Go runtime, once every
	// record is written.
	Memory      *goMemory `json:"go_memory_after,omitempty"`
	CPUSeconds  float64   `json:"cpu_seconds"`
	Txns        float64   `json:"etcd_transactions"`
	KeysWritten float64   `json:"etcd_keys_written"`
	EtcdTxns    float64   `json:"etcd_server_txns"` // gRPC Txn requests, from etcd's metrics
}

// goMemory is the Go runtime's account of a process's memory, in MiB, from
// its go_memstats metrics.
type goMemory struct {
	HeapInuse float64 `json:"heap_inuse_mib"`
	// HeapFree is heap memory the collector freed and has not returned to
	// the system yet.
	HeapFree float64 `json:"heap_free_unreleased_mib"`
	NextGC   float64 `json:"next_gc_mib"`
	Stacks   float64 `json:"stacks_mib"`
	// Runtime is the runtime's own structures: spans, caches, the
	// collector's metadata, profiling buckets and the rest.
	Runtime float64 `json:"runtime_mib"`
}

// readGoMemory reads a goMemory from a scrape of the Go collector's metrics.
func readGoMemory(m scrape) *goMemory {
	v := func(name string) float64 { return m.sum("go_memstats_"+name, nil) / (1 << 20) }
	return &goMemory{
		HeapInuse: v("heap_inuse_bytes"),
		HeapFree:  v("heap_idle_bytes") - v("heap_released_bytes"),
		NextGC:    v("next_gc_bytes"),
		Stacks:    v("stack_sys_bytes"),
		Runtime:   v("mspan_sys_bytes") + v("mcache_sys_bytes") + v("gc_sys_bytes") + v("other_sys_bytes") + v("buck_hash_sys_bytes"),
	}
}

type restartResult struct {
	StopSeconds         float64 `json:"stop_seconds"`
	CachesSyncedSeconds float64 `json:"caches_synced_seconds"`
	ReadySeconds        float64 `json:"ready_seconds"`
	KeysWritten         float64 `json:"etcd_keys_written"`
	Txns                float64 `json:"etcd_transactions"`
	RevisionDelta       int64   `json:"etcd_revision_delta"`
	PeakRSSMiB          float64 `json:"peak_rss_mib"`
	CPUSeconds          float64 `json:"cpu_seconds"`
}

type oneChange struct {
	Changes int `json:"changes"`
	// KeysPerChange is the most keys any one change wrote (etcd watch events).
	KeysPerChange int `json:"max_keys_written_per_change"`
	// KeysTotal is every key written during the phase; Outside, those not
	// under the changed name.
	KeysTotal   int           `json:"keys_written"`
	Outside     int           `json:"keys_written_outside_the_name"`
	SkylbKeys   float64       `json:"skylb_keys_written"`
	DNS         quantiles     `json:"api_write_to_dns"`
	Etcd        quantiles     `json:"api_write_to_etcd_watch"`
	Skylb       histQuantiles `json:"skylb_event_to_commit"`
	CPUSeconds  float64       `json:"skylb_cpu_seconds"`
	CPUPerEvent float64       `json:"skylb_cpu_ms_per_change"`
	// StatusChange is the status address of one Service of the large
	// cluster changed, API write to CoreDNS answer: what external-dns is
	// timed on.
	StatusChange quantiles `json:"status_change_to_dns"`
}

type idleResult struct {
	Seconds    float64            `json:"seconds"`
	GRPC       map[string]float64 `json:"etcd_grpc_requests"`     // by method, from etcd's metrics
	CPUSeconds float64            `json:"controller_cpu_seconds"` // skylb's or external-dns's
}

type microResult struct {
	Package  string  `json:"package"`
	Name     string  `json:"name"`
	NsPerOp  float64 `json:"ns_per_op"`
	BPerOp   float64 `json:"bytes_per_op"`
	AllocsOp float64 `json:"allocs_per_op"`
}

// target is one line of the targets and whether this run met it.
type target struct {
	What  string `json:"what"`
	Want  string `json:"want"`
	Got   string `json:"got"`
	Met   bool   `json:"met"`
	Known bool   `json:"measured"`
	// Invariant marks a target that holds whatever the machine's load:
	// what skylb writes and reads, not how fast.
	Invariant bool `json:"invariant"`
}

// invariantsMissed returns the invariant targets this run missed.
func (r *results) invariantsMissed() []string {
	var out []string
	for _, t := range r.Targets {
		if t.Invariant && !t.Met {
			out = append(out, t.What+": "+t.Got)
		}
	}
	return out
}

func (r *results) checkTargets() {
	add := func(what, want, got string, met, known bool) {
		r.Targets = append(r.Targets, target{What: what, Want: want, Got: got, Met: met && known, Known: known})
	}
	invariant := func(what, want, got string, met, known bool) {
		add(what, want, got, met, known)
		r.Targets[len(r.Targets)-1].Invariant = true
	}
	if p := r.Propagation; p != nil {
		add("propagation p99, API write to DNS answer", "< 100 ms", fmt.Sprintf("%.1f ms", p.DNS.P99), p.DNS.P99 < 100, p.DNS.N > 0)
		add("propagation p99 inside skylb (event to etcd commit)", "< 20 ms", fmt.Sprintf("%.1f ms (bucket ≤ %g ms)", p.Skylb.P99, p.Skylb.P99Upper), p.Skylb.P99Upper <= 20, p.Skylb.N > 0)
	}
	if c := r.ColdStart; c != nil {
		add("cold start, caches synced to last record", "< 2 s", fmt.Sprintf("%.2f s", c.LastRecordAfterSync), c.LastRecordAfterSync < 2, c.LastRecordSeconds > 0)
		add("cold start, process start to last record", "< 5 s", fmt.Sprintf("%.2f s", c.LastRecordSeconds), c.LastRecordSeconds < 5, c.LastRecordSeconds > 0)
		add("skylb peak RSS", "< 75 MiB", fmt.Sprintf("%.1f MiB", c.PeakRSSMiB), c.PeakRSSMiB < 75, c.PeakRSSMiB > 0)
	}
	if s := r.Restart; s != nil {
		invariant("restart over a converged state, keys written", "0", fmt.Sprintf("%.0f", s.KeysWritten), s.KeysWritten == 0 && s.RevisionDelta == 0, s.ReadySeconds > 0)
		add("restart, time to ready", "< 3 s", fmt.Sprintf("%.2f s", s.ReadySeconds), s.ReadySeconds < 3, s.ReadySeconds > 0)
	}
	if v := r.SecondView; v != nil && v.Restart != nil {
		s := v.Restart
		invariant("restart with a second view over both trees, keys written", "0", fmt.Sprintf("%.0f", s.KeysWritten), s.KeysWritten == 0 && s.RevisionDelta == 0, s.ReadySeconds > 0)
	}
	if o := r.OneChange; o != nil {
		invariant("one change at scale, keys written", "the name's records only", fmt.Sprintf("≤ %d per change, %d outside the name", o.KeysPerChange, o.Outside), o.Outside == 0 && o.KeysPerChange <= 2, o.Changes > 0)
		if p := r.Propagation; p != nil {
			add("one change at scale, latency p99", fmt.Sprintf("within the small cluster's (< 100 ms)"), fmt.Sprintf("%.1f ms", o.DNS.P99), o.DNS.P99 < 100, o.DNS.N > 0)
		}
	}
	if i := r.Idle; i != nil {
		invariant("idle, range reads of the prefix", "0", fmt.Sprintf("%.0f", i.GRPC["Range"]), i.GRPC["Range"] == 0, i.Seconds > 0)
	}
	if x := r.Resync; x != nil {
		invariant("full reconciliation over a converged state, keys written", "0", fmt.Sprintf("%.0f", x.KeysWritten), x.KeysWritten == 0, x.Passes > 0)
	}
	if sv := r.Serving; sv != nil {
		wrong, answered := sv.wrongAnswers()
		invariant("serving, answers with another response code than the query set's", "0", fmt.Sprintf("%d of %d", wrong, answered), wrong == 0, answered > 0)
	}
}

// markdown renders the results as the table of test/bench/README.md: skylb's
// column, its targets, and, when it ran, external-dns's column on the same
// stack and objects with the ratio external-dns / skylb.
func (r *results) markdown() string {
	var b strings.Builder
	f := func(format string, args ...any) string { return fmt.Sprintf(format, args...) }
	e := r.ExternalDNS
	cols := 3
	if e != nil {
		cols = 5
	}
	row := func(cells ...string) {
		cells = cells[:min(len(cells), cols)]
		for len(cells) < cols {
			cells = append(cells, "")
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if e != nil {
		row("measurement", "skylb", "target", "external-dns "+e.Version+" (CoreDNS provider, `--events`)", "external-dns / skylb")
		row("---", "---", "---", "---", "---")
	} else {
		row("measurement", "skylb", "target")
		row("---", "---", "---")
	}
	q := func(x quantiles) string {
		return f("%.1f / %.1f / %.1f / %.1f ms", x.P50, x.P90, x.P99, x.Max)
	}
	if p := r.Propagation; p != nil {
		row(f("**Propagation**, API write → CoreDNS answer (cache off), %d changes: p50 / p90 / p99 / max", p.Changes), q(p.DNS), "p99 < 100 ms")
		for _, k := range []string{"service created", "endpoint added", "endpoint unready"} {
			if x, ok := p.ByKind[k]; ok {
				row(f("&nbsp;&nbsp;%s (%d)", k, x.N), q(x), "")
			}
		}
		row("&nbsp;&nbsp;API write → record in etcd (watch)", q(p.Etcd), "")
		if p.Deployment.N > 0 {
			row(f("&nbsp;&nbsp;Deployment scaled → CoreDNS answer, through kube-controller-manager and the simulated kubelet (%d)", p.Deployment.N), q(p.Deployment), "")
		}
		row("&nbsp;&nbsp;inside skylb, event → etcd commit (`skylb_propagation_seconds`): p50 / p90 / p99", f("%.1f / %.1f / %.1f ms (p99 bucket ≤ %g ms)", p.Skylb.P50, p.Skylb.P90, p.Skylb.P99, p.Skylb.P99Upper), "p99 < 20 ms")
	}
	if c := r.ColdStart; c != nil {
		row(f("**Cold start**, %d Services + %d Ingresses in %d namespaces: process start → caches synced", r.Scale.Services, r.Scale.Ingresses, r.Scale.Namespaces), f("%.2f s", c.CachesSyncedSeconds), "")
		row("&nbsp;&nbsp;caches synced → last record in etcd", f("%.2f s", c.LastRecordAfterSync), "< 2 s")
		if e != nil {
			row(f("&nbsp;&nbsp;process start → last record in etcd (external-dns: the %d Services' A records; `--source=service`)", e.Records), f("%.2f s", c.LastRecordSeconds), "< 5 s", f("%.2f s", e.LastRecordSeconds), ratio(e.LastRecordSeconds, c.LastRecordSeconds))
			row("&nbsp;&nbsp;peak RSS (of which the mapped binary) / CPU", f("%.1f MiB (%.1f MiB) / %.2f s", c.PeakRSSMiB, c.PeakFileMiB, c.CPUSeconds), "< 75 MiB", f("%.1f MiB (%.1f MiB) / %.2f s", e.PeakRSSMiB, e.PeakFileMiB, e.CPUSeconds), ratio(e.PeakRSSMiB, c.PeakRSSMiB)+" (RSS)")
			row("&nbsp;&nbsp;etcd transactions / keys written", f("%.0f / %.0f", c.Txns, c.KeysWritten), "", f("%d keys, one request each", e.KeysWritten), ratio(float64(e.KeysWritten), c.KeysWritten)+" (keys)")
		} else {
			row("&nbsp;&nbsp;process start → last record in etcd", f("%.2f s", c.LastRecordSeconds), "< 5 s")
			row("&nbsp;&nbsp;skylb peak RSS (of which the mapped binary) / CPU", f("%.1f MiB (%.1f MiB) / %.2f s", c.PeakRSSMiB, c.PeakFileMiB, c.CPUSeconds), "< 75 MiB")
			row("&nbsp;&nbsp;etcd transactions / keys written", f("%.0f / %.0f", c.Txns, c.KeysWritten), "")
		}
		if g := c.Memory; g != nil {
			row("&nbsp;&nbsp;skylb's memory once every record is written: RSS (mapped binary); Go heap in use (next collection at); freed heap not yet returned; stacks; runtime structures",
				f("%.1f MiB (%.1f MiB); %.1f MiB (%.1f MiB); %.1f MiB; %.1f MiB; %.1f MiB", c.RSSMiB, c.RSSFileMiB, g.HeapInuse, g.NextGC, g.HeapFree, g.Stacks, g.Runtime), "")
		}
	}
	if v, c := r.SecondView, r.ColdStart; v != nil && c != nil {
		v.markdown(c, row)
	}
	if s := r.Restart; s != nil {
		row("**Restart** over the converged state: process start → ready", f("%.2f s", s.ReadySeconds), "< 3 s")
		row("&nbsp;&nbsp;keys written (etcd revision change)", f("%.0f (%d)", s.KeysWritten, s.RevisionDelta), "0")
	}
	if s := r.Status; s != nil {
		row(f("**Status at install**: %d Services skylb implements, created while it was stopped: last status written, after process start (after caches synced)", s.Services),
			f("%.2f s (%.2f s, %.0f Services/s)", s.AfterStartSeconds, s.AfterSyncSeconds, s.PerSecond), "")
		if s.RSSAfterMiB > 0 {
			row(f("&nbsp;&nbsp;skylb's memory once those %d Services are deleted again and their records removed: RSS (Go heap in use); that process's peak RSS", s.Services),
				f("%.1f MiB (%.1f MiB); %.1f MiB", s.RSSAfterMiB, s.HeapInuseAfterMiB, s.PeakRSSMiB), "")
		}
	}
	if o := r.OneChange; o != nil {
		row(f("**One change at scale** (%d changes of one Service among %d): keys written per change", o.Changes, r.Scale.Services), f("%d (%d outside the name)", o.KeysPerChange, o.Outside), "that name's only")
		row("&nbsp;&nbsp;API write → CoreDNS answer: p50 / p90 / p99 / max", q(o.DNS), "within the small cluster's")
		row("&nbsp;&nbsp;API write → record in etcd (watch)", q(o.Etcd), "")
		row("&nbsp;&nbsp;inside skylb: p50 / p99; skylb CPU per change", f("%.1f / %.1f ms; %.1f ms", o.Skylb.P50, o.Skylb.P99, o.CPUPerEvent), "")
		if x := o.StatusChange; x.N > 0 {
			label := f("&nbsp;&nbsp;a Service's status address changed → CoreDNS answer (%d changes): p50 / p90 / p99 / max", x.N)
			if e != nil {
				row(label, q(x), "", q(e.StatusChange), ratio(e.StatusChange.P50, x.P50)+" (p50), "+ratio(e.StatusChange.P99, x.P99)+" (p99)")
			} else {
				row(label, q(x), "")
			}
		}
	}
	if i := r.Idle; i != nil {
		label := f("**Idle** %.0f s: etcd Range / Txn / Put requests", i.Seconds)
		counts := func(i *idleResult) string {
			return f("%.0f / %.0f / %.0f", i.GRPC["Range"], i.GRPC["Txn"], i.GRPC["Put"])
		}
		if e != nil && e.Idle != nil {
			row(label, counts(i), "0 range reads", counts(e.Idle), ratio(e.Idle.GRPC["Range"], i.GRPC["Range"])+" (range reads)")
		} else {
			row(label, counts(i), "0 range reads")
		}
		other := func(i *idleResult) string {
			var out []string
			for _, m := range sortedKeys(i.GRPC) {
				if m != "Range" && m != "Txn" && m != "Put" && i.GRPC[m] > 0 {
					out = append(out, f("%s %.0f", m, i.GRPC[m]))
				}
			}
			if len(out) == 0 {
				out = []string{"none"}
			}
			return f("%s; %.2f s", strings.Join(out, ", "), i.CPUSeconds)
		}
		if e != nil && e.Idle != nil {
			row("&nbsp;&nbsp;other etcd requests; CPU of the controller", other(i), "", other(e.Idle), ratio(e.Idle.CPUSeconds, i.CPUSeconds)+" (CPU)")
		} else {
			row("&nbsp;&nbsp;other etcd requests; skylb CPU", other(i), "")
		}
	}
	if x := r.Resync; x != nil {
		row(f("**Full reconciliation** of the large cluster (`--resync-interval=%.0fs`, %.0f s): passes; CPU per pass; keys written", x.IntervalSeconds, x.WindowSeconds),
			f("%d; %.2f s; %.0f", x.Passes, x.CPUPerPassSeconds, x.KeysWritten), "0 keys")
		row("&nbsp;&nbsp;skylb's RSS once ready → after the passes (Go heap in use); the process's peak RSS",
			f("%.1f → %.1f MiB (%.1f MiB); %.1f MiB", x.RSSReadyMiB, x.RSSMiB, x.HeapInuseMiB, x.PeakRSSMiB), "")
	}
	if sv := r.Serving; sv != nil {
		sv.markdown(&b)
	}
	if len(r.Micro) > 0 {
		b.WriteString("\n| micro-benchmark | ns/op | B/op | allocs/op |\n|---|---:|---:|---:|\n")
		for _, m := range r.Micro {
			fmt.Fprintf(&b, "| %s %s | %.0f | %.0f | %.0f |\n", m.Package, m.Name, m.NsPerOp, m.BPerOp, m.AllocsOp)
		}
	}
	if len(r.Targets) > 0 {
		if r.Mode == "quick" {
			b.WriteString("\nTargets (set for 10,000 Services and 200 changes; a quick run only smoke-tests them):\n")
		} else {
			b.WriteString("\nTargets:\n")
		}
		for _, t := range r.Targets {
			mark := "met"
			switch {
			case !t.Known:
				mark = "not measured"
			case !t.Met:
				mark = "MISSED"
			}
			fmt.Fprintf(&b, "- %s: %s (want %s): %s\n", t.What, t.Got, t.Want, mark)
		}
	}
	writeMachine(&b, r.Machine, r.Versions, fmt.Sprintf("mode %s, %.0f s", r.Mode, r.Seconds))
	if len(r.Load) > 0 {
		var ls []string
		for _, l := range r.Load {
			ls = append(ls, fmt.Sprintf("%s %.1f", l.Phase, l.Load))
		}
		fmt.Fprintf(&b, "Load average (1 minute) at the end of each phase: %s.\n", strings.Join(ls, ", "))
	}
	return b.String()
}

// writeMachine writes the lines naming the machine, the run and the
// versions that ran.
func writeMachine(b *strings.Builder, m machine, versions map[string]string, run string) {
	fmt.Fprintf(b, "\nMachine: %d CPUs (%s), %s, Linux %s, %s; %s.\n", m.CPUs, m.Model, m.Memory, m.Kernel, m.Go, run)
	if len(versions) > 0 {
		var vs []string
		for _, k := range sortedKeys(versions) {
			vs = append(vs, k+" "+versions[k])
		}
		fmt.Fprintf(b, "Versions: %s.\n", strings.Join(vs, ", "))
	}
}

// ratio renders a / b, the times external-dns's figure is skylb's.
func ratio(a, b float64) string {
	switch {
	case b == 0 && a == 0:
		return "="
	case b == 0:
		return "∞ (skylb 0)"
	}
	return fmt.Sprintf("×%.3g", a/b)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
