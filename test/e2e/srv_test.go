package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skylb/skylb/test/stack"
)

// srvAnswer asks CoreDNS for the SRV records of name and returns the rcode,
// the records as "priority weight port target" sorted, and the addresses of
// the additional section.
func srvAnswer(name string) (int, []string, []string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeSRV)
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	r, _, err := c.Exchange(m, st.DNSAddr)
	if err != nil {
		return 0, nil, nil, err
	}
	var out, extra []string
	for _, rr := range r.Answer {
		if v, ok := rr.(*dns.SRV); ok {
			out = append(out, fmt.Sprintf("%d %d %d %s", v.Priority, v.Weight, v.Port, strings.TrimSuffix(v.Target, ".")))
		}
	}
	for _, rr := range r.Extra {
		if v, ok := rr.(*dns.A); ok {
			extra = append(extra, v.A.String())
		}
	}
	slices.Sort(out)
	slices.Sort(extra)
	return r.Rcode, out, extra, nil
}

// withinSRV waits up to limit for CoreDNS to answer the SRV query of name
// with exactly want, or NXDOMAIN when want is empty.
func withinSRV(t *testing.T, limit time.Duration, name string, want ...string) []string {
	t.Helper()
	slices.Sort(want)
	start := time.Now()
	for {
		rcode, got, extra, err := srvAnswer(name)
		if err == nil && (len(want) == 0 && rcode == dns.RcodeNameError || len(want) > 0 && slices.Equal(got, want)) {
			return extra
		}
		if time.Since(start) > limit {
			t.Fatalf("SRV %s: CoreDNS answers %s %q (%v) after %v, want %q (NXDOMAIN if empty)", name, dns.RcodeToString[rcode], got, err, limit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ports(ps ...corev1.ServicePort) svcOpt {
	return func(s *corev1.Service) { s.Spec.Ports = ps }
}

// TestSRV asks CoreDNS for the SRV records of Services' named ports: the
// Service port for nodes, the target port for pods, none for an unnamed port
// or with the annotation off, and checks that the names' A and AAAA answers
// are exactly the addresses, as without SRV records.
func TestSRV(t *testing.T) {
	namespace(t, "srv")
	deploy(t, "srv", "web", 1, "node-1")
	deploy(t, "srv", "direct", 1, "node-3")
	deploy(t, "srv", "quiet", 1, "node-3")
	http := corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}
	sip := corev1.ServicePort{Name: "sip", Port: 5060, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolUDP}
	lbService(t, "srv", "web", ports(http, sip))
	lbService(t, "srv", "direct", ports(http), annotate("skylb.io/address-source", "pods"))
	// A port of its own: web holds 80 at the nodes' addresses (PortConflict).
	quiet := http
	quiet.Port = 81
	lbService(t, "srv", "quiet", ports(quiet), annotate("skylb.io/srv", "false"))

	// nodes: the Service port on the node's address.
	within(t, slow, "web.srv.example.org", "192.0.2.11")
	extra := withinSRV(t, quick, "_http._tcp.web.srv.example.org", "10 100 80 web.srv.example.org")
	if want := []string{"192.0.2.11"}; !slices.Equal(extra, want) {
		t.Errorf("SRV _http._tcp.web.srv.example.org: additional A records %q, want %q", extra, want)
	}
	withinSRV(t, quick, "_sip._udp.web.srv.example.org", "10 100 5060 web.srv.example.org")
	withinSRV(t, quick, "_sip._tcp.web.srv.example.org")
	// The name's own answers are its addresses alone: no CNAME, nothing else
	// (the Service is IPv4 only, so no AAAA).
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		rcode, got, err := stack.Query(st.DNSAddr, "web.srv.example.org", qtype)
		want := map[uint16][]string{dns.TypeA: {"192.0.2.11"}, dns.TypeAAAA: nil}[qtype]
		if err != nil || rcode != dns.RcodeSuccess || !slices.Equal(got, want) {
			t.Errorf("%s web.srv.example.org = %s %q (%v), want %q", dns.TypeToString[qtype], dns.RcodeToString[rcode], got, err, want)
		}
	}

	// pods: the target port on the pod's address.
	stack.Eventually(t, slow, "pods Service published", func() (bool, string) {
		got, _, err := addresses("direct.srv.example.org")
		return err == nil && len(got) == 1 && strings.HasPrefix(got[0], "10.244.3."), fmt.Sprintf("%q %v", got, err)
	})
	withinSRV(t, quick, "_http._tcp.direct.srv.example.org", "10 100 8080 direct.srv.example.org")
	got, _, _ := addresses("direct.srv.example.org")
	if len(got) != 1 || strings.HasPrefix(got[0], "CNAME") {
		t.Errorf("direct.srv.example.org answers %q, want one pod address", got)
	}

	// Off by annotation: the name resolves, no SRV records.
	within(t, slow, "quiet.srv.example.org", "192.0.2.13")
	withinSRV(t, quick, "_http._tcp.quiet.srv.example.org")

	// The records go with the Service's addresses.
	scale(t, "srv", "web", 0)
	within(t, slow, "web.srv.example.org")
	withinSRV(t, quick, "_http._tcp.web.srv.example.org")
}
