package main

import (
	"context"
	"fmt"
	"math"
	"time"
)

// resyncInterval is the --resync-interval of the resync phase: short, so
// that a few full reconciliations fit in resyncWindow (in a -quick run, the
// quick ones).
const (
	resyncInterval      = 10 * time.Second
	resyncWindow        = 35 * time.Second
	quickResyncInterval = 3 * time.Second
	quickResyncWindow   = 8 * time.Second
)

// resyncResult is skylb's memory and CPU through full reconciliations of the
// large cluster, the pass --resync-interval forces every 5 minutes by
// default: what a process that has run for a while holds, where the cold
// start's figures are those of its first seconds.
type resyncResult struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	WindowSeconds   float64 `json:"window_seconds"`
	// Reconciles is the objects reconciled in the window, Passes that
	// divided by the objects of a pass.
	Reconciles float64 `json:"reconciles"`
	Passes     int     `json:"passes"`
	// CPUPerPassSeconds is the window's CPU time divided by Passes.
	CPUPerPassSeconds float64 `json:"cpu_per_pass_seconds"`
	// KeysWritten is what the passes wrote to etcd: nothing changed.
	KeysWritten float64 `json:"etcd_keys_written"`
	// RSSReadyMiB is the RSS a second after the process was ready, RSSMiB
	// and HeapInuseMiB at the end of the window, PeakRSSMiB the process's
	// peak.
	RSSReadyMiB  float64 `json:"rss_ready_mib"`
	RSSMiB       float64 `json:"rss_after_mib"`
	HeapInuseMiB float64 `json:"heap_inuse_after_mib"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
}

// resync restarts skylb with a short --resync-interval over the converged
// large cluster, measures it through a few full reconciliations, and
// restarts it as before.
func (b *bench) resync(ctx context.Context, res *results) error {
	interval, window := resyncInterval, resyncWindow
	if b.o.quick {
		interval, window = quickResyncInterval, quickResyncWindow
	}
	if err := b.restartSkylb(ctx, "--resync-interval="+interval.String()); err != nil {
		return err
	}
	time.Sleep(time.Second)
	u0, m0, err := b.skylbUsage(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	u1, m1, err := b.skylbUsage(ctx)
	if err != nil {
		return err
	}
	r := &resyncResult{
		IntervalSeconds: interval.Seconds(),
		WindowSeconds:   window.Seconds(),
		Reconciles:      m1.sum("skylb_reconcile_duration_seconds_count", nil) - m0.sum("skylb_reconcile_duration_seconds_count", nil),
		KeysWritten:     m1.sum("skylb_etcd_keys_written_total", nil) - m0.sum("skylb_etcd_keys_written_total", nil),
		RSSReadyMiB:     mib(u0.RSS),
		RSSMiB:          mib(u1.RSS),
		HeapInuseMiB:    readGoMemory(m1).HeapInuse,
		PeakRSSMiB:      mib(u1.PeakRSS),
	}
	if objects := res.ColdStart.Objects; objects > 0 {
		r.Passes = int(math.Round(r.Reconciles / float64(objects)))
	}
	if r.Passes == 0 {
		return fmt.Errorf("no full pass in %v with --resync-interval=%v (%.0f objects reconciled)", window, interval, r.Reconciles)
	}
	r.CPUPerPassSeconds = (u1.CPU - u0.CPU) / float64(r.Passes)
	res.Resync = r
	logf("resync: %d full passes in %.0fs (%.0f reconciles), %.2fs CPU each, %.0f keys written; RSS %.1f MiB once ready, %.1f MiB after (heap in use %.1f MiB), peak %.1f MiB",
		r.Passes, r.WindowSeconds, r.Reconciles, r.CPUPerPassSeconds, r.KeysWritten, r.RSSReadyMiB, r.RSSMiB, r.HeapInuseMiB, r.PeakRSSMiB)
	return b.restartSkylb(ctx)
}
