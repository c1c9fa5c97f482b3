package manifests

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// certSet is the output of scripts/gen-certs.sh --secrets.
type certSet struct {
	dir     string                       // certificates
	files   []string                     // Secret manifests
	secrets map[string]*corev1.Secret    // by namespace/name
	x509    map[string]*x509.Certificate // tls.crt by namespace/name
	pool    *x509.CertPool               // the CA
	objs    []*unstructured.Unstructured // all Secrets
	byFile  map[string][]*unstructured.Unstructured
}

func genCerts(t *testing.T, root string) *certSet {
	t.Helper()
	tmp := t.TempDir()
	cs := &certSet{dir: filepath.Join(tmp, "certs"), secrets: map[string]*corev1.Secret{},
		x509: map[string]*x509.Certificate{}, byFile: map[string][]*unstructured.Unstructured{}}
	out := filepath.Join(tmp, "secrets")
	script := filepath.Join(root, "scripts", "gen-certs.sh")
	for i := range 2 {
		b, err := exec.Command("bash", script, "--secrets", out, cs.dir).CombinedOutput()
		if err != nil {
			t.Fatalf("gen-certs.sh --secrets: %v\n%s", err, b)
		}
		if i == 1 && (bytes.Contains(b, []byte("created")) || bytes.Contains(b, []byte("wrote"))) {
			t.Errorf("gen-certs.sh --secrets is not idempotent, second run:\n%s", b)
		}
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		path := filepath.Join(out, e.Name())
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600 (private keys)", e.Name(), fi.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cs.files = append(cs.files, path)
		for _, o := range decode(t, b) {
			sec := as[corev1.Secret](t, o)
			key := sec.Namespace + "/" + sec.Name
			if sec.Type != corev1.SecretTypeTLS {
				t.Errorf("Secret %s: type %q, want %q", key, sec.Type, corev1.SecretTypeTLS)
			}
			for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
				if len(sec.Data[k]) == 0 {
					t.Errorf("Secret %s: no %s", key, k)
				}
			}
			cs.secrets[key] = sec
			cs.objs = append(cs.objs, o)
			cs.byFile[e.Name()] = append(cs.byFile[e.Name()], o)
			blk, _ := pem.Decode(sec.Data["tls.crt"])
			if blk == nil {
				t.Fatalf("Secret %s: tls.crt is not PEM", key)
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatalf("Secret %s: %v", key, err)
			}
			cs.x509[key] = c
			if cs.pool == nil {
				cs.pool = x509.NewCertPool()
				if !cs.pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
					t.Fatalf("Secret %s: bad ca.crt", key)
				}
			}
		}
	}
	return cs
}

// verify checks that the certificate of Secret key is valid for usage and, if
// host is set, for host.
func (cs *certSet) verify(t *testing.T, key, host string, usage x509.ExtKeyUsage) {
	t.Helper()
	c, ok := cs.x509[key]
	if !ok {
		t.Errorf("gen-certs.sh --secrets wrote no Secret %s", key)
		return
	}
	_, err := c.Verify(x509.VerifyOptions{DNSName: host, Roots: cs.pool, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		t.Errorf("certificate of Secret %s for %q: %v", key, host, err)
	}
}
