package e2e

// The tests in this file ask the stack's CoreDNS, as skylb does with
// --coredns-address, whether it serves a zone: the one of its Corefile (the
// stack's SKYLB_ZONE and reverse zones) it does, any other it does not,
// and an etcd that is down changes nothing of that.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/dnsprobe"
	"github.com/skylb/skylb/test/stack"
)

func TestCoreDNSServesZones(t *testing.T) {
	type zoneCase struct {
		name string
		zone string
		want dnsprobe.Result
	}
	tests := []zoneCase{
		{name: "the stack's zone", zone: st.Zone, want: dnsprobe.Result{State: dnsprobe.Served, Answer: "its SOA"}},
		{name: "another zone", zone: "other.example", want: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "REFUSED"}},
		{name: "a zone beneath the stack's", zone: "lb." + st.Zone,
			want: dnsprobe.Result{State: dnsprobe.NotServed, Answer: "the SOA of " + st.Zone}},
	}
	for _, cidr := range reverseZones {
		rz, err := dnsname.ParseReverseZone(cidr)
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, zoneCase{name: "the reverse zone of " + cidr, zone: rz.Name, want: dnsprobe.Result{State: dnsprobe.Served, Answer: "its SOA"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dnsprobe.Query(ctxT(t), st.DNSAddr, tt.zone, 2*time.Second); got != tt.want {
				t.Errorf("Query(%s, %s) = %+v, want %+v", st.DNSAddr, tt.zone, got, tt.want)
			}
		})
	}
	t.Run("nothing listens", func(t *testing.T) {
		addr, err := stack.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if got := dnsprobe.Query(ctxT(t), addr, st.Zone, 500*time.Millisecond); got.State != dnsprobe.Unknown {
			t.Errorf("Query(%s, %s) = %+v, want unknown", addr, st.Zone, got)
		}
	})
}

// TestCoreDNSServesZonesWithEtcdDown: while CoreDNS cannot read etcd, and so
// answers no name it has not cached, it still serves the zone's SOA, which
// its etcd plugin makes up: an etcd outage is not taken for a zone CoreDNS
// does not serve.
func TestCoreDNSServesZonesWithEtcdDown(t *testing.T) {
	etcd := st.Proc("etcd")
	if err := etcd.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if !etcd.Running() {
			if err := etcd.Restart(ctx); err != nil {
				t.Fatalf("restart etcd: %v", err)
			}
		}
		// The next test finds skylb writing and CoreDNS reading etcd
		// again: CoreDNS's etcd client reconnects with a backoff.
		name := mark(t)
		within(t, time.Minute, name+".settle."+st.Zone, "203.0.113.250")
	})

	stack.Eventually(t, 30*time.Second, "CoreDNS fails a name it never answered", func() (bool, string) {
		r, err := stack.Exchange(st.DNSAddr, "never-asked-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"."+st.Zone, dns.TypeA)
		var netErr net.Error
		switch {
		case err != nil:
			return errors.As(err, &netErr) && netErr.Timeout(), err.Error()
		case r.Rcode == dns.RcodeServerFailure:
			return true, ""
		default:
			return false, dns.RcodeToString[r.Rcode]
		}
	})
	want := dnsprobe.Result{State: dnsprobe.Served, Answer: "its SOA"}
	if got := dnsprobe.Query(ctxT(t), st.DNSAddr, st.Zone, 2*time.Second); got != want {
		t.Errorf("Query(%s, %s) with etcd down = %+v, want %+v", st.DNSAddr, st.Zone, got, want)
	}
	want = dnsprobe.Result{State: dnsprobe.NotServed, Answer: "REFUSED"}
	if got := dnsprobe.Query(ctxT(t), st.DNSAddr, "other.example", 2*time.Second); got != want {
		t.Errorf("Query(%s, other.example) with etcd down = %+v, want %+v", st.DNSAddr, got, want)
	}
}
