package dnsprobe

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// How the test server answers the SOA query of a zone.
const (
	serve     = "serve"     // NOERROR, authoritative, the zone's SOA
	refuse    = "refuse"    // REFUSED, as CoreDNS answers a zone of no server block
	servfail  = "servfail"  // SERVFAIL
	drop      = "drop"      // no reply
	truncate  = "truncate"  // over UDP an empty reply with TC set; over TCP as serve
	parentSOA = "parentSOA" // NOERROR, authoritative, the SOA of the parent zone
)

// server is a DNS server on loopback, UDP and TCP on one port, that answers
// each zone as its modes say.
type server struct {
	addr string

	mu      sync.Mutex
	modes   map[string][]string // by zone (FQDN): the modes of the next queries, the last one kept
	queries map[string]int      // by zone (FQDN) and "tcp"
}

// startServer starts a server answering each zone of modes with the modes
// given, in turn, the last one for every query after.
func startServer(t *testing.T, modes map[string][]string) *server {
	t.Helper()
	s := &server{modes: map[string][]string{}, queries: map[string]int{}}
	for z, m := range modes {
		s.modes[dns.Fqdn(z)] = m
	}
	var (
		pc net.PacketConn
		l  net.Listener
	)
	for range 20 {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		if l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			s.addr = l.Addr().String()
			break
		}
		pc.Close()
	}
	if s.addr == "" {
		t.Fatal("no loopback port free for both UDP and TCP")
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: s}, {Listener: l, Handler: s}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return s
}

// set makes the server answer zone with modes from now on.
func (s *server) set(zone string, modes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modes[dns.Fqdn(zone)] = modes
}

// count returns the queries about zone so far, or those over TCP for "tcp".
func (s *server) count(zone string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if zone == "tcp" {
		return s.queries[zone]
	}
	return s.queries[dns.Fqdn(zone)]
}

// waitQueries waits until the server has had n queries about zone.
func (s *server) waitQueries(t *testing.T, zone string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.count(zone) < n {
		if time.Now().After(deadline) {
			t.Fatalf("Got %d queries about %s, want %d", s.count(zone), zone, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ServeDNS answers r as the mode of its zone says.
func (s *server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	zone := r.Question[0].Name
	tcp := w.LocalAddr().Network() == "tcp"
	s.mu.Lock()
	s.queries[zone]++
	if tcp {
		s.queries["tcp"]++
	}
	mode := refuse
	if m := s.modes[zone]; len(m) > 0 {
		mode = m[0]
		if len(m) > 1 {
			s.modes[zone] = m[1:]
		}
	}
	s.mu.Unlock()

	m := new(dns.Msg)
	switch mode {
	case drop:
		return
	case refuse:
		m.SetRcode(r, dns.RcodeRefused)
	case servfail:
		m.SetRcode(r, dns.RcodeServerFailure)
	case truncate:
		m.SetReply(r)
		if !tcp {
			m.Truncated = true
			break
		}
		m.Authoritative = true
		m.Answer = append(m.Answer, soaRR(zone))
	case serve:
		m.SetReply(r)
		m.Authoritative = true
		m.Answer = append(m.Answer, soaRR(zone))
	case parentSOA:
		m.SetReply(r)
		m.Authoritative = true
		_, parent, _ := cutLabel(zone)
		m.Answer = append(m.Answer, soaRR(parent))
	}
	w.WriteMsg(m)
}

// soaRR returns the SOA record of zone as CoreDNS's etcd plugin makes it up.
func soaRR(zone string) dns.RR {
	rr, err := dns.NewRR(soa(zone))
	if err != nil {
		panic(err)
	}
	return rr
}

// cutLabel splits name into its first label and the rest.
func cutLabel(name string) (string, string, bool) {
	for i := range len(name) {
		if name[i] == '.' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}
