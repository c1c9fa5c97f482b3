package source

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// DefaultDeniedCIDRs are never published unless --denied-cidrs replaces them:
// loopback, link-local, unspecified and multicast addresses. A name pointing
// there sends clients to themselves or nowhere; whoever can write a Service's
// status must not be able to do that (the CVE-2020-8554 class).
var DefaultDeniedCIDRs = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("ff00::/8"),
}

// ParseCIDRs parses a list of CIDRs; a bare address is a single-address prefix.
func ParseCIDRs(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR nor an address", s)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Filter decides which addresses may be published.
type Filter struct {
	Denied  []netip.Prefix // never published
	Allowed []netip.Prefix // when not empty, only these are published
}

// Permits reports whether addr may be published.
func (f Filter) Permits(addr netip.Addr) bool {
	if slices.ContainsFunc(f.Denied, func(p netip.Prefix) bool { return p.Contains(addr) }) {
		return false
	}
	return len(f.Allowed) == 0 || slices.ContainsFunc(f.Allowed, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// apply drops the addresses the filter refuses and records a problem naming them.
func (f Filter) apply(p *Publication) {
	var refused []string
	p.Addresses = slices.DeleteFunc(p.Addresses, func(a netip.Addr) bool {
		if f.Permits(a) {
			return false
		}
		refused = append(refused, a.String())
		return true
	})
	if len(refused) > 0 {
		p.problem(ReasonAddressRefused, "addresses %s are not published: they are denied by --denied-cidrs or not in --allowed-cidrs", strings.Join(refused, ", "))
	}
}

// ParsePrefix parses a network, ADDRESS/LENGTH, and returns it masked. Its
// error says what is wrong in a user's words.
func ParsePrefix(s string) (netip.Prefix, error) {
	addr, length, ok := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if !ok || err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a network: want ADDRESS/LENGTH, e.g. 10.0.0.0/8 or 2001:db8::/32", s)
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a network: the length %s is not a number from 0 to %d", s, length, a.BitLen())
	}
	return p.Masked(), nil
}
