package dnsname

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The parents of the reverse names (RFC 1035 section 3.5, RFC 3596 section 2.5).
const (
	ReverseSuffix4 = "in-addr.arpa"
	ReverseSuffix6 = "ip6.arpa"
)

// ErrReverseZone is returned (wrapped) by ParseReverseZone.
var ErrReverseZone = errors.New("invalid reverse zone")

// ReverseZone is a zone of reverse names skylb publishes PTR records in: the
// addresses of Prefix, whose reverse names lie beneath Name
// (2.0.192.in-addr.arpa for 192.0.2.0/24).
type ReverseZone struct {
	Prefix netip.Prefix
	Name   string
}

// WithReverse returns the names of zones followed by those of the reverse
// zones rev: every zone skylb publishes in.
func WithReverse(zones []string, rev []ReverseZone) []string {
	out := slices.Clone(zones)
	for _, z := range rev {
		out = append(out, z.Name)
	}
	return out
}

// ParseReverseZone parses a CIDR such as 192.0.2.0/24 or 2001:db8::/32 into
// the reverse zone that holds its addresses. A reverse zone is a name, so its
// prefix falls on a label boundary: an octet for IPv4 (/8, /16, /24), a
// nibble for IPv6 (/4 to /124 in steps of 4). Other lengths are refused:
// classless delegation (RFC 2317) needs CNAME records in the parent zone
// that skylb does not write. So are host bits and IPv4-mapped IPv6 prefixes.
func ParseReverseZone(s string) (ReverseZone, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return ReverseZone{}, fmt.Errorf("%w: %q is not a CIDR such as 192.0.2.0/24 or 2001:db8::/32", ErrReverseZone, s)
	}
	if p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return ReverseZone{}, fmt.Errorf("%w: %s: give IPv4 prefixes as IPv4", ErrReverseZone, p)
	}
	if m := p.Masked(); m != p {
		return ReverseZone{}, fmt.Errorf("%w: %s has host bits set: did you mean %s?", ErrReverseZone, p, m)
	}
	step, suffix := 8, ReverseSuffix4
	if p.Addr().Is6() {
		step, suffix = 4, ReverseSuffix6
	}
	if p.Bits() == 0 || p.Bits() == p.Addr().BitLen() || p.Bits()%step != 0 {
		if step == 8 {
			return ReverseZone{}, fmt.Errorf("%w: %s: an %s zone covers a /8, /16 or /24 (its labels are octets); classless delegation (RFC 2317) is not supported: list the /24s instead", ErrReverseZone, p, suffix)
		}
		return ReverseZone{}, fmt.Errorf("%w: %s: an %s zone covers a prefix of /4 to /124 in steps of 4 (its labels are nibbles)", ErrReverseZone, p, suffix)
	}
	labels := reverseLabels(p.Addr())
	return ReverseZone{Prefix: p, Name: strings.Join(labels[len(labels)-p.Bits()/step:], ".") + "." + suffix}, nil
}

// ParseReverseZones parses every CIDR and refuses a zone given twice or
// within another.
func ParseReverseZones(in []string) ([]ReverseZone, error) {
	out := make([]ReverseZone, 0, len(in))
	for _, s := range in {
		z, err := ParseReverseZone(s)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Prefix.Overlaps(z.Prefix) {
				return nil, fmt.Errorf("%w: %s overlaps %s", ErrReverseZone, z.Prefix, o.Prefix)
			}
		}
		out = append(out, z)
	}
	return out, nil
}

// ReverseName returns the name a PTR query for addr asks:
// 10.2.0.192.in-addr.arpa for 192.0.2.10, the 32 nibbles of an IPv6 address
// in reverse order under ip6.arpa. An IPv4-mapped IPv6 address is taken as
// its IPv4 address.
func ReverseName(addr netip.Addr) string {
	addr = addr.Unmap()
	suffix := ReverseSuffix4
	if addr.Is6() {
		suffix = ReverseSuffix6
	}
	return strings.Join(reverseLabels(addr), ".") + "." + suffix
}

// reverseLabels returns the labels of addr's reverse name before its suffix,
// least significant first.
func reverseLabels(addr netip.Addr) []string {
	b := addr.AsSlice()
	if addr.Is4() {
		out := make([]string, 0, 4)
		for i := len(b) - 1; i >= 0; i-- {
			out = append(out, strconv.Itoa(int(b[i])))
		}
		return out
	}
	const hex = "0123456789abcdef"
	out := make([]string, 0, 32)
	for i := len(b) - 1; i >= 0; i-- {
		out = append(out, hex[b[i]&0xf:b[i]&0xf+1], hex[b[i]>>4:b[i]>>4+1])
	}
	return out
}

// ReverseAddr returns the address whose reverse name is name, exactly as
// ReverseName writes it (lower case, no leading zeros, no trailing dot). It
// reports false for any other name, those of reverse zones and the names
// beneath an address's reverse name included.
func ReverseAddr(name string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(name, "."+ReverseSuffix4); ok {
		labels := strings.Split(rest, ".")
		if len(labels) != 4 {
			return netip.Addr{}, false
		}
		var b [4]byte
		for i, l := range labels {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != l {
				return netip.Addr{}, false
			}
			b[3-i] = byte(n)
		}
		return netip.AddrFrom4(b), true
	}
	if rest, ok := strings.CutSuffix(name, "."+ReverseSuffix6); ok {
		if len(rest) != 63 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i := range 32 {
			if i > 0 && rest[2*i-1] != '.' {
				return netip.Addr{}, false
			}
			n := strings.IndexByte("0123456789abcdef", rest[2*i])
			if n < 0 {
				return netip.Addr{}, false
			}
			// Nibble i counts from the least significant end.
			if i%2 == 0 {
				b[15-i/2] |= byte(n)
			} else {
				b[15-i/2] |= byte(n) << 4
			}
		}
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

// IsReverse reports whether name equals or lies beneath in-addr.arpa or
// ip6.arpa: it is no host name to publish addresses at.
func IsReverse(name string) bool {
	return IsWithin(name, ReverseSuffix4) || IsWithin(name, ReverseSuffix6)
}
