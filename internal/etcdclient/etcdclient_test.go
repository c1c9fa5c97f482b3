package etcdclient_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/skylb/skylb/internal/etcdclient"
	"github.com/skylb/skylb/internal/etcdtest"
)

func serial(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.String()
}

func TestClientCertificateIsReloadedWhenRotated(t *testing.T) {
	srv := etcdtest.Start(t)
	tlsConfig, err := srv.Client.TLS()
	if err != nil {
		t.Fatal(err)
	}
	first, err := tlsConfig.GetClientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Rotate the way a Secret update looks to a reader: new files renamed into place.
	time.Sleep(10 * time.Millisecond)
	srv.Issue(t, "skylb", "skylb")
	second, err := tlsConfig.GetClientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if serial(t, first) == serial(t, second) {
		t.Errorf("GetClientCertificate returned the old certificate (serial %s) after rotation", serial(t, first))
	}

	// A half-written rotation keeps the pair in use rather than failing.
	if err := os.WriteFile(srv.Client.KeyFile, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	third, err := tlsConfig.GetClientCertificate(nil)
	if err != nil || serial(t, third) != serial(t, second) {
		t.Errorf("GetClientCertificate during a half-written rotation = %v, %v; want the previous pair", third, err)
	}

	// The rotated certificate is used for real.
	srv.Issue(t, "skylb", "skylb")
	c, err := etcdclient.New(srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/skydns/rotation", "ok"); err != nil {
		t.Errorf("put with the rotated certificate: %v", err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  etcdclient.Config
		want error
	}{
		{"https without certificates", etcdclient.Config{Endpoints: []string{"https://127.0.0.1:2379"}}, etcdclient.ErrNoTLS},
		{"not a URL", etcdclient.Config{Endpoints: []string{"127.0.0.1:2379"}}, nil},
		{"missing CA file", etcdclient.Config{Endpoints: []string{"https://127.0.0.1:2379"}, CAFile: "/nonexistent", CertFile: "x", KeyFile: "y"}, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.TLS()
			if err == nil {
				t.Fatalf("TLS() succeeded, want an error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("TLS() = %v, want %v", err, tt.want)
			}
		})
	}
	cfg, err := etcdclient.Config{Endpoints: []string{"http://127.0.0.1:2379"}}.TLS()
	if cfg != nil || err != nil {
		t.Errorf("TLS() for plain http = %v, %v; want nil, nil", cfg, err)
	}
}

func TestNewDoesNotWaitForEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	srv.Stop()
	unresolved := srv.Client
	unresolved.Endpoints = []string{"https://etcd.skylb.invalid:2379"}
	tests := []struct {
		name string
		cfg  etcdclient.Config
	}{
		{"etcd down", srv.Client},
		{"name not resolving", unresolved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			c, err := etcdclient.New(tt.cfg)
			if err != nil {
				t.Fatalf("New() = %v, want a client that connects later", err)
			}
			defer c.Close()
			if took := time.Since(start); took > time.Second {
				t.Errorf("New() took %v, want it not to wait for etcd", took)
			}
		})
	}

	// The client made while etcd was down connects once it is up.
	c, err := etcdclient.New(srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Restart()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Put(ctx, "/skydns/late", "ok")
		cancel()
		if err == nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("put 10 s after etcd started: %v", err)
		}
	}
	t.Logf("first put %v after etcd started", time.Since(start).Round(time.Millisecond))
}
