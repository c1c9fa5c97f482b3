package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// externalDNSResult is external-dns, run as its users run it with CoreDNS,
// measured on the same stack and the same objects as skylb, after skylb has
// stopped and its records are gone.
type externalDNSResult struct {
	Version string   `json:"version"`
	Args    []string `json:"args"`
	// Records is the A records expected: one per Service of the large cluster.
	Records int `json:"records"`
	// From external-dns's process start.
	FirstRecordSeconds float64 `json:"first_record_seconds"`
	LastRecordSeconds  float64 `json:"last_record_seconds"`
	// KeysWritten is every put under /skydns/ during the cold start (etcd watch).
	KeysWritten int     `json:"etcd_keys_written"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	PeakAnonMiB float64 `json:"peak_rss_anon_mib"`
	PeakFileMiB float64 `json:"peak_rss_file_mib"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	// StatusChange is a Service's status address changed, API write to
	// CoreDNS answering the new address.
	StatusChange quantiles   `json:"status_change_to_dns"`
	Idle         *idleResult `json:"idle"`
}

// externalDNSFlags are the flags of external-dns with the CoreDNS provider as
// its chart and tutorial run it (TXT registry, sync policy, 1 minute
// interval), with --events, the zone as domain filter and a name template
// giving each Service the name skylb gives it.
func externalDNSFlags(kubeconfig string, metricsPort int) []string {
	return []string{
		"--provider=coredns", "--source=service", "--events",
		"--registry=txt", "--txt-owner-id=bench", "--policy=sync", "--interval=1m",
		"--domain-filter=" + benchZone,
		"--fqdn-template={{.Name}}.{{.Namespace}}." + benchZone,
		"--kubeconfig=" + kubeconfig,
		"--metrics-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--log-level=info",
	}
}

// extProc is the running external-dns.
type extProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startExternalDNS starts bin/external-dns against the stack's API server and
// etcd, over mutual TLS as etcd user skylb (read-write on /skydns/).
func (b *bench) startExternalDNS() (*extProc, []string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := externalDNSFlags(b.st.Kubeconfig, port)
	logFile, err := os.Create(filepath.Join(b.dir, "external-dns.log"))
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(b.root, "bin", "external-dns"), args...)
	certs := b.st.Certs
	cmd.Env = append(os.Environ(),
		"ETCD_URLS="+strings.Join(b.st.EtcdURLs, ","),
		"ETCD_CA_FILE="+filepath.Join(certs, "ca.crt"),
		"ETCD_CERT_FILE="+filepath.Join(certs, "skylb.crt"),
		"ETCD_KEY_FILE="+filepath.Join(certs, "skylb.key"),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start external-dns: %w", err)
	}
	p := &extProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, args, nil
}

func (p *extProc) pid() int { return p.cmd.Process.Pid }

func (p *extProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, then SIGKILL after 10 s, and waits for the exit.
func (p *extProc) stop() {
	if !p.running() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// serviceNames are the DNS names of the large cluster's Services.
func (s scale) serviceNames() []string {
	perNS := (s.Services + s.Namespaces - 1) / s.Namespaces
	names := make([]string, 0, s.Services)
	for i := range s.Services {
		names = append(names, fmt.Sprintf("svc-%04d.%s.%s", i%perNS, s.namespace(i/perNS), benchZone))
	}
	return names
}

// statusChanges moves the status address of the large cluster's first
// Service to another address n times, and times each move from the API write
// to CoreDNS answering the new address, waiting up to limit for each.
func (b *bench) statusChanges(ctx context.Context, n int, limit time.Duration) (quantiles, error) {
	ns := b.o.scale.namespace(0)
	svcs := b.kube.CoreV1().Services(ns)
	name := "svc-0000." + ns + "." + benchZone
	var lat []time.Duration
	for range n {
		svc, err := svcs.Get(ctx, "svc-0000", metav1.GetOptions{})
		if err != nil {
			return quantiles{}, err
		}
		ip := "10.127.0.1"
		if ing := svc.Status.LoadBalancer.Ingress; len(ing) > 0 && ing[0].IP == ip {
			ip = "10.127.0.2"
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: ptrTo(corev1.LoadBalancerIPModeVIP)}}
		t0 := time.Now()
		if _, err := svcs.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
			return quantiles{}, fmt.Errorf("status of %s/svc-0000: %w", ns, err)
		}
		at, err := b.dns.waitAnswer(ctx, name, []string{ip}, limit)
		if err != nil {
			return quantiles{}, err
		}
		lat = append(lat, at.Sub(t0))
		time.Sleep(100 * time.Millisecond)
	}
	return summarise(lat), nil
}

// externalDNS stops skylb, removes its records, and measures external-dns
// over the same objects: cold start to the last record, peak RSS, a
// Service's status change to the answer, and idle etcd requests.
func (b *bench) externalDNS(ctx context.Context, res *results) error {
	e, p, err := b.externalDNSColdStart(ctx, b.o.scale)
	if err != nil {
		return err
	}
	res.ExternalDNS = e
	// With --events a change starts a pass at most every
	// --min-event-sync-interval (5 s); without events, the next 1 minute
	// interval would: 90 s bounds either.
	if e.StatusChange, err = b.statusChanges(ctx, b.o.extChanges, 90*time.Second); err != nil {
		return fmt.Errorf("external-dns: %w", err)
	}
	logf("external-dns status change: p50 %.1f ms, p99 %.1f ms over %d changes", e.StatusChange.P50, e.StatusChange.P99, e.StatusChange.N)
	if e.Idle, err = b.idleWindow(ctx, p.pid()); err != nil {
		return err
	}
	logf("external-dns idle %.0fs: etcd requests %v; CPU %.2fs", e.Idle.Seconds, e.Idle.GRPC, e.Idle.CPUSeconds)
	p.stop()
	return nil
}

// externalDNSColdStart stops skylb, removes every key under /skydns/, starts
// external-dns and times it until it has written the A record of each
// Service of sc; it measures the keys it wrote, its peak RSS and CPU time,
// and leaves it running.
func (b *bench) externalDNSColdStart(ctx context.Context, sc scale) (*externalDNSResult, *extProc, error) {
	if b.skylb != nil {
		if err := b.skylb.Stop(); err != nil {
			return nil, nil, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := b.etcd.Delete(dctx, "/skydns/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("remove skylb's records: %w", err)
	}
	names := sc.serviceNames()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[stack.StoredPath(n)+"/"] = true
	}
	e := &externalDNSResult{Records: len(names), Version: binVersion(b.root, "external-dns")}
	mark := b.rec.mark()
	t0 := time.Now()
	p, args, err := b.startExternalDNS()
	if err != nil {
		return nil, nil, err
	}
	b.ext = p
	e.Args = args
	stopRSS := rssPeaks(p.pid)
	got := map[string]bool{}
	var first, last time.Time
	deadline := time.Now().Add(b.o.extLimit)
	for i := mark; len(got) < len(want); {
		evs, next := b.rec.since(i)
		i = next
		for _, ev := range evs {
			if !ev.put {
				continue
			}
			dir := ev.key[:strings.LastIndexByte(ev.key, '/')+1]
			if want[dir] && !got[dir] {
				got[dir] = true
				if first.IsZero() {
					first = ev.at
				}
				last = ev.at
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stopRSS()
			return nil, nil, fmt.Errorf("external-dns: %d of %d records in etcd after %v", len(got), len(want), time.Since(t0).Round(time.Millisecond))
		}
		if !p.running() {
			stopRSS()
			return nil, nil, fmt.Errorf("external-dns exited (%v); see %s", p.err, filepath.Join(b.dir, "external-dns.log"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.FirstRecordSeconds, e.LastRecordSeconds = first.Sub(t0).Seconds(), last.Sub(t0).Seconds()
	// Let the rest of the pass (its TXT records) and the Go runtime settle,
	// counting what it writes meanwhile.
	time.Sleep(time.Second)
	evs, _ := b.rec.since(mark)
	for _, ev := range evs {
		if ev.put {
			e.KeysWritten++
		}
	}
	anon, file := stopRSS()
	e.PeakAnonMiB, e.PeakFileMiB = mib(anon), mib(file)
	u, err := readProc(p.pid())
	if err != nil {
		return nil, nil, err
	}
	e.PeakRSSMiB, e.CPUSeconds = mib(u.PeakRSS), u.CPU
	logf("external-dns cold start: first record %.2fs, last record %.2fs; %d keys written; peak RSS %.1f MiB, CPU %.2fs",
		e.FirstRecordSeconds, e.LastRecordSeconds, e.KeysWritten, e.PeakRSSMiB, e.CPUSeconds)
	return e, p, nil
}

// binVersion is the version in bin/.NAME.version, the stamp of scripts/build-bins.sh.
func binVersion(root, name string) string {
	s, err := os.ReadFile(filepath.Join(root, "bin", "."+name+".version"))
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(s)); len(f) > 0 {
		return f[0]
	}
	return ""
}

var errNoExternalDNS = errors.New("no bin/external-dns: run scripts/build-bins.sh external-dns")
