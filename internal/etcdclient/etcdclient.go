// Package etcdclient builds the etcd client skylb writes through: mutual TLS from
// certificate files that are read again when they change on disk.
package etcdclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Config holds what is needed to reach etcd.
type Config struct {
	Endpoints  []string
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string
	// MaxBackoff is the longest wait between two attempts to connect to a
	// member that refused; 0 is DefaultMaxBackoff.
	MaxBackoff time.Duration
	Log        logrus.FieldLogger
}

// DefaultMaxBackoff is the longest wait between two attempts to connect:
// gRPC's own grows to two minutes, and etcd coming back should be noticed
// within seconds.
const DefaultMaxBackoff = 2 * time.Second

// ErrNoTLS is returned when an https endpoint is given without client certificates.
var ErrNoTLS = errors.New("https endpoints need --etcd-ca-file, --etcd-cert-file and --etcd-key-file")

// TLS returns the client TLS configuration, or nil when every endpoint is plain
// http. The client certificate is loaded on each handshake from files that are
// re-read when they change, so a rotated certificate is used without a restart.
func (c Config) TLS() (*tls.Config, error) {
	secure := false
	for _, ep := range c.Endpoints {
		switch {
		case strings.HasPrefix(ep, "https://"):
			secure = true
		case strings.HasPrefix(ep, "http://"):
		default:
			return nil, fmt.Errorf("endpoint %q: want an https:// or http:// URL", ep)
		}
	}
	if !secure {
		return nil, nil
	}
	if c.CAFile == "" || c.CertFile == "" || c.KeyFile == "" {
		return nil, ErrNoTLS
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", c.CAFile)
	}
	kp := &keyPair{certFile: c.CertFile, keyFile: c.KeyFile}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		RootCAs:              pool,
		ServerName:           c.ServerName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() },
	}, nil
}

// New connects to etcd. It does not wait for the connection: an etcd that is
// down, or whose name does not resolve yet, shows up as failing requests,
// which callers retry, and the client connects once etcd answers.
func New(c Config) (*clientv3.Client, error) {
	maxBackoff := c.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	tlsConfig, err := c.TLS()
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil && c.Log != nil {
		c.Log.WithField("endpoints", c.Endpoints).Warn("etcd endpoints are plain http: records travel unencrypted and unauthenticated; use this only for local tests")
	}
	return clientv3.New(clientv3.Config{
		Endpoints: c.Endpoints,
		TLS:       tlsConfig,
		// No DialTimeout: with one, clientv3.New blocks until the first
		// connection is up and fails after it, which would make skylb exit
		// whenever it starts before etcd (a cluster power-on, a restore).
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		AutoSyncInterval:     time.Minute,
		// RejectOldCluster asks every endpoint for Maintenance.Status, which
		// etcd 3.5.28 and later and some 3.6 releases (3.6.8 among them)
		// answer only for the root role: with skylb's limited user the client
		// could not be created. skylb needs nothing newer than etcd 3.5.
		RejectOldCluster: false,
		Logger:           zap.NewNop(),
		// gRPC's default reconnect backoff grows to two minutes (see
		// DefaultMaxBackoff).
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: 2 * time.Second,
		})},
	})
}

// keyPair caches a certificate and key, loading them again when either file's
// modification time or size changes (a Secret update swaps a symlink, which
// changes both).
type keyPair struct {
	certFile, keyFile string

	mu    sync.Mutex
	stamp string
	cert  *tls.Certificate
}

func (k *keyPair) get() (*tls.Certificate, error) {
	stamp, err := FileStamp(k.certFile, k.keyFile)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		if k.cert != nil {
			// The files are being swapped: keep the pair in use.
			return k.cert, nil
		}
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	if k.cert != nil && stamp == k.stamp {
		return k.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			// A half-written rotation: keep using the previous pair until both files agree.
			return k.cert, nil
		}
		return nil, fmt.Errorf("load client certificate: %w", err)
	}
	k.cert, k.stamp = &cert, stamp
	return k.cert, nil
}

// FileStamp returns what tells a change of the files: each one's
// modification time and size (a Secret update swaps a symlink to new files,
// which changes both). Empty names are skipped.
func FileStamp(files ...string) (string, error) {
	var b strings.Builder
	for _, f := range files {
		if f == "" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:%d:%d;", f, st.ModTime().UnixNano(), st.Size())
	}
	return b.String(), nil
}
