package app

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

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/dnsprobe"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
)

// sentEvent is an Event as the recorder was given it.
type sentEvent struct {
	Ref                   corev1.ObjectReference
	Type, Reason, Message string
}

// eventLog records the Events it is given.
type eventLog struct {
	mu     sync.Mutex
	events []sentEvent
}

func (l *eventLog) Event(obj runtime.Object, eventtype, reason, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, sentEvent{*obj.(*corev1.ObjectReference), eventtype, reason, message})
}

func (l *eventLog) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	l.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (l *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	l.Eventf(obj, eventtype, reason, messageFmt, args...)
}

func TestZoneReporter(t *testing.T) {
	const addr = "coredns.skylb-coredns.svc:53"
	leaseRef := corev1.ObjectReference{Kind: "Lease", APIVersion: "coordination.k8s.io/v1", Namespace: "skylb", Name: "skylb"}
	withUID := leaseRef
	withUID.UID = "uid-lease"
	notServed := "CoreDNS at " + addr + " does not serve zone b.example.org (REFUSED): its Corefile's zones differ from --zone; records of b.example.org are published but not answered"
	tests := []struct {
		name    string
		leader  bool
		dryRun  bool
		lease   bool // the Lease exists
		change  dnsprobe.Change
		level   logrus.Level
		message string
		want    []sentEvent
	}{
		{
			name: "not served: a warning and a Warning Event on the Lease", leader: true, lease: true,
			change: dnsprobe.Change{Zone: "b.example.org", Result: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "REFUSED"}},
			level:  logrus.WarnLevel, message: notServed,
			want: []sentEvent{{withUID, corev1.EventTypeWarning, "ZoneNotServed", notServed}},
		},
		{
			name: "the Lease not there yet: the Event without its UID", leader: true,
			change: dnsprobe.Change{Zone: "b.example.org", Result: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "REFUSED"}},
			level:  logrus.WarnLevel, message: notServed,
			want: []sentEvent{{leaseRef, corev1.EventTypeWarning, "ZoneNotServed", notServed}},
		},
		{
			name: "without leader election: no Event", lease: true,
			change: dnsprobe.Change{Zone: "b.example.org", Result: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "REFUSED"}},
			level:  logrus.WarnLevel, message: notServed,
		},
		{
			name: "a dry run: no Event", leader: true, dryRun: true, lease: true,
			change: dnsprobe.Change{Zone: "b.example.org", Result: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "REFUSED"}},
			level:  logrus.WarnLevel, message: notServed,
		},
		{
			name: "a reverse zone names its flag", leader: true, lease: true,
			change: dnsprobe.Change{Zone: "2.0.192.in-addr.arpa", Result: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "the SOA of 0.192.in-addr.arpa"}},
			level:  logrus.WarnLevel,
			message: "CoreDNS at " + addr + " does not serve zone 2.0.192.in-addr.arpa (the SOA of 0.192.in-addr.arpa): its Corefile's zones differ from --reverse-zone; " +
				"records of 2.0.192.in-addr.arpa are published but not answered",
			want: []sentEvent{{withUID, corev1.EventTypeWarning, "ZoneNotServed", "CoreDNS at " + addr + " does not serve zone 2.0.192.in-addr.arpa (the SOA of 0.192.in-addr.arpa): " +
				"its Corefile's zones differ from --reverse-zone; records of 2.0.192.in-addr.arpa are published but not answered"}},
		},
		{
			name: "served again: an info line and a Normal Event", leader: true, lease: true,
			change: dnsprobe.Change{Zone: "b.example.org", Result: dnsprobe.Result{State: dnsprobe.Served, Answer: "its SOA"}, Prev: dnsprobe.NotServed},
			level:  logrus.InfoLevel, message: "CoreDNS at " + addr + " serves zone b.example.org again",
			want: []sentEvent{{withUID, corev1.EventTypeNormal, "ZoneServed", "CoreDNS at " + addr + " serves zone b.example.org again"}},
		},
		{
			name: "served from the start: an info line, no Event", leader: true, lease: true,
			change: dnsprobe.Change{Zone: "example.org", Result: dnsprobe.Result{State: dnsprobe.Served, Answer: "its SOA"}},
			level:  logrus.InfoLevel, message: "CoreDNS at " + addr + " serves zone example.org",
		},
		{
			name: "no answer at start: a warning, no Event", leader: true, lease: true,
			change:  dnsprobe.Change{Zone: "example.org", Result: dnsprobe.Result{State: dnsprobe.Unknown, Answer: "i/o timeout"}},
			level:   logrus.WarnLevel,
			message: "cannot tell whether CoreDNS at " + addr + " serves zone example.org (i/o timeout): no answer that tells since the start; asking again every 1m0s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			log, hook := logtest.NewNullLogger()
			cfg.Log = log
			cfg.CoreDNSAddress, cfg.Controller.DryRun = addr, tt.dryRun
			cfg.Controller.ReverseZones = []dnsname.ReverseZone{{Name: "2.0.192.in-addr.arpa"}}
			if tt.leader {
				cfg.LeaderElect = true
				cfg.Leader.Namespace, cfg.Leader.Name = "skylb", "skylb"
			}
			var objs []runtime.Object
			if tt.lease {
				objs = append(objs, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "skylb", Name: "skylb", UID: "uid-lease"}})
			}
			events := &eventLog{}
			newZoneReporter(cfg, kubefake.New(objs...), events).report(context.Background(), tt.change)

			entries := hook.AllEntries()
			if len(entries) != 1 {
				t.Fatalf("Got %d log lines, want 1", len(entries))
			}
			if e := entries[0]; e.Level != tt.level || e.Message != tt.message || e.Data["zone"] != tt.change.Zone || e.Data["address"] != addr {
				t.Errorf("Got log line %v %q %v, want %v %q with the zone and the address", e.Level, e.Message, e.Data, tt.level, tt.message)
			}
			if diff := cmp.Diff(tt.want, events.events); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestZoneCheckerOff: no check without an address, nor with Once.
func TestZoneCheckerOff(t *testing.T) {
	cfg := testConfig(t)
	if c := zoneChecker(cfg, kubefake.New(), &eventLog{}); c != nil {
		t.Errorf("zoneChecker without an address = %v, want nil", c)
	}
	cfg.CoreDNSAddress, cfg.Once = "127.0.0.1:53", true
	if c := zoneChecker(cfg, kubefake.New(), &eventLog{}); c != nil {
		t.Errorf("zoneChecker with Once = %v, want nil", c)
	}
	cfg.Once = false
	if c := zoneChecker(cfg, kubefake.New(), &eventLog{}); c == nil {
		t.Error("zoneChecker with an address = nil, want a checker")
	} else if got := c.States(); !cmp.Equal(got, map[string]dnsprobe.State{"example.org": dnsprobe.Unknown}) {
		t.Errorf("States() before Run = %v, want example.org unknown", got)
	}
}

// soaServer is a DNS server on loopback, over UDP, that answers the SOA
// query of each zone of served as CoreDNS's etcd plugin does, and refuses
// every other, as CoreDNS does a zone of no server block.
func soaServer(t *testing.T, served ...string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		zone := r.Question[0].Name
		if !slices.Contains(served, strings.TrimSuffix(zone, ".")) {
			w.WriteMsg(m.SetRcode(r, dns.RcodeRefused))
			return
		}
		m.SetReply(r)
		m.Authoritative = true
		m.Answer = append(m.Answer, &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 30},
			Ns: "ns.dns." + zone, Mbox: "hostmaster." + zone, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: 30})
		w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

// TestRunChecksZones runs skylb with leader election against a CoreDNS
// that serves one of its two zones: within 10 s of the start, the zone not
// served has a warning, skylb_zone_served 0 and a ZoneNotServed Event on the
// Lease, and the zone served skylb_zone_served 1.
func TestRunChecksZones(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.NewClient(t)
	cfg := replicaConfig(t)
	zones, err := dnsname.ParseZones([]string{"example.org", "b.example.org"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Controller.Source.Zones = zones
	cfg.CoreDNSAddress = soaServer(t, "example.org")
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	cfg.Log = log
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPAddress = l.Addr().String()
	l.Close()
	kube := fake.NewClientset(webService())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Run(ctx, cfg, Clients{Kube: kubefake.For(kube)}, etcd) }()
	defer func() {
		cancel()
		<-done
	}()

	warning := "CoreDNS at " + cfg.CoreDNSAddress + " does not serve zone b.example.org (REFUSED): its Corefile's zones differ from --zone; " +
		"records of b.example.org are published but not answered"
	var last string
	for {
		logged := slices.ContainsFunc(hook.AllEntries(), func(e *logrus.Entry) bool {
			return e.Level == logrus.WarnLevel && e.Message == warning
		})
		metrics := scrape(t, cfg.HTTPAddress)
		evs, err := kube.CoreV1().Events("skylb").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		event := slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && e.Reason == "ZoneNotServed" && e.Message == warning &&
				e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == "skylb"
		})
		served := strings.Contains(metrics, `skylb_zone_served{zone="example.org"} 1`)
		notServed := strings.Contains(metrics, `skylb_zone_served{zone="b.example.org"} 0`)
		if logged && event && served && notServed {
			break
		}
		last = fmt.Sprintf("log line %v, Event %v, metric of example.org 1 %v, of b.example.org 0 %v", logged, event, served, notServed)
		if time.Since(start) > 10*time.Second {
			t.Fatalf("10s after the start: %s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("found not served and said so in %v", time.Since(start).Round(time.Millisecond))
}

// scrape returns the metrics served at addr, or "" while it does not answer.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ""
	}
	return string(b)
}
