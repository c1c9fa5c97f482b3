// Package chaos injects faults into the real local stack, with the DNS etcd as
// a cluster of three members on loopback (mutual TLS between clients and
// members and between peers, RBAC as in etcd/rbac-bootstrap.sh), the real
// kube-apiserver and CoreDNS, and skylb given all three etcd endpoints.
//
// The faults run one after another on one stack (TestFaults). After each, the
// invariant is checked: the keys under /skydns/ equal exactly the records the
// Services in the API server call for, computed here from the objects (nothing
// lost, no orphan, no duplicate, foreign keys untouched); what skylb keeps
// under /skylb/ is its own; CoreDNS answers a sample of names accordingly; and
// skylb is the same process it was (it did not crash). The time from the end
// of each fault to the invariant holding is measured and written, with the
// result, to a Markdown table (-report, printed by scripts/chaos.sh).
package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

var (
	keep       = flag.Bool("keep", false, "leave the stack's directory (logs) behind")
	reportPath = flag.String("report", "", "write the report table (Markdown) to this file")
	long       = flag.Bool("long", false, "the long outages: all of etcd down 10 min and hung 5 min, instead of 60 s and 30 s")
)

// downFor and hungFor are how long all of etcd is down (fault 3) and hung
// (fault 9).
func downFor() time.Duration {
	if *long {
		return 10 * time.Minute
	}
	return time.Minute
}

func hungFor() time.Duration {
	if *long {
		return 5 * time.Minute
	}
	return 30 * time.Second
}

const (
	zone  = "example.org"
	owner = "chaos"
	ttl   = 30
	ns    = "chaos"
	// class is the load-balancer class of the test's Services: another
	// implementation's, so that skylb publishes their status as written here.
	class = "example.com/elsewhere"
	// quotaBytes is the DNS etcd's --quota-backend-bytes: small enough to
	// fill quickly for the NOSPACE fault, large enough for the others.
	quotaBytes = 48 << 20
)

var (
	st *stack.Stack
	// secretDir holds skylb's client certificate the way the kubelet mounts a
	// Secret (see atomicWrite).
	secretDir string
	// clientsCA is the CA file etcd's members check clients' certificates
	// against: a symlink to the stack's CA, pointed at another CA to make
	// them refuse every client (fault 11).
	clientsCA string
	// skylbArgs are skylb's flags besides those the stack sets.
	skylbArgs []string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if missing := stack.MissingBinaries(""); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "chaos: skipped: %s missing in bin/; run scripts/build-bins.sh\n", strings.Join(missing, ", "))
		return 0
	}
	dir, err := os.MkdirTemp("", "skylb-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	code := 1
	defer func() {
		if st != nil {
			st.Stop()
		}
		if *keep || code != 0 {
			fmt.Fprintln(os.Stderr, "chaos: logs kept in", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	if err := setUp(dir); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	code = m.Run()
	fmt.Fprint(os.Stderr, "\n"+report.markdown())
	if err := report.write(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		code = 1
	}
	return code
}

// setUp starts the stack and skylb, and creates the Services every fault
// starts from.
func setUp(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The stack writes its CA into <dir>/certs; the link waits for it.
	clientsCA = filepath.Join(dir, "clients-ca.crt")
	if err := os.Symlink(filepath.Join(dir, "certs", "ca.crt"), clientsCA); err != nil {
		return err
	}
	var err error
	st, err = stack.Start(ctx, stack.Options{
		Dir: dir, Zone: zone, Log: os.Stderr, EtcdMembers: 3,
		EtcdFlags: []string{fmt.Sprintf("--quota-backend-bytes=%d", quotaBytes), "--trusted-ca-file=" + clientsCA},
	})
	if err != nil {
		return fmt.Errorf("start stack: %w", err)
	}
	secretDir = filepath.Join(dir, "skylb-etcd-client")
	if err := atomicWrite(secretDir, map[string]string{
		"tls.crt": filepath.Join(st.Certs, "skylb.crt"),
		"tls.key": filepath.Join(st.Certs, "skylb.key"),
		"ca.crt":  filepath.Join(st.Certs, "ca.crt"),
	}); err != nil {
		return err
	}
	if err := writeForeign(ctx); err != nil {
		return err
	}
	if _, err := st.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	skylbArgs = []string{
		"--owner-id=" + owner, "--ttl=30", "--resync-interval=1m", "--log-level=info",
		"--etcd-cert-file=" + filepath.Join(secretDir, "tls.crt"),
		"--etcd-key-file=" + filepath.Join(secretDir, "tls.key"),
		"--etcd-ca-file=" + filepath.Join(secretDir, "ca.crt"),
	}
	p, err := st.StartSkylb(ctx, skylbArgs...)
	if err != nil {
		return fmt.Errorf("start skylb: %w", err)
	}
	if err := st.WaitSkylbReady(ctx, p); err != nil {
		return err
	}
	skylbPID = p.PID()
	return nil
}
