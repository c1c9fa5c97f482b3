package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/etcdclient"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
	"github.com/skylb/skylb/test/stack"
)

// TestProfileColdStart is a tool, not a test: it runs only when
// SKYLB_PROFILE_DIR is set. It starts the stack, creates the large cluster of
// scripts/bench.sh (10,000 Services, 2,000 Ingresses), runs skylb in-process
// from a cold start until every record is in etcd, and writes cpu.prof (the
// cold start), heap-peak.prof (the live heap of the garbage collection before
// the largest heap in use seen, sampled every 20 ms) and heap.prof (the
// converged state, after a GC) to
// $SKYLB_PROFILE_DIR, for "go tool pprof". With SKYLB_PROFILE_KEEP=1 the stack
// is left running, detached, in $SKYLB_PROFILE_DIR/stack and reused by the
// next run, which saves creating the cluster again; stop it with
// "kill $(jq '.procs[].pid' $SKYLB_PROFILE_DIR/stack/stack.json)".
// SKYLB_PROFILE_VIEW, as --view takes it (internal=cluster-ip), profiles the
// cold start of scripts/bench.sh's second-view phase: skylb writes the view's
// tree too, and the run ends once both trees hold every record.
func TestProfileColdStart(t *testing.T) {
	out := os.Getenv("SKYLB_PROFILE_DIR")
	if out == "" {
		t.Skip("SKYLB_PROFILE_DIR not set")
	}
	// A sample every 4 KiB rather than 512: the heap's parts of a few
	// hundred KiB show up.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 4096
	keep := os.Getenv("SKYLB_PROFILE_KEEP") != ""
	ctx := context.Background()
	dir := filepath.Join(out, "stack")
	var st *stack.Stack
	var err error
	sc := scale{Namespaces: 100, Services: 10000, Ingresses: 2000}
	if _, serr := os.Stat(filepath.Join(dir, stack.StateFile)); serr == nil && keep {
		if st, err = stack.Load(dir); err != nil {
			t.Fatal(err)
		}
	} else {
		// etcd allows the transactions of any SKYLB_PROFILE_MAX_TXN_OPS
		// up to 1,024, so that one kept stack compares them.
		opts := stack.Options{Dir: dir, Detach: keep, Log: os.Stderr, EtcdFlags: []string{"--max-txn-ops=1024"}}
		if st, err = stack.Start(ctx, opts); err != nil {
			t.Fatal(err)
		}
		if !keep {
			t.Cleanup(func() {
				st.Stop()
				os.RemoveAll(dir)
			})
		}
		cfg := *st.RestConfig
		cfg.QPS, cfg.Burst = 2000, 4000
		kube := kubernetes.NewForConfigOrDie(&cfg)
		if err := populate(ctx, kube, sc, 16, func(f string, a ...any) { t.Logf(f, a...) }); err != nil {
			t.Fatal(err)
		}
	}
	root, err := st.EtcdClient("root")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var views []source.View
	if v := os.Getenv("SKYLB_PROFILE_VIEW"); v != "" {
		view, err := source.ParseView(v)
		if err != nil {
			t.Fatalf("SKYLB_PROFILE_VIEW: %v", err)
		}
		views = append(views, view)
	}
	// A kept stack may have been started without the view: skylb's role
	// is granted its tree here, as the RBAC bootstrap grants it.
	for _, v := range views {
		dir := skydns.ViewPrefix("/skydns", v.Name) + "/"
		if _, err := root.RoleGrantPermission(ctx, "skylb", dir, clientv3.GetPrefixRangeEnd(dir), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"/skydns/", "/skylb/", "/skydns-"} {
		if _, err := root.Delete(ctx, dir, clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}

	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	zones, _ := dnsname.ParseZones([]string{"example.org"})
	cfg := app.Config{
		Version: "profile",
		Controller: controller.Config{
			Source: source.Config{
				Zones: zones, TTL: 30, AddressSource: source.ModeAuto,
				Filter:   source.Filter{Denied: source.DefaultDeniedCIDRs},
				MaxNames: source.DefaultMaxNames, MaxAddresses: source.DefaultMaxAddresses, SRV: true,
				Views: views,
			},
			ResyncInterval: 5 * time.Minute, HealthWorkers: 32,
		},
		Publish:        publish.Config{Prefix: "/skydns", Owner: "default", ClaimPrefix: "/skylb/claims", Timeout: 5 * time.Second},
		StartGCPercent: app.DefaultStartGCPercent, Log: log,
	}
	if n := os.Getenv("SKYLB_PROFILE_MAX_TXN_OPS"); n != "" {
		if cfg.Publish.MaxTxnOps, err = strconv.Atoi(n); err != nil {
			t.Fatalf("SKYLB_PROFILE_MAX_TXN_OPS: %v", err)
		}
	}
	kcfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubeclient.NewClient(kcfg, kubeclient.Rate{})
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := etcdclient.New(etcdclient.Config{
		Endpoints: []string{st.EtcdURL}, CAFile: filepath.Join(st.Certs, "ca.crt"),
		CertFile: filepath.Join(st.Certs, "skylb.crt"), KeyFile: filepath.Join(st.Certs, "skylb.key"), Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()

	f, err := os.Create(filepath.Join(out, "cpu.prof"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	stopRSS := rssPeaks(os.Getpid)
	start := time.Now()
	pprof.StartCPUProfile(f)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(rctx, cfg, app.Clients{Kube: kube}, etcd) }()
	// Each Service has two named ports, published as SRV records.
	want := int64(3*sc.Services + sc.Ingresses)
	var peak uint64 // heap in use, sampled
	var peakProf bytes.Buffer
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak {
			peak = ms.HeapInuse
			peakProf.Reset()
			pprof.Lookup("heap").WriteTo(&peakProf, 0)
		}
		count, err := countRecords(ctx, root, views)
		if err == nil && count >= want*int64(1+len(views)) {
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("only %d records after 3 minutes", count)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	peakAnon, _ := stopRSS()
	pprof.StopCPUProfile()
	f.Close()
	if err := os.WriteFile(filepath.Join(out, "heap-peak.prof"), peakProf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	hf, err := os.Create(filepath.Join(out, "heap.prof"))
	if err != nil {
		t.Fatal(err)
	}
	pprof.WriteHeapProfile(hf)
	hf.Close()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// Live objects and the room of their spans that holds none.
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(samples)
	t.Logf("all %d records of each tree in %v; heap in use after GC %.1f MiB (objects %.1f, unused in their spans %.1f; peak seen %.1f MiB), peak anonymous RSS of the test process %.1f MiB, total alloc %.1f MiB, GC cycles %d",
		want, took.Round(time.Millisecond), float64(ms.HeapInuse)/(1<<20), float64(samples[0].Value.Uint64())/(1<<20), float64(samples[1].Value.Uint64())/(1<<20),
		float64(peak)/(1<<20), mib(peakAnon), float64(ms.TotalAlloc)/(1<<20), ms.NumGC)
	cancel()
	if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
		t.Log(err)
	}
	fmt.Fprintln(os.Stderr, "profiles in", out)
}

// countRecords returns how many records of the bench's Services and
// Ingresses the default tree and each view's tree hold together.
func countRecords(ctx context.Context, root *clientv3.Client, views []source.View) (int64, error) {
	paths := []string{benchPaths}
	for _, v := range views {
		paths = append(paths, skydns.ViewPrefix("/skydns", v.Name)+strings.TrimPrefix(benchPaths, "/skydns"))
	}
	var n int64
	for _, p := range paths {
		resp, err := root.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		n += resp.Count
	}
	return n, nil
}
