package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The view of the second-view phase: every Service's ClusterIP, so that the
// view holds as many records as the default one, none of them shared.
const (
	benchView       = "internal"
	benchViewSource = "cluster-ip"
	benchViewPaths  = "/skydns-" + benchView + "/org/example/bench-"
)

// viewCost is a cold start of skylb with a second view: the etcd emptied of
// the records, skylb started with --view, which writes both trees.
type viewCost struct {
	View string `json:"view"` // the --view given
	Keys int    `json:"keys"` // records expected in each tree
	// From skylb's process start to the last record of both trees.
	LastRecordSeconds float64 `json:"last_record_seconds"`
	ReadySeconds      float64 `json:"ready_seconds"`
	PeakRSSMiB        float64 `json:"peak_rss_mib"`
	PeakFileMiB       float64 `json:"peak_rss_file_mib"`
	RSSMiB            float64 `json:"rss_after_mib"`
	HeapInuseMiB      float64 `json:"heap_inuse_after_mib"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	KeysWritten       float64 `json:"etcd_keys_written"`
	// Restart is skylb restarted with the view over both trees.
	Restart *restartResult `json:"restart,omitempty"`
}

// secondView measures what a second view costs at the large cluster's
// scale: skylb is stopped, every record is removed, and skylb started with
// --view=internal=cluster-ip writes both trees from its cold start. Then the
// view's tree is removed and skylb runs as before, over its own tree.
func (b *bench) secondView(ctx context.Context, res *results) error {
	c := res.ColdStart
	if c == nil {
		return fmt.Errorf("no cold start to compare with")
	}
	if viewGiven() {
		// The cold start wrote every view already, and skylb would refuse
		// the view given twice.
		logf("second view: skipped, skylb runs with --view already (--skylb-flag)")
		return nil
	}
	v := &viewCost{View: benchView + "=" + benchViewSource, Keys: c.Keys}
	if err := b.skylb.Stop(); err != nil {
		return err
	}
	if _, err := b.etcd.Delete(ctx, "/skydns/", clientv3.WithPrefix()); err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.startSkylb(ctx, "--view="+v.View); err != nil {
		return err
	}
	stopRSS := rssPeaks(b.skylb.PID)
	deadline := t0.Add(2*time.Minute + time.Duration(2*c.Keys)*time.Millisecond)
	for {
		def, err := b.countKeys(ctx, benchPaths)
		if err != nil {
			return err
		}
		view, err := b.countKeys(ctx, benchViewPaths)
		if err != nil {
			return err
		}
		if def >= int64(c.Keys) && view >= int64(c.Keys) {
			v.LastRecordSeconds = time.Since(t0).Seconds()
			break
		}
		if time.Now().After(deadline) || !b.skylb.Running() {
			return fmt.Errorf("with a second view, %d and %d of %d records in the trees after %v (skylb running: %v)",
				def, view, c.Keys, time.Since(t0).Round(time.Millisecond), b.skylb.Running())
		}
		time.Sleep(20 * time.Millisecond)
	}
	readyAt, err := b.waitSkylbReady(ctx, time.Minute)
	if err != nil {
		return err
	}
	v.ReadySeconds = readyAt.Sub(t0).Seconds()
	time.Sleep(time.Second)
	_, file := stopRSS()
	v.PeakFileMiB = mib(file)
	u, m, err := b.skylbUsage(ctx)
	if err != nil {
		return err
	}
	v.PeakRSSMiB, v.RSSMiB, v.CPUSeconds = mib(u.PeakRSS), mib(u.RSS), u.CPU
	v.HeapInuseMiB = readGoMemory(m).HeapInuse
	v.KeysWritten = m.sum("skylb_etcd_keys_written_total", map[string]string{"operation": "put"})
	res.SecondView = v
	logf("second view: last record of both trees %.2fs (one tree: %.2fs), peak RSS %.1f MiB (one tree: %.1f MiB), CPU %.2fs, %.0f keys",
		v.LastRecordSeconds, c.LastRecordSeconds, v.PeakRSSMiB, c.PeakRSSMiB, v.CPUSeconds, v.KeysWritten)

	// Restarted with the view over both trees, it writes nothing in either.
	if v.Restart, err = b.restartOver(ctx, "--view="+v.View); err != nil {
		return err
	}
	logf("second view: restart ready in %.2fs, %.0f keys written, etcd revision %+d", v.Restart.ReadySeconds, v.Restart.KeysWritten, v.Restart.RevisionDelta)

	if err := b.skylb.Stop(); err != nil {
		return err
	}
	if _, err := b.etcd.Delete(ctx, "/skydns-"+benchView+"/", clientv3.WithPrefix()); err != nil {
		return err
	}
	if err := b.startSkylb(ctx); err != nil {
		return err
	}
	_, err = b.waitSkylbReady(ctx, time.Minute)
	return err
}

// viewGiven reports whether skylbArgs give skylb a view (--view).
func viewGiven() bool {
	return slices.ContainsFunc(skylbArgs, func(a string) bool {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return name == "view"
	})
}

// markdown writes the rows of the second view.
func (v *viewCost) markdown(c *coldStart, row func(...string)) {
	f := fmt.Sprintf
	row(f("**A second view** (`--view=%s`), cold start as above: process start → last record of both trees (one tree)", v.View),
		f("%.2f s (%.2f s)", v.LastRecordSeconds, c.LastRecordSeconds), "< 5 s")
	row("&nbsp;&nbsp;peak RSS (one tree) / CPU (one tree)", f("%.1f MiB (%.1f MiB) / %.2f s (%.2f s)", v.PeakRSSMiB, c.PeakRSSMiB, v.CPUSeconds, c.CPUSeconds), "< 75 MiB")
	row("&nbsp;&nbsp;RSS once written (one tree); Go heap in use (one tree); keys written", f("%.1f MiB (%.1f MiB); %.1f MiB (%.1f MiB); %.0f", v.RSSMiB, c.RSSMiB, v.HeapInuseMiB, c.HeapInuseMiB, v.KeysWritten), "")
	if r := v.Restart; r != nil {
		row("&nbsp;&nbsp;restart over both trees: keys written (etcd revision change)", f("%.0f (%d)", r.KeysWritten, r.RevisionDelta), "0")
	}
}
