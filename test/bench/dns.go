package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// prober asks one CoreDNS for A records over UDP, one query at a time.
type prober struct {
	conn *net.UDPConn
	id   uint16
	buf  []byte
}

func newProber(addr string) (*prober, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	if !ua.IP.IsLoopback() {
		return nil, fmt.Errorf("%s is not a loopback address", addr)
	}
	c, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, err
	}
	return &prober{conn: c, id: uint16(rand.Uint32()), buf: make([]byte, 4096)}, nil
}

func (p *prober) Close() error { return p.conn.Close() }

// query returns the rcode and the sorted A records of name.
func (p *prober) query(name string) (int, []string, error) {
	p.id++
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.Id = p.id
	b, err := m.Pack()
	if err != nil {
		return 0, nil, err
	}
	if _, err := p.conn.Write(b); err != nil {
		return 0, nil, err
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		_ = p.conn.SetReadDeadline(deadline)
		n, err := p.conn.Read(p.buf)
		if err != nil {
			return 0, nil, err
		}
		r := new(dns.Msg)
		if err := r.Unpack(p.buf[:n]); err != nil || r.Id != p.id {
			continue // a late answer to an earlier query
		}
		var out []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				out = append(out, a.A.String())
			}
		}
		slices.Sort(out)
		return r.Rcode, out, nil
	}
}

// waitAnswer polls name every millisecond until CoreDNS answers exactly want
// (NXDOMAIN or no A record when want is empty) and returns when the matching
// answer arrived. It gives up after limit.
func (p *prober) waitAnswer(ctx context.Context, name string, want []string, limit time.Duration) (time.Time, error) {
	want = slices.Sorted(slices.Values(want))
	start := time.Now()
	var last string
	for tick := start; ; {
		rcode, got, err := p.query(name)
		now := time.Now()
		switch {
		case err != nil:
			last = err.Error()
		case len(want) == 0 && (rcode == dns.RcodeNameError || rcode == dns.RcodeSuccess && len(got) == 0):
			return now, nil
		case len(want) > 0 && rcode == dns.RcodeSuccess && slices.Equal(got, want):
			return now, nil
		default:
			last = fmt.Sprintf("%s %v", dns.RcodeToString[rcode], got)
		}
		if now.Sub(start) > limit {
			return now, fmt.Errorf("%s: CoreDNS still answers %s after %v, want %v", name, last, limit, want)
		}
		if err := ctx.Err(); err != nil {
			return now, err
		}
		// Next query on the next millisecond tick.
		for !tick.After(now) {
			tick = tick.Add(time.Millisecond)
		}
		time.Sleep(time.Until(tick))
	}
}

// waitCount polls name every millisecond until CoreDNS answers n A records
// (NXDOMAIN for 0), and returns when that answer arrived.
func (p *prober) waitCount(ctx context.Context, name string, n int, limit time.Duration) (time.Time, error) {
	start := time.Now()
	var last string
	for tick := start; ; {
		rcode, got, err := p.query(name)
		now := time.Now()
		switch {
		case err != nil:
			last = err.Error()
		case n == 0 && rcode == dns.RcodeNameError, n > 0 && rcode == dns.RcodeSuccess && len(got) == n:
			return now, nil
		default:
			last = fmt.Sprintf("%s %v", dns.RcodeToString[rcode], got)
		}
		if now.Sub(start) > limit {
			return now, fmt.Errorf("%s: CoreDNS still answers %s after %v, want %d addresses", name, last, limit, n)
		}
		if err := ctx.Err(); err != nil {
			return now, err
		}
		for !tick.After(now) {
			tick = tick.Add(time.Millisecond)
		}
		time.Sleep(time.Until(tick))
	}
}
