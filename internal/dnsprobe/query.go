package dnsprobe

import (
	"context"
	"time"

	"github.com/miekg/dns"
)

// Query asks the server at addr (host:port) for the SOA record of zone's
// apex over UDP, and again over TCP when the reply is truncated, each within
// timeout, and classifies the reply (Classify). A query that gets no reply
// is Unknown, its error the Answer.
func Query(ctx context.Context, addr, zone string, timeout time.Duration) Result {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	// An authoritative server answers from its zones; a resolver asked to
	// recurse would answer from elsewhere.
	m.RecursionDesired = false
	r, err := exchange(ctx, "udp", addr, m, timeout)
	if err == nil && r.Truncated {
		r, err = exchange(ctx, "tcp", addr, m, timeout)
	}
	if err != nil {
		return Result{Unknown, err.Error()}
	}
	return Classify(zone, r)
}

// exchange sends m to addr over network and returns the reply.
func exchange(ctx context.Context, network, addr string, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &dns.Client{Net: network, Timeout: timeout}
	r, _, err := c.ExchangeContext(ctx, m, addr)
	return r, err
}
