package cli

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/reload"
)

// reloaderFlags are the flags of skylb run that skylb coredns-reloader reads:
// how CoreDNS reaches etcd, and the log's.
var reloaderFlags = []string{"etcd-endpoints", "etcd-ca-file", "etcd-cert-file", "etcd-key-file", "etcd-server-name",
	"etcd-prefix", "log-level", "log-format"}

// reloaderOwnFlags defines skylb coredns-reloader's own flags.
func reloaderOwnFlags(fs *pflag.FlagSet, o *options) {
	fs.StringVar(&o.reload.PIDFile, "pid-file", "", "CoreDNS's pid file (its -pidfile), in a volume both containers mount (required)")
	fs.DurationVar(&o.reload.Interval, "interval", time.Second, "how often etcd is read, as CoreDNS reads it; each read may take that long")
	fs.StringArrayVar(&o.reload.Watch, "watch", nil, "a pattern of files CoreDNS's Corefile imports (e.g. /etc/coredns/conf/*.view): CoreDNS reloads when what they hold changes, once etcd answers; repeatable")
	fs.DurationVar(&o.reload.MinOutage, "min-outage", 3*time.Second, "the shortest time etcd did not answer after which CoreDNS is reloaded once it answers again")
}

// corednsReloader runs "skylb coredns-reloader" until SIGINT or SIGTERM.
func corednsReloader(o *options, _, stderr io.Writer) int {
	cfg := o.reload
	switch {
	case cfg.PIDFile == "":
		return usageError(stderr, "coredns-reloader", fmt.Errorf("--pid-file: required, CoreDNS's -pidfile"))
	case cfg.Interval <= 0:
		return usageError(stderr, "coredns-reloader", withEnv(fmt.Errorf("--interval: must be positive"), o.fromEnv))
	case cfg.MinOutage < 0:
		return usageError(stderr, "coredns-reloader", withEnv(fmt.Errorf("--min-outage: must not be negative"), o.fromEnv))
	}
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	cfg.Etcd, cfg.Log = o.etcd, log.WithField("component", "coredns-reloader")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// As skylb run, it waits for a missing file: the Secret may be mounted
	// after the container starts.
	if err := app.WaitForFiles(ctx, app.Config{Log: log}, o.etcdFiles, etcdFilesFix); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	// A key CoreDNS's user may read, and which needs no records.
	cfg.Key = strings.TrimRight(o.prefix, "/") + "/"
	cfg.Log.WithField("pid-file", cfg.PIDFile).Infof("reading %s every %s", cfg.Key, cfg.Interval)
	if err := reload.Run(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "skylb:", err)
		return 1
	}
	return 0
}
