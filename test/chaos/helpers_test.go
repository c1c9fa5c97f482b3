package chaos

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skylb/skylb/test/stack"
)

// skylbPID is the pid skylb must still have after a fault: a different one
// means it crashed (or the fault restarted it on purpose and says so).
var skylbPID int

// --- Services ------------------------------------------------------------------

// addresses returns n IPv4 documentation addresses for generation gen of a
// Service: data only, nothing is sent to them.
func addresses(n, gen int) []string {
	out := make([]string, n)
	for i := range out {
		x := gen*7 + i
		out[i] = fmt.Sprintf("%s.%d", []string{"192.0.2", "198.51.100", "203.0.113"}[x/200%3], 1+x%200)
	}
	return out
}

// createService creates a LoadBalancer Service of another implementation's
// class and writes ips into its status, as that implementation would.
func createService(ctx context.Context, name string, ips []string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: ptr(class),
			Selector:          map[string]string{"app": name},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := st.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s: %w", name, err)
	}
	return setAddresses(ctx, name, ips)
}

// setAddresses replaces the status addresses of a Service.
func setAddresses(ctx context.Context, name string, ips []string) error {
	var ingress []corev1.LoadBalancerIngress
	for _, ip := range ips {
		ingress = append(ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}})
	if err != nil {
		return err
	}
	if _, err := st.Kube.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("status of service %s: %w", name, err)
	}
	return nil
}

func deleteService(ctx context.Context, name string) error {
	if err := st.Kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete service %s: %w", name, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// dnsName is the name skylb publishes for the test's Service.
func dnsName(service string) string { return service + "." + ns + "." + zone }

// parallel runs f(0..n-1) with workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	return stack.Parallel(context.Background(), n, workers, func(_ context.Context, i int) error { return f(i) })
}

// retry calls f, each time with at most 5 s, until it succeeds or ctx ends;
// it returns the last error.
func retry(ctx context.Context, f func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// --- skylb -------------------------------------------------------------------

// rssBytes returns the resident memory of a process.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// logSize returns the size of the named process's log, to count what it logs
// from then on.
func logSize(name string) int64 {
	fi, err := os.Stat(st.Proc(name).LogFile())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns the lines the named process logged after offset.
func logSince(name string, offset int64) []string {
	f, err := os.Open(st.Proc(name).LogFile())
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(f)
	text := strings.TrimRight(string(b), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// --- certificates ----------------------------------------------------------------

// atomicWrite publishes files (name -> source path) in dir the way the
// kubelet updates a mounted Secret (AtomicWriter): the files go into a new
// timestamped directory, a symlink ..data_tmp to it is renamed over ..data in
// one step, and each name is a symlink to ..data/<name> that never changes.
func atomicWrite(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ts, err := os.MkdirTemp(dir, ".."+time.Now().Format("2006_01_02_15_04_05.")) // e.g. ..2025_01_02_15_04_05.123456
	if err != nil {
		return err
	}
	for name, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o600); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			return err
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// newCA writes a self-signed CA certificate to path: one that signed none
// of the stack's certificates.
func newCA(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "another CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// relink points the symlink link at target, in one step.
func relink(link, target string) error {
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// issueClientCert writes <dir>/<cn>.crt and .key: a client certificate for
// the etcd user cn, signed by the stack's CA.
func issueClientCert(dir, cn string) error {
	caPEM, err := os.ReadFile(filepath.Join(st.Certs, "ca.crt"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(st.Certs, "ca.key"))
	if err != nil {
		return err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return errors.New("no PEM in ca.crt or ca.key")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return err
	}
	caKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		if caKey, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
			return err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"skylb"}, CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, cn+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, cn+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}
