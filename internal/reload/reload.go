// Package reload runs beside CoreDNS and tells it to reload (SIGUSR1) when
// its etcd client would otherwise be slow to recover: when etcd answers again
// after an outage, and when the client certificate or CA files change.
//
// CoreDNS's etcd plugin builds its client once, with gRPC's default reconnect
// backoff (1 s growing 1.6 times up to 2 minutes), and reads its certificate
// files once. After every member of etcd was down for a minute the plugin
// reconnects up to tens of seconds after etcd is back; after ten minutes, up to
// two minutes. A reload builds a new client, which connects at once, and reads
// the files again. CoreDNS stays the stock release: the signal is its own way
// of reloading its Corefile.
package reload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdclient"
)

// Config is what the reloader needs.
type Config struct {
	// Etcd is how CoreDNS reaches etcd: its endpoints and its client files.
	Etcd etcdclient.Config
	// Key is the key read to see whether etcd answers, as CoreDNS reads:
	// linearizable, within the prefix CoreDNS's user may read.
	Key string
	// PIDFile is CoreDNS's -pidfile.
	PIDFile string
	// Interval is the time between two reads of Key; each read may take
	// that long.
	Interval time.Duration
	// MinOutage is the shortest outage after which CoreDNS is reloaded;
	// after a shorter one its client reconnects within about MinOutage.
	MinOutage time.Duration
	Log       logrus.FieldLogger
}

// Run reads Key every Interval and signals CoreDNS when a reload is owed,
// until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.PIDFile == "" {
		return errors.New("no CoreDNS pid file")
	}
	r := &runner{cfg: cfg, w: watch{minOutage: cfg.MinOutage}}
	defer r.close()
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		r.step(ctx, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// runner is the reloader's I/O: the files, the etcd client and the signal.
type runner struct {
	cfg    Config
	w      watch
	client *clientv3.Client
	stamp  string // of the files client was built from
	failed string // the last failure logged, so that it is logged once
}

// step reads the files and Key once, and signals CoreDNS if the watch says so.
func (r *runner) step(ctx context.Context, now time.Time) {
	stamp, err := etcdclient.FileStamp(r.cfg.Etcd.CAFile, r.cfg.Etcd.CertFile, r.cfg.Etcd.KeyFile)
	if err != nil {
		// A Secret update swaps the files: try again next time.
		r.logFailure(err)
		return
	}
	if r.client == nil || stamp != r.stamp {
		r.close()
		c, err := etcdclient.New(r.cfg.Etcd)
		if err != nil {
			r.logFailure(fmt.Errorf("etcd client: %w", err))
			return
		}
		r.client, r.stamp = c, stamp
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Interval)
	_, err = r.client.Get(rctx, r.cfg.Key)
	cancel()
	if ctx.Err() != nil {
		return
	}
	// The watch knows when the outage began: it is logged once, at its start.
	wasDown := !r.w.down.IsZero()
	if err != nil && !wasDown {
		r.cfg.Log.WithError(err).Warn("etcd does not answer")
	}
	reason := r.w.observe(now, err == nil, stamp)
	if reason == "" {
		if wasDown && err == nil {
			r.cfg.Log.Info("etcd answers again, after a shorter outage than --min-outage: CoreDNS's client reconnects by itself")
		}
		return
	}
	pid, err := tell(r.cfg.PIDFile)
	if err != nil {
		r.w.owe(reason)
		r.logFailure(fmt.Errorf("%s, but CoreDNS could not be told to reload: %w", reason, err))
		return
	}
	r.failed = ""
	r.cfg.Log.WithField("pid", pid).Infof("%s: CoreDNS reloads", reason)
}

// logFailure logs err unless it is the one logged last.
func (r *runner) logFailure(err error) {
	if msg := err.Error(); msg != r.failed {
		r.failed = msg
		r.cfg.Log.Warn(msg)
	}
}

func (r *runner) close() {
	if r.client != nil {
		r.client.Close()
		r.client = nil
	}
}

// tell sends SIGUSR1 to the process whose pid the file holds.
func tell(pidFile string) (int, error) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("pid file %s holds %q, not a pid", pidFile, b)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return pid, fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return pid, nil
}

// watch decides when CoreDNS must reload, from what each read of etcd gave
// and the files' stamp at that time. It holds no lock: one goroutine feeds it.
type watch struct {
	minOutage time.Duration

	down  time.Time // when etcd stopped answering; zero while it answers
	stamp string    // the files' stamp last seen
	owed  string    // why a reload is owed, until etcd answers and it is done
}

// observe notes one read of etcd at now (up: it answered) with the files'
// stamp, and returns why CoreDNS must reload now, or "". A reload is only
// asked while etcd answers: a reload drops CoreDNS's cache, which is what it
// answers from while etcd is away.
func (w *watch) observe(now time.Time, up bool, stamp string) string {
	if w.stamp != "" && stamp != w.stamp {
		w.owe("the etcd client's certificate files changed")
	}
	w.stamp = stamp
	if !up {
		if w.down.IsZero() {
			w.down = now
		}
		return ""
	}
	if !w.down.IsZero() {
		if out := now.Sub(w.down); out >= w.minOutage {
			w.owe(fmt.Sprintf("etcd answers again after %s down", out.Round(time.Second)))
		}
		w.down = time.Time{}
	}
	reason := w.owed
	w.owed = ""
	return reason
}

// owe notes a reload owed for reason, keeping the first reason.
func (w *watch) owe(reason string) {
	if w.owed == "" {
		w.owed = reason
	}
}
