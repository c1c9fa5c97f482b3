package stack

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Exchange asks a DNS server over UDP for name and qtype and returns its
// message. A server without a port is asked on port 53.
func Exchange(server, name string, qtype uint16) (*dns.Msg, error) {
	if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, "53")
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := (&dns.Client{Net: "udp", Timeout: 3 * time.Second}).Exchange(m, server)
	return r, err
}

// Query asks a DNS server (host:port) over UDP for name and qtype, and returns
// the rcode and Answers of the reply.
func Query(server, name string, qtype uint16) (int, []string, error) {
	r, err := Exchange(server, name, qtype)
	if err != nil {
		return 0, nil, err
	}
	return r.Rcode, Answers(r), nil
}

// Answers returns, sorted, the data of the answer section of m: the addresses
// (A, AAAA), the targets of NS records without the final dot, "CNAME target"
// for a CNAME, "PTR target" for a PTR, "SRV port target" for an SRV record
// and "TXT" followed by each string of a TXT record, quoted; nothing for a
// nil message.
func Answers(m *dns.Msg) []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, rr := range m.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		case *dns.NS:
			out = append(out, strings.TrimSuffix(v.Ns, "."))
		case *dns.CNAME:
			out = append(out, "CNAME "+strings.TrimSuffix(v.Target, "."))
		case *dns.PTR:
			out = append(out, "PTR "+strings.TrimSuffix(v.Ptr, "."))
		case *dns.SRV:
			out = append(out, fmt.Sprintf("SRV %d %s", v.Port, strings.TrimSuffix(v.Target, ".")))
		case *dns.TXT:
			s := "TXT"
			for _, t := range v.Txt {
				s += " " + strconv.Quote(t)
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Root returns the repository root (FindRoot), failing t when there is none.
func Root(t testing.TB) string {
	t.Helper()
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
