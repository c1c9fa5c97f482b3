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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	// Watch are patterns (filepath.Glob) of files that CoreDNS's Corefile
	// imports, such as the views' blocks: CoreDNS reloads when what they
	// match, or what it holds, changes.
	Watch []string
	// Interval is the time between two reads of Key; each read may take
	// that long.
	Interval time.Duration
	// MinOutage is the shortest outage after which CoreDNS is reloaded;
	// after a shorter one its client reconnects within about MinOutage.
	MinOutage time.Duration
	Log       logrus.FieldLogger
}

// downInterval is the most time between two reads of Key while etcd does not
// answer. Until CoreDNS reloads, a query of a name it has no answer for waits
// on its old client, up to the etcd plugin's 5 s, and the reload waits for
// that query: the sooner etcd's return is seen, the fewer such queries.
const downInterval = 100 * time.Millisecond

// Run reads Key every Interval (every downInterval at most while etcd does
// not answer) and signals CoreDNS when a reload is owed, until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.PIDFile == "" {
		return errors.New("no CoreDNS pid file")
	}
	// Its client tries to connect as often as it reads while etcd is away,
	// not after a backoff grown to seconds.
	cfg.Etcd.MaxBackoff = downInterval
	r := &runner{cfg: cfg, w: watch{minOutage: cfg.MinOutage}}
	defer r.close()
	for {
		start := time.Now()
		r.step(ctx, start)
		wait := cfg.Interval
		if !r.w.down.IsZero() {
			wait = min(wait, downInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(wait))):
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
	if len(r.cfg.Watch) > 0 {
		if s, err := contentStamp(r.cfg.Watch); err != nil {
			r.logFailure(err)
		} else {
			r.w.watched(s)
		}
	}
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
	// A read waits for a connection, up to Interval: it returns as soon as
	// etcd is back. Not shorter: a linearizable read on a busy etcd can take
	// a good part of a second, and a reader that always gave up first would
	// see etcd down for good.
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
	files string    // the stamp of the watched files (Config.Watch) last seen
	owed  []string  // why a reload is owed, until etcd answers and it is done
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
	reason := strings.Join(w.owed, "; ")
	w.owed = nil
	return reason
}

// watched notes the stamp of the watched files: a change owes a reload.
func (w *watch) watched(stamp string) {
	if w.files != "" && stamp != w.files {
		w.owe("the files CoreDNS imports changed")
	}
	w.files = stamp
}

// contentStamp returns a digest of the names and contents of the files the
// patterns match. A ConfigMap's files are replaced as a whole, by a link
// swapped to a new directory: what they hold is what counts, not their times.
func contentStamp(patterns []string) (string, error) {
	h := sha256.New()
	for _, p := range patterns {
		names, err := filepath.Glob(p)
		if err != nil {
			return "", fmt.Errorf("--watch %s: %w", p, err)
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
			h.Write(b)
		}
	}
	// Never empty, so that the first stamp is told from none.
	return hex.EncodeToString(h.Sum(nil)), nil
}

// owe notes a reload owed for reason. One reload serves every reason owed
// until it is done, and its log names them all: the kubelet often updates a
// pod's Secret and ConfigMap files in the same sync.
func (w *watch) owe(reason string) {
	if !slices.Contains(w.owed, reason) {
		w.owed = append(w.owed, reason)
	}
}
