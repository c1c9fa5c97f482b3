package stack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Query asks a DNS server (host:port) over UDP for name and qtype, and returns
// the rcode and, sorted, the addresses (A) or targets (NS) of the answer.
func Query(server, name string, qtype uint16) (int, []string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := (&dns.Client{Net: "udp", Timeout: time.Second}).Exchange(m, server)
	if err != nil {
		return 0, nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.NS:
			out = append(out, strings.TrimSuffix(v.Ns, "."))
		}
	}
	slices.Sort(out)
	return r.Rcode, out, nil
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
