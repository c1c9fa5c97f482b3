package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// insideAddr is the client address of the view internal in the CoreDNS that
// views starts, zoneAAddr that of the view zone-a (clients in the topology
// zone zone-a); every other loopback address is outside.
const (
	insideAddr = "127.0.0.2"
	zoneAAddr  = "127.0.0.3"
)

// viewsStarted numbers the CoreDNS processes views starts.
var viewsStarted atomic.Int32

// views starts a CoreDNS serving the shipped Corefile with, beside it, the
// views' blocks skylb keeps in the ConfigMap of coredns/deploy/views.yaml
// (internal for insideAddr, zone-a for zoneAAddr: skylbArgs), as CoreDNS's
// pod sees them, and returns its address. It is stopped when the test ends:
// one for each test, so that none inherits an etcd client still
// reconnecting after another test's etcd outage (the stack's own CoreDNS has
// the reloader for that).
func views(t *testing.T) string {
	t.Helper()
	addr, _, _ := viewsCoreDNS(t)
	return addr
}

// viewsCoreDNS is views, and also returns the directory of its Corefile and
// the name of its process.
func viewsCoreDNS(t *testing.T) (addr, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	blocks, err := st.ViewBlocks(ctx, func(b string) bool {
		return strings.Contains(b, "view internal {") && strings.Contains(b, "view zone-a {")
	})
	if err != nil {
		t.Fatal(err)
	}
	name = fmt.Sprintf("coredns-views-%d", viewsStarted.Add(1))
	dir = filepath.Join(st.Dir, name)
	corefile, err := stack.CorefileWith(st.Root, dir, map[string]string{stack.ViewsKey: blocks})
	if err != nil {
		t.Fatalf("CoreDNS with the views: %v", err)
	}
	p, addr, err := st.StartCoreDNS(ctx, name, corefile, 0)
	if err != nil {
		t.Fatalf("CoreDNS with the views: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return addr, dir, name
}

// queryFrom asks server for the A records of name from the loopback address
// from, and returns the rcode and the sorted addresses.
func queryFrom(server, from, name string) (int, []string, error) {
	return queryTypeFrom(server, from, name, dns.TypeA)
}

// queryTypeFrom asks server for the records of a type of name from the
// loopback address from, and returns the rcode and the sorted answers
// (stack.Answers).
func queryTypeFrom(server, from, name string, qtype uint16) (int, []string, error) {
	c := &dns.Client{Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(from)}}}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, server)
	if err != nil {
		return 0, nil, err
	}
	return r.Rcode, stack.Answers(r), nil
}

// bothSides waits until server answers the query of name and qtype from
// insideAddr with inside and from 127.0.0.1 with outside (stack.Answers).
func bothSides(t *testing.T, server, name string, qtype uint16, inside, outside []string) {
	t.Helper()
	stack.Eventually(t, quick, fmt.Sprintf("%s %s answers %q inside and %q outside", name, dns.TypeToString[qtype], inside, outside), func() (bool, string) {
		var got [2][]string
		for i, from := range []string{insideAddr, "127.0.0.1"} {
			rcode, answers, err := queryTypeFrom(server, from, name, qtype)
			if err != nil {
				return false, err.Error()
			}
			if rcode != dns.RcodeSuccess {
				return false, fmt.Sprintf("%s from %s", dns.RcodeToString[rcode], from)
			}
			got[i] = answers
		}
		return slices.Equal(got[0], inside) && slices.Equal(got[1], outside), fmt.Sprintf("inside %q, outside %q", got[0], got[1])
	})
}

// endpointState returns, as the API server has them now, the addresses of
// the ready endpoints of a Service and the addresses of their nodes.
func endpointState(t *testing.T, ns, svc string) (pods, nodeAddrs []string) {
	t.Helper()
	slices_, err := st.Kube.DiscoveryV1().EndpointSlices(ns).List(ctxT(t), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slices_.Items {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || !*ep.Conditions.Ready || ep.NodeName == nil {
				continue
			}
			pods = append(pods, ep.Addresses...)
			for _, n := range nodes {
				if n.Name == *ep.NodeName {
					nodeAddrs = append(nodeAddrs, n.InternalIP[0])
				}
			}
		}
	}
	slices.Sort(pods)
	slices.Sort(nodeAddrs)
	return pods, slices.Compact(nodeAddrs)
}

// TestViews checks split horizon through the real CoreDNS with the shipped
// Corefile and view block: the same name answers the inside client with the
// pods (the view's address source, --view=internal=pods) and the outside one
// with the nodes, both following a change; an annotation gives one Service
// its ClusterIP inside; and the view's records are under /skydns-internal/,
// which CoreDNS's etcd user may read.
func TestViews(t *testing.T) {
	server := views(t)
	namespace(t, "views")
	deploy(t, "views", "web", 2, "")
	svc := lbService(t, "views", "web")
	name := "web.views.example.org"
	// Both views as the API says at the moment of each answer: a change in
	// flight is compared with the state it brings.
	answered := func(limit time.Duration, replicas int) {
		t.Helper()
		stack.Eventually(t, limit, fmt.Sprintf("%s answers the pods inside and their nodes outside (%d replicas)", name, replicas), func() (bool, string) {
			pods, nodeAddrs := endpointState(t, "views", "web")
			_, inside, err := queryFrom(server, insideAddr, name)
			if err != nil {
				return false, err.Error()
			}
			_, outside, err := queryFrom(server, "127.0.0.1", name)
			if err != nil {
				return false, err.Error()
			}
			ok := len(pods) == replicas && slices.Equal(inside, pods) && slices.Equal(outside, nodeAddrs)
			return ok, fmt.Sprintf("inside %q, outside %q; the API: pods %q on nodes %q", inside, outside, pods, nodeAddrs)
		})
	}
	answered(slow, 2)
	scale(t, "views", "web", 3)
	answered(slow, 3)

	// The apex guard holds in the view too: the zone's apex does not
	// answer with every address beneath it.
	pods, _ := endpointState(t, "views", "web")
	stack.Eventually(t, quick, "the apex example.org answers none of web's pods inside", func() (bool, string) {
		_, apex, err := queryFrom(server, insideAddr, "example.org")
		if err != nil {
			return false, err.Error()
		}
		return !slices.ContainsFunc(apex, func(a string) bool { return slices.Contains(pods, a) }), fmt.Sprintf("inside, example.org answers %q; web's pods %q", apex, pods)
	})

	// The SRV record of its port: the pods' target port inside, the
	// Service's port at the nodes outside.
	srvName := "_http._tcp." + name
	bothSides(t, server, srvName, dns.TypeSRV, []string{"SRV 8080 " + name}, []string{fmt.Sprintf("SRV %d %s", svc.Spec.Ports[0].Port, name)})

	// PTR records are the default tree's, and answer every client alike:
	// the reverse zones are the default block's alone.
	metallb(t, "views", "lb", statusIPs("192.0.2.231"))
	ptr := []string{"PTR lb.views.example.org"}
	bothSides(t, server, reverse(t, "192.0.2.231"), dns.TypePTR, ptr, ptr)

	// The view's records, as etcdctl get --prefix /skydns-internal/ shows
	// them to CoreDNS's user.
	resp, err := etcdAs(t, "coredns").Get(ctxT(t), "/skydns-internal/org/example/views/web/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read /skydns-internal/ as coredns: %v", err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatal("no records under /skydns-internal/org/example/views/web/")
	}

	// skylb counts the view's records.
	if m := scrape(t, st.Proc("skylb").HTTPAddr(), "skylb_view_records"); m[`skylb_view_records{type="A",view="internal",zone="example.org"}`] < 3 {
		t.Errorf("skylb_view_records of the view internal: %v, want at least the 3 A records of %s", m, name)
	}

	// An annotation gives the Service its ClusterIP in the view.
	updateService(t, "views", "web", func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["skylb.io/address-source.internal"] = "cluster-ip"
	})
	stack.Eventually(t, quick+2*time.Second, name+" answers its ClusterIP inside", func() (bool, string) {
		_, inside, err := queryFrom(server, insideAddr, name)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(inside, svc.Spec.ClusterIPs), fmt.Sprintf("inside %q, ClusterIPs %q", inside, svc.Spec.ClusterIPs)
	})
}

// TestTopologyView checks topology-aware answers through the real CoreDNS:
// a Service with trafficDistribution PreferClose answers the view of zone-a
// (--view=zone-a=auto --view-zone=zone-a=zone-a) with the nodes of zone-a
// that run its ready pods, everyone else with every such node, and the view
// with every node once zone-a has no ready pod (fail open, as kube-proxy).
// A Service without the preference answers alike in every view.
func TestTopologyView(t *testing.T) {
	server := views(t)
	namespace(t, "topo")
	for _, d := range []struct {
		name string
		node string
	}{{"close-a", "node-1"}, {"close-b2", "node-2"}, {"close-b3", "node-3"}} {
		dep := stack.Deployment("topo", d.name, 1, 8080)
		dep.Spec.Template.Labels["tier"] = "close"
		dep.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": d.node}
		if _, err := st.Kube.AppsV1().Deployments("topo").Create(ctxT(t), dep, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create deployment %s: %v", d.name, err)
		}
	}
	preferClose := corev1.ServiceTrafficDistributionPreferClose
	lbService(t, "topo", "close", func(s *corev1.Service) {
		s.Spec.Selector = map[string]string{"tier": "close"}
		s.Spec.TrafficDistribution = &preferClose
	})
	lbService(t, "topo", "anywhere", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"tier": "close"} })
	all := []string{"192.0.2.11", "192.0.2.12", "192.0.2.13"}
	answers := func(limit time.Duration, name, from string, want []string) time.Duration {
		t.Helper()
		t0 := time.Now()
		stack.Eventually(t, limit, fmt.Sprintf("%s answers %q to %s", name, want, from), func() (bool, string) {
			_, got, err := queryFrom(server, from, name)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(got, want), fmt.Sprintf("%q", got)
		})
		return time.Since(t0)
	}
	answers(slow, "close.topo.example.org", zoneAAddr, all[:1])
	answers(quick, "close.topo.example.org", "127.0.0.1", all)
	answers(quick, "anywhere.topo.example.org", zoneAAddr, all)

	scale(t, "topo", "close-a", 0)
	d := answers(slow, "close.topo.example.org", zoneAAddr, all[1:])
	t.Logf("measure: zone-a's last pod gone -> its view answers the other zone's nodes in %v", d.Round(time.Millisecond))
	answers(quick, "close.topo.example.org", "127.0.0.1", all[1:])
	scale(t, "topo", "close-a", 1)
	answers(slow, "close.topo.example.org", zoneAAddr, all[:1])
}

// TestViewsKeepOtherClustersNames checks that a cluster sharing the etcd
// does not take, in its views, a name another cluster holds: a view's
// publisher has no claims of its own and writes a name only while the
// default view's claims let its cluster answer it (publish.Gate); the name
// is the second cluster's in every tree once the first lets go.
func TestViewsKeepOtherClustersNames(t *testing.T) {
	server := views(t)
	// The view takes the Services' own source: its records are the
	// default view's, so that only ownership can keep them out.
	east := startSite(t, "veast", "192.0.2.71", "--view=internal=status")
	west := startSite(t, "vwest", "192.0.2.72", "--view=internal=status")
	t.Cleanup(func() { stopSites(t, east, west) })
	inside := func(name string, want ...string) { t.Helper(); answersInside(t, server, quick, name, want...) }
	const solo = "vsolo.mc.example.org"
	east.publish(t, "vsolo", solo, false)
	within(t, quick, solo, east.addr)
	inside(solo, east.addr)

	west.publish(t, "vsolo", solo, false)
	west.expectEvent(t, "vsolo", "HostnameConflict", "cluster veast holds it")
	// West hands its view what it decides for vsolo before what it decides
	// for a Service made after it: once that one answers inside, vsolo has
	// had its chance.
	west.publish(t, "vafter", "vafter.mc.example.org", false)
	inside("vafter.mc.example.org", west.addr)
	viewOwners(t, "/skydns-internal/org/example/mc/vsolo/", "veast")
	if _, got, err := queryFrom(server, insideAddr, solo); err != nil || !slices.Equal(got, []string{east.addr}) {
		t.Fatalf("%s answers %q (%v) inside while vwest waits for it, want veast's address alone", solo, got, err)
	}

	east.remove(t, "vsolo")
	within(t, quick, solo, west.addr)
	inside(solo, west.addr)
}

// TestViewBlocksReload checks that a change of the views' blocks reaches a
// running CoreDNS: once the kubelet has written the ConfigMap's new files
// (here the test does, as the kubelet does: a new file renamed into place),
// the reloader beside CoreDNS (--watch, as coredns/deploy ships it) reloads
// it, and the view answers its new network.
func TestViewBlocksReload(t *testing.T) {
	server, dir, name := viewsCoreDNS(t)
	r, err := st.StartReloader("reloader-"+name, name, "--watch="+filepath.Join(dir, "*.view"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	namespace(t, "vreload")
	deploy(t, "vreload", "web", 1, "")
	lbService(t, "vreload", "web")
	host := "web.vreload.example.org"
	const moved = "127.0.0.4" // outside until the view's network moves there
	inside := func(limit time.Duration, in, out string) {
		t.Helper()
		stack.Eventually(t, limit, fmt.Sprintf("%s answers %s with the pods and %s with the nodes", host, in, out), func() (bool, string) {
			pods, nodeAddrs := endpointState(t, "vreload", "web")
			_, gotIn, err := queryFrom(server, in, host)
			if err != nil {
				return false, err.Error()
			}
			_, gotOut, err := queryFrom(server, out, host)
			if err != nil {
				return false, err.Error()
			}
			return len(pods) > 0 && slices.Equal(gotIn, pods) && slices.Equal(gotOut, nodeAddrs),
				fmt.Sprintf("%s: %q, %s: %q; the API: pods %q on nodes %q", in, gotIn, out, gotOut, pods, nodeAddrs)
		})
	}
	inside(slow, insideAddr, moved)

	path := filepath.Join(dir, stack.ViewsKey)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from := "incidr(client_ip(), '" + insideAddr + "/32')"
	if !strings.Contains(string(b), from) {
		t.Fatalf("%s has no %s:\n%s", path, from, b)
	}
	next := strings.Replace(string(b), from, "incidr(client_ip(), '"+moved+"/32')", 1)
	if err := os.WriteFile(path+".new", []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	inside(slow, moved, insideAddr)
	t.Logf("the view answered its new network %v after its file changed", time.Since(start).Round(time.Millisecond))
}

// TestViewsFollowTheClustersPolicy checks that a name several clusters share
// is answered in the views as the clusters' policy says, as in the default
// view: balanced, every cluster; failover, the preferred one, and the other
// once the preferred one lets go.
func TestViewsFollowTheClustersPolicy(t *testing.T) {
	server := views(t)
	east := startSite(t, "peast", "192.0.2.73", "--view=internal=status")
	west := startSite(t, "pwest", "192.0.2.74", "--view=internal=status")
	t.Cleanup(func() { stopSites(t, east, west) })
	inside := func(name string, want ...string) { t.Helper(); answersInside(t, server, slow, name, want...) }
	const balanced = "pbal.mc.example.org"
	east.publish(t, "pbal", balanced, true)
	west.publish(t, "pbal", balanced, true)
	within(t, slow, balanced, east.addr, west.addr)
	inside(balanced, east.addr, west.addr)

	const failover = "pfail.mc.example.org"
	policy := func(prio string) map[string]string {
		return map[string]string{"skylb.io/hostname": failover, "skylb.io/shared": "true",
			"skylb.io/cluster-policy": "failover", "skylb.io/cluster-priority": prio}
	}
	east.publishService(t, "pfail", policy("10"), 80, east.addr)
	within(t, slow, failover, east.addr)
	inside(failover, east.addr)
	west.publishService(t, "pfail", policy("20"), 80, west.addr)
	// West stands by: told once its claim says so.
	west.expectEvent(t, "pfail", "ClusterStandby", "")
	within(t, slow, failover, east.addr)
	inside(failover, east.addr)
	viewOwners(t, "/skydns-internal/org/example/mc/pfail/", "peast")
	east.remove(t, "pfail")
	within(t, slow, failover, west.addr)
	inside(failover, west.addr)
	viewOwners(t, "/skydns-internal/org/example/mc/pfail/", "pwest")
}

// answersInside waits up to limit until server answers name's A query from
// insideAddr with want.
func answersInside(t *testing.T, server string, limit time.Duration, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	stack.Eventually(t, limit, fmt.Sprintf("%s answers %q inside", name, want), func() (bool, string) {
		_, got, err := queryFrom(server, insideAddr, name)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}

// viewOwners checks that the owners of the records under prefix are want
// alone, and stay so for two seconds: a cluster that does not answer a name
// writes none of its records in a view, not even for a moment.
func viewOwners(t *testing.T, prefix string, want ...string) {
	t.Helper()
	owners := func() []string {
		resp, err := etcdAs(t, "coredns").Get(ctxT(t), prefix, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, kv := range resp.Kvs {
			var v struct{ Owner string }
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				t.Fatalf("%s: %v", kv.Key, err)
			}
			out = append(out, v.Owner)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	stack.Eventually(t, slow, fmt.Sprintf("the records under %s are %q's", prefix, want), func() (bool, string) {
		got := owners()
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got := owners(); !slices.Equal(got, want) {
			t.Fatalf("the records under %s are %q's, want %q's alone", prefix, got, want)
		}
	}
}
