package conformance

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
)

// rolloutPort is the rollout Service's port, which no spec uses.
const rolloutPort = 18080

// rolloutManifest is a Deployment of three agnhost netexec servers that,
// as a well-behaved server does, stop being ready on SIGTERM and keep
// serving for a while, behind a LoadBalancer Service with
// externalTrafficPolicy Cluster.
var rolloutManifest = fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: rollout
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: rollout
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: netexec
        image: %s
        args: [netexec, --http-port=8080, --delay-shutdown=10]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: rollout
spec:
  type: LoadBalancer
  externalTrafficPolicy: Cluster
  selector: {app: web}
  ports:
  - port: %d
    targetPort: 8080
`, images.AgnhostRef, rolloutPort)

// testRollingUpdate measures what clients of the load balancer's addresses
// see while the Deployment behind it is replaced pod by pod: every request,
// sent in turn to each address of the status, must be answered, and the
// status must not change.
func testRollingUpdate(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	if err := c.Apply(ctx, rolloutManifest); err != nil {
		t.Fatal(err)
	}
	defer c.Kubectl(context.WithoutCancel(ctx), "delete", "namespace", "rollout", "--wait=false")
	c.MustKubectl(ctx, t, "-n", "rollout", "rollout", "status", "deployment/web", "--timeout=3m")
	status := func() []string {
		out := c.MustKubectl(ctx, t, "-n", "rollout", "get", "service", "web", "-o", `jsonpath={range .status.loadBalancer.ingress[*]}{.ip}{" "}{end}`)
		return strings.Fields(out)
	}
	var before []string
	for deadline := time.Now().Add(time.Minute); len(before) < len(c.Nodes) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		before = status()
	}
	if len(before) != len(c.Nodes) {
		t.Fatalf("Got status %v, want the %d nodes' addresses", before, len(c.Nodes))
	}
	// Every address answers before the rollout starts (kube-proxy opens
	// the port a moment after the status is written).
	for _, ip := range before {
		if err := waitGet(ctx, ip); err != nil {
			t.Fatal(err)
		}
	}

	load := newLoad(before)
	stop := load.start(ctx)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	c.MustKubectl(ctx, t, "-n", "rollout", "rollout", "restart", "deployment/web")
	c.MustKubectl(ctx, t, "-n", "rollout", "rollout", "status", "deployment/web", "--timeout=5m")
	rolled := time.Since(t0)
	// The old pods serve 10 s past their SIGTERM: keep asking until the
	// last of them is gone.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		out := c.MustKubectl(ctx, t, "-n", "rollout", "get", "pods", "-o", "name")
		if len(strings.Fields(out)) == 3 {
			break
		}
	}
	time.Sleep(2 * time.Second)
	total, failed := stop()
	after := status()
	t.Logf("measure: rolling update of 3 pods (%v) behind a Cluster-policy Service: %d of %d requests failed, through %d node addresses in turn",
		rolled.Round(time.Second), len(failed), total, len(before))
	if len(failed) > 0 {
		t.Errorf("Got %d of %d requests failed during the rollout, want none; the first: %s", len(failed), total, strings.Join(failed[:min(5, len(failed))], "; "))
	}
	if total < 100 {
		t.Errorf("Got %d requests during the rollout, want at least 100", total)
	}
	if !slices.Equal(before, after) {
		t.Errorf("Got status %v after the rollout, want it unchanged: %v", after, before)
	}
}

// load sends requests to each address in turn, one connection per request.
type load struct {
	addrs  []string
	client *http.Client
	mu     sync.Mutex
	total  int
	failed []string
}

func newLoad(addrs []string) *load {
	return &load{addrs: addrs, client: &http.Client{
		Timeout:   3 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}}
}

// start sends a request every 20 ms until the returned function is called,
// which returns the count of requests and the failures.
func (l *load) start(ctx context.Context) func() (int, []string) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	tick := time.NewTicker(20 * time.Millisecond)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ip := l.addrs[i%len(l.addrs)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := get(ctx, l.client, ip)
				l.mu.Lock()
				defer l.mu.Unlock()
				if ctx.Err() != nil && err != nil {
					return // stopped mid-request
				}
				l.total++
				if err != nil {
					l.failed = append(l.failed, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), ip, err))
				}
			}()
		}
	}()
	return func() (int, []string) {
		cancel()
		wg.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.total, l.failed
	}
}

// get asks netexec at ip to echo a message.
func get(ctx context.Context, client *http.Client, ip string) error {
	url := "http://" + net.JoinHostPort(ip, fmt.Sprint(rolloutPort)) + "/echo?msg=hello"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		return fmt.Errorf("%s: %q", resp.Status, body)
	}
	return nil
}

// waitGet waits up to a minute for ip to answer.
func waitGet(ctx context.Context, ip string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = get(ctx, client, ip); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s:%d does not answer: %w", ip, rolloutPort, err)
}
