package app

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/skylb/skylb/internal/metrics"
)

// fileRecheck is how often WaitForFiles looks for the missing files again.
const fileRecheck = time.Second

// WaitForFiles returns once check no longer fails for a missing file: in a
// pod, a Secret may be mounted after the container starts, or be created
// after skylb. Meanwhile it serves /healthz, and /readyz answers 503 with
// check's error, so that the kubelet does not restart skylb and kubectl shows
// why it is not ready; fix tells, in one warning, what to do. It returns
// check's error if that is not a missing file, and ctx's error if ctx ends.
func WaitForFiles(ctx context.Context, cfg Config, check func() error, fix string) error {
	err := check()
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	cfg.Log.WithError(err).Warn("waiting for a file: " + fix)
	var reason atomic.Value
	reason.Store(err.Error())
	if cfg.HTTPAddress != "" {
		srv, serr := serveHTTP(cfg.HTTPAddress, metrics.New(cfg.Version), func() error {
			return errors.New("waiting for a file: " + reason.Load().(string))
		})
		if serr != nil {
			return serr
		}
		defer srv.Close()
	}
	start := time.Now()
	for errors.Is(err, fs.ErrNotExist) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fileRecheck):
		}
		if err = check(); err != nil {
			reason.Store(err.Error())
		}
	}
	if err == nil {
		cfg.Log.WithField("waited", time.Since(start).Round(time.Second)).Info("the missing file is there")
	}
	return err
}
