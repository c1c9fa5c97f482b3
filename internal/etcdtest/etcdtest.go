// Package etcdtest starts a real etcd server in-process for tests, with mutual
// TLS and certificates made on the fly.
package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/skylb/skylb/internal/etcdclient"
)

// Server is a running etcd with the files a client needs to reach it.
type Server struct {
	Endpoint string
	Client   etcdclient.Config // mutual TLS client configuration as user "skylb"
	Dir      string

	t    testing.TB
	cfg  *embed.Config
	etcd *embed.Etcd
}

// Start runs etcd on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := newCA(t)
	writeCert(t, dir, "ca", ca, caKey)
	issue(t, dir, "server", ca, caKey, "etcd", x509.ExtKeyUsageServerAuth)
	issue(t, dir, "skylb", ca, caKey, "skylb", x509.ExtKeyUsageClientAuth)

	s := &Server{t: t, Dir: dir}
	s.cfg = embed.NewConfig()
	s.cfg.Name = "test"
	s.cfg.Dir = filepath.Join(dir, "data")
	s.cfg.Logger = "zap"
	s.cfg.LogLevel = "error"
	s.cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	s.cfg.ClientTLSInfo.CertFile = filepath.Join(dir, "server.crt")
	s.cfg.ClientTLSInfo.KeyFile = filepath.Join(dir, "server.key")
	s.cfg.ClientTLSInfo.TrustedCAFile = filepath.Join(dir, "ca.crt")
	s.cfg.ClientTLSInfo.ClientCertAuth = true
	// A free port may be taken by another process between the check and
	// etcd's listen: then etcd starts again on others.
	for attempt := 1; ; attempt++ {
		client := freeURL(t, "https")
		peer := freeURL(t, "http")
		s.cfg.ListenClientUrls = []url.URL{client}
		s.cfg.AdvertiseClientUrls = []url.URL{client}
		s.cfg.ListenPeerUrls = []url.URL{peer}
		s.cfg.AdvertisePeerUrls = []url.URL{peer}
		s.cfg.InitialCluster = s.cfg.InitialClusterFromName(s.cfg.Name)
		s.Endpoint = client.String()
		err := s.tryStart()
		if err == nil {
			break
		}
		// embed does not always wrap the listener's error.
		inUse := errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
		if !inUse || attempt == 5 {
			t.Fatalf("start etcd: %v", err)
		}
		os.RemoveAll(s.cfg.Dir)
	}
	s.Client = etcdclient.Config{
		Endpoints: []string{s.Endpoint},
		CAFile:    filepath.Join(dir, "ca.crt"),
		CertFile:  filepath.Join(dir, "skylb.crt"),
		KeyFile:   filepath.Join(dir, "skylb.key"),
	}
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatalf("start etcd: %v", err)
	}
}

func (s *Server) tryStart() error {
	e, err := embed.StartEtcd(s.cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return errors.New("etcd did not become ready within 30s")
	}
	s.etcd = e
	return nil
}

// Stop stops the server; its data stays for Restart.
func (s *Server) Stop() {
	if s.etcd != nil {
		s.etcd.Close()
		s.etcd = nil
	}
}

// Restart starts a stopped server again on the same address and data.
func (s *Server) Restart() { s.start() }

// NewClient returns a client of the server as user "skylb", closed when the test ends.
func (s *Server) NewClient(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := etcdclient.New(s.Client)
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func freeURL(t testing.TB, scheme string) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return url.URL{Scheme: scheme, Host: l.Addr().String()}
}

func newCA(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "skylb test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse CA: %v", err)
	}
	return cert, key
}

// Issue writes a certificate named name, signed by the server's CA, into the
// server's directory and returns the paths of the certificate and key.
func (s *Server) Issue(t testing.TB, name, commonName string) (certFile, keyFile string) {
	t.Helper()
	ca, caKey := readCA(t, s.Dir)
	issue(t, s.Dir, name, ca, caKey, commonName, x509.ExtKeyUsageClientAuth)
	return filepath.Join(s.Dir, name+".crt"), filepath.Join(s.Dir, name+".key")
}

func issue(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, usage x509.ExtKeyUsage) {
	t.Helper()
	key := newKey(t)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("issue %s: %v", name, err)
	}
	cert, _ := x509.ParseCertificate(der)
	writeCert(t, dir, name, cert, key)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return key
}

func writeCert(t testing.TB, dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("marshal key: %v", err)
	}
	write := func(file, typ string, der []byte, mode os.FileMode) {
		b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
		// Write and rename, the way a Secret update appears to a reader.
		tmp := filepath.Join(dir, "."+file+".tmp")
		if err := os.WriteFile(tmp, b, mode); err != nil {
			t.Fatalf("write %s: %v", file, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
			t.Fatalf("rename %s: %v", file, err)
		}
	}
	write(name+".crt", "CERTIFICATE", cert.Raw, 0o644)
	write(name+".key", "EC PRIVATE KEY", keyDER, 0o600)
}

func readCA(t testing.TB, dir string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(fmt.Errorf("parse CA: %w", err))
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(fmt.Errorf("parse CA key: %w", err))
	}
	return cert, key
}
