// Package app wires skylb together: the publisher writing to etcd and the
// controller feeding it from Kubernetes.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/source"
)

// Config is everything skylb needs besides its clients.
type Config struct {
	Source         source.Config
	Prefix         string
	Owner          string
	ResyncInterval time.Duration
	EtcdTimeout    time.Duration
	MaxDeleteRatio float64
	// HTTPAddress is where /healthz and /readyz are served; empty disables them.
	HTTPAddress string
	Log         logrus.FieldLogger
}

// Run publishes until ctx ends.
func Run(ctx context.Context, cfg Config, kube kubernetes.Interface, etcd *clientv3.Client) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "skylb"})

	pub := publish.New(etcd, publish.Config{
		Prefix:         cfg.Prefix,
		Owner:          cfg.Owner,
		Timeout:        cfg.EtcdTimeout,
		MaxDeleteRatio: cfg.MaxDeleteRatio,
		Log:            cfg.Log.WithField("component", "publisher"),
	})
	ctrl := controller.New(controller.Config{
		Source:         cfg.Source,
		ResyncInterval: cfg.ResyncInterval,
		Log:            cfg.Log.WithField("component", "controller"),
	}, kube, pub, recorder)

	if cfg.HTTPAddress != "" {
		srv, err := serveHTTP(cfg.HTTPAddress, func() error {
			if !ctrl.Ready() {
				return errors.New("informer caches not synced")
			}
			if !pub.Ready() {
				return errors.New("etcd view not loaded")
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pub.Run(ctx)
	}()
	err := ctrl.Run(ctx)
	wg.Wait()
	return err
}

// serveHTTP serves /healthz (the process answers) and /readyz (ready reports nil).
func serveHTTP(addr string, ready func() error) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http-address: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	return srv, nil
}
