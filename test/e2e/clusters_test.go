package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/test/stack"
)

// site is one of several clusters publishing into the stack's DNS etcd: its
// own kube-apiserver and its own skylb with its own owner id.
type site struct {
	*stack.Cluster
	owner string
	addr  string // the address its Services publish
	skylb *stack.Proc
	args  []string
}

// expiry is the --record-expiry of the sites' skylb.
const expiry = 10 * time.Second

// startSite starts the API server and the skylb of a site, with the extra
// flags of skylb.
func startSite(t *testing.T, owner, addr string, extra ...string) *site {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := st.StartCluster(ctx, owner)
	if err != nil {
		t.Fatalf("start cluster %s: %v", owner, err)
	}
	s := &site{Cluster: c, owner: owner, addr: addr, args: append([]string{
		"--kubeconfig=" + c.Kubeconfig, "--owner-id=" + owner, "--record-expiry=" + expiry.String(),
		"--cluster-label", "--resync-interval=1m", "--log-level=debug",
	}, extra...)}
	s.start(t)
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace shop in %s: %v", owner, err)
	}
	return s
}

func (s *site) start(t *testing.T) {
	t.Helper()
	p, err := st.StartSkylbNamed(ctxT(t), "skylb-"+s.owner, s.args...)
	if err != nil {
		t.Fatalf("start skylb of %s: %v", s.owner, err)
	}
	s.skylb = p
	stack.Eventually(t, 30*time.Second, "skylb of "+s.owner+" ready", func() (bool, string) {
		code := readyz(p.HTTPAddr())
		return code == 200, fmt.Sprintf("/readyz %d", code)
	})
}

// publish creates a LoadBalancer Service of another implementation with the
// site's address in its status, publishing host, shared or not.
func (s *site) publish(t *testing.T, name, host string, shared bool) {
	t.Helper()
	s.publishService(t, name, map[string]string{"skylb.io/hostname": host, "skylb.io/shared": fmt.Sprint(shared)}, 80, s.addr)
}

// publishService creates a LoadBalancer Service of another implementation,
// with annotations, one port and ips in its status.
func (s *site) publishService(t *testing.T, name string, annotations map[string]string, port int32, ips ...string) {
	t.Helper()
	class := "metallb.io/metallb"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			Ports: []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}},
		},
	}
	svc, err := s.Kube.CoreV1().Services("shop").Create(ctxT(t), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s in %s: %v", name, s.owner, err)
	}
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if _, err := s.Kube.CoreV1().Services("shop").UpdateStatus(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write status of %s in %s: %v", name, s.owner, err)
	}
}

func (s *site) remove(t *testing.T, name string) {
	t.Helper()
	if err := s.Kube.CoreV1().Services("shop").Delete(ctxT(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete service %s in %s: %v", name, s.owner, err)
	}
}

// expectEvent waits for an Event of reason whose message contains text on a
// Service of the site.
func (s *site) expectEvent(t *testing.T, object, reason, text string) {
	t.Helper()
	expectEventIn(t, s.Kube, "shop", object, reason, text)
}

func TestSeveralClusters(t *testing.T) {
	east := startSite(t, "east", "192.0.2.61")
	west := startSite(t, "west", "192.0.2.62")
	t.Cleanup(func() { stopSites(t, east, west) })
	const (
		shared = "shared.mc.example.org"
		solo   = "solo.mc.example.org"
	)

	t.Run("generated names carry the cluster label", func(t *testing.T) {
		east.publish(t, "gen", "gen.mc.example.org", false)
		within(t, quick, "gen.shop.east.example.org", east.addr)
	})

	t.Run("a shared name merges and splits", func(t *testing.T) {
		east.publish(t, "web", shared, true)
		within(t, quick, shared, east.addr)
		west.publish(t, "web", shared, true)
		d := within(t, quick, shared, east.addr, west.addr)
		t.Logf("%s answers both clusters %v after the second one published it", shared, d)
		west.remove(t, "web")
		within(t, quick, shared, east.addr)
		west.publish(t, "web", shared, true)
		within(t, quick, shared, east.addr, west.addr)
	})

	t.Run("an unshared name stays with the first cluster", func(t *testing.T) {
		east.publish(t, "solo", solo, false)
		within(t, quick, solo, east.addr)
		west.publish(t, "solo", solo, false)
		west.expectEvent(t, "solo", "HostnameConflict", "cluster east holds it")
		within(t, quick, solo, east.addr)
	})

	t.Run("a name beneath another cluster's is refused", func(t *testing.T) {
		const (
			top   = "top.mc.example.org"
			under = "a.top.mc.example.org"
		)
		east.publish(t, "top", top, false)
		within(t, quick, top, east.addr)
		west.publish(t, "under", under, false)
		west.expectEvent(t, "under", "HostnameConflict", "cluster east holds a name above or beneath it")
		// CoreDNS answers top with everything beneath it: west's address
		// must not be there.
		within(t, quick, top, east.addr)
		within(t, quick, under)
		// West writes what it would for under before it writes a Service
		// made after it: once that one answers, under has had its chance.
		west.publish(t, "after", "after.mc.example.org", false)
		within(t, quick, "after.mc.example.org", west.addr)
		if got, _, err := addresses(top); err != nil || !slices.Equal(got, []string{east.addr}) {
			t.Fatalf("%s answers %q (%v) while west's %s waits, want only east's address", top, got, err, under)
		}
		within(t, quick, under)

		east.remove(t, "top")
		within(t, quick, under, west.addr)
		west.expectEvent(t, "under", "HostnameGranted", "is published")
		west.remove(t, "under")
		within(t, quick, under)
	})

	t.Run("clusters racing for names leave one winner each", func(t *testing.T) {
		const n = 8
		var wg sync.WaitGroup
		for _, s := range []*site{east, west} {
			wg.Go(func() {
				for i := range n {
					s.publish(t, fmt.Sprintf("race-%d", i), fmt.Sprintf("race-%d.mc.example.org", i), false)
				}
			})
		}
		wg.Wait()
		for i := range n {
			name := fmt.Sprintf("race-%d.mc.example.org", i)
			var got []string
			stack.Eventually(t, quick, name+" answered by one cluster", func() (bool, string) {
				var err error
				got, _, err = addresses(name)
				return err == nil && len(got) == 1, fmt.Sprintf("%q %v", got, err)
			})
			loser := west
			if got[0] == west.addr {
				loser = east
			}
			loser.expectEvent(t, fmt.Sprintf("race-%d", i), "HostnameConflict", "holds it")
		}
	})

	t.Run("skylb records lists them by name and owner", func(t *testing.T) {
		out, err := exec.Command(st.SkylbBinary(), "records", "--owner-id=east",
			"--etcd-endpoints="+st.EtcdURL, "--etcd-ca-file="+filepath.Join(st.Certs, "ca.crt"),
			"--etcd-cert-file="+filepath.Join(st.Certs, "skylb.crt"), "--etcd-key-file="+filepath.Join(st.Certs, "skylb.key"),
		).CombinedOutput()
		if err != nil {
			t.Fatalf("skylb records: %v\n%s", err, out)
		}
		want := []string{
			shared + " A 192.0.2.61 30 east shares in ",
			shared + " A 192.0.2.62 30 west (foreign) shares in ",
			solo + " A 192.0.2.61 30 east holds in ",
			solo + " - - - west (foreign) waits for east in ",
		}
		lines := strings.Split(string(out), "\n")
		for _, w := range want {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(strings.Join(strings.Fields(l), " "), w) }) {
				t.Errorf("skylb records has no line starting %q:\n%s", w, out)
			}
		}
	})

	t.Run("a dead cluster's records expire and come back", func(t *testing.T) {
		if err := east.skylb.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		within(t, expiry+5*time.Second, shared, west.addr)
		d := time.Since(killed)
		t.Logf("east's address left %s %v after its skylb was killed (--record-expiry %v)", shared, d, expiry)
		if d > expiry+time.Second+500*time.Millisecond {
			t.Errorf("east's address left after %v, want within %v and a second", d, expiry)
		}
		// The waiting claim takes the unshared name over.
		within(t, quick, solo, west.addr)
		within(t, quick, "gen.shop.east.example.org")

		east.start(t)
		within(t, quick, shared, east.addr, west.addr)
		within(t, quick, "gen.shop.east.example.org", east.addr)
		// The name stays with west, whose claim is now the older one.
		east.expectEvent(t, "solo", "HostnameConflict", "cluster west holds it")
		within(t, quick, solo, west.addr)
	})

	t.Run("an etcd outage longer than the expiry does not expire live records", func(t *testing.T) {
		etcd := st.Proc("etcd")
		if err := etcd.Stop(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(expiry + 2*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := etcd.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		// etcd restores the leases' full TTL when it comes back; the records
		// are still there once the sites have renewed them.
		for range 3 {
			if got := owners(t, shared); got != "east,west" {
				t.Fatalf("owners of %s after etcd returned: %q", shared, got)
			}
			time.Sleep(time.Second)
		}
		// CoreDNS's own client takes a while to reconnect.
		within(t, 30*time.Second, shared, east.addr, west.addr)
	})
}

// stopSites stops the sites' skylb and API servers, revokes the leases of
// their claims and records and deletes the records their claims held (which
// no other cluster is left to sweep), so that nothing of theirs lands in the
// middle of a later test.
func stopSites(t *testing.T, sites ...*site) {
	owned := make(map[string]bool)
	for _, s := range sites {
		_ = s.skylb.Stop()
		_ = s.APIServer.Stop()
		owned[s.owner] = true
	}
	c := etcdAs(t, "root")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leases := make(map[int64]bool)
	// The views' trees too: a site with views leaves records there.
	for _, prefix := range append([]string{"/skydns/", "/skylb/claims/"}, viewTrees()...) {
		resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			t.Errorf("list %s: %v", prefix, err)
			return
		}
		for _, kv := range resp.Kvs {
			v, err := skydns.Decode(kv.Value)
			switch {
			case err != nil || !owned[v.Owner]:
			case kv.Lease != 0:
				leases[kv.Lease] = true
			default:
				if _, err := c.Delete(ctx, string(kv.Key)); err != nil {
					t.Errorf("delete %s: %v", kv.Key, err)
				}
			}
		}
	}
	for id := range leases {
		if _, err := c.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
			t.Errorf("revoke lease %x: %v", id, err)
		}
	}
}

// owners returns the owners of the records stored at name (not beneath it,
// where its SRV records are), sorted and joined by commas.
func owners(t *testing.T, name string) string {
	t.Helper()
	c := etcdAs(t, "root")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, skydns.Path("/skydns", name)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		if stored, _, _ := skydns.SplitKey("/skydns", string(kv.Key)); stored != name {
			continue
		}
		v, err := skydns.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.Owner)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
