// Package zone computes the records skylb keeps for each zone itself, besides
// those of the objects it publishes, so that a parent zone can delegate to the
// zone and resolvers get sound answers at its apex.
//
// CoreDNS's etcd plugin answers an NS query at the apex only from the keys
// under dns/ns of the zone, each naming one nameserver after the key's last
// segment (/skydns/org/example/dns/ns/ns1 is ns1.ns.dns.example.org, with its
// host, which must be an IP address, as glue); with none the query answers
// NXDOMAIN. skylb publishes the zone's nameservers there, labelled ns1, ns2, …
// by address unless a label is given.
//
// An A or AAAA query at the apex with nothing under dns/apex answers with every
// address of the zone. skylb stores a guard there when no object publishes the
// apex: a record whose host is the zone itself. CoreDNS reads it as a CNAME of
// the apex to the apex, skips it as a loop, and answers NOERROR with no data.
package zone

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
)

// Sources of the records skylb keeps for a zone, as written in their values.
const (
	// SourceGuard is the source of the apex guard.
	SourceGuard = "apex-guard"
	// SourceSelector is the source of nameservers found in the cluster.
	SourceSelector = "nameserver/selector"
	// sourceFlag prefixes the label of nameservers given on the command line.
	sourceFlag = "nameserver/"
)

// MinNameservers is the number of nameservers a delegated zone needs (RFC 1034,
// section 4.1: at least two, on independent servers).
const MinNameservers = 2

// NSName returns the stored name of a zone's nameserver records.
func NSName(zone string) string { return "ns.dns." + zone }

// Nameserver is one DNS server of the zones, as the parent delegates to it.
type Nameserver struct {
	Label  string // the nameserver is <Label>.ns.dns.<zone>
	Addr   netip.Addr
	Source string // "nameserver/<label>" when given on the command line, else SourceSelector
}

// Host returns the name of the nameserver in zone.
func (n Nameserver) Host(zone string) string { return n.Label + "." + NSName(zone) }

// Static is a nameserver given on the command line; Label may be empty.
type Static struct {
	Label string
	Addr  netip.Addr
}

// ParseStatic parses "label=IP" or "IP". The label is lower-cased and must be a
// DNS label other than the wildcard "any".
func ParseStatic(s string) (Static, error) {
	s = strings.TrimSpace(s)
	label, addr, hasLabel := strings.Cut(s, "=")
	if !hasLabel {
		label, addr = "", s
	}
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil || a.Zone() != "" {
		return Static{}, fmt.Errorf("%q: %q is not an IP address", s, addr)
	}
	a = a.Unmap()
	if a.IsUnspecified() || a.IsMulticast() {
		return Static{}, fmt.Errorf("%q: %s cannot be a nameserver", s, a)
	}
	if hasLabel {
		label = strings.ToLower(strings.TrimSpace(label))
		if !dnsname.IsLabel(label) || label == "any" {
			return Static{}, fmt.Errorf("%q: %q is not a DNS label", s, label)
		}
	}
	return Static{Label: label, Addr: a}, nil
}

// ParseStatics parses every --nameserver value and checks that no label or
// address is given twice and that every nameserver name fits in every zone.
func ParseStatics(in []string, zones []string) ([]Static, error) {
	var out []Static
	for _, s := range in {
		st, err := ParseStatic(s)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Addr == st.Addr {
				return nil, fmt.Errorf("%s is given twice", st.Addr)
			}
			if st.Label != "" && o.Label == st.Label {
				return nil, fmt.Errorf("label %q is given twice", st.Label)
			}
		}
		if st.Label != "" {
			for _, z := range zones {
				if n := st.Label + "." + NSName(z); len(n) > dnsname.MaxNameLength {
					return nil, fmt.Errorf("%q: %s is longer than %d characters", s, n, dnsname.MaxNameLength)
				}
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// Assign labels the nameservers: those given with a label keep it; the others
// given on the command line and the addresses found in the cluster get ns1,
// ns2, … in address order, skipping the labels taken. An address found in the
// cluster that is also given on the command line is kept once, as given. The
// result is sorted by label number, then label.
func Assign(static []Static, found []netip.Addr) []Nameserver {
	taken := make(map[string]bool)
	given := make(map[netip.Addr]bool)
	var out []Nameserver
	type unlabelled struct {
		addr   netip.Addr
		source string
	}
	var rest []unlabelled
	for _, s := range static {
		given[s.Addr] = true
		if s.Label != "" {
			taken[s.Label] = true
			out = append(out, Nameserver{Label: s.Label, Addr: s.Addr, Source: sourceFlag + s.Label})
			continue
		}
		rest = append(rest, unlabelled{addr: s.Addr})
	}
	for _, a := range found {
		a = a.Unmap()
		if given[a] {
			continue
		}
		given[a] = true
		rest = append(rest, unlabelled{addr: a, source: SourceSelector})
	}
	slices.SortFunc(rest, func(a, b unlabelled) int { return a.addr.Compare(b.addr) })
	n := 0
	for _, u := range rest {
		var label string
		for {
			n++
			if label = fmt.Sprintf("ns%d", n); !taken[label] {
				break
			}
		}
		taken[label] = true
		src := u.source
		if src == "" {
			src = sourceFlag + label
		}
		out = append(out, Nameserver{Label: label, Addr: u.addr, Source: src})
	}
	slices.SortFunc(out, compareLabels)
	return out
}

// compareLabels orders ns2 before ns10, and other labels by name.
func compareLabels(a, b Nameserver) int {
	na, oka := labelNumber(a.Label)
	nb, okb := labelNumber(b.Label)
	switch {
	case oka && okb:
		return cmp.Or(cmp.Compare(na, nb), strings.Compare(a.Label, b.Label))
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a.Label, b.Label)
}

func labelNumber(l string) (int, bool) {
	digits, ok := strings.CutPrefix(l, "ns")
	if !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' || n > 1e6 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// NSRecords returns the nameserver records of zone, nil when there are none.
func NSRecords(zone string, ns []Nameserver, ttl uint32) []skydns.Record {
	if len(ns) == 0 {
		return nil
	}
	out := make([]skydns.Record, 0, len(ns))
	for _, n := range ns {
		out = append(out, skydns.Record{Name: NSName(zone), Host: n.Addr.String(), TTL: ttl, Source: n.Source, Label: n.Label})
	}
	return out
}

// Guard returns the apex guard of zone.
func Guard(zone string, ttl uint32) skydns.Record {
	return skydns.Record{Name: skydns.ApexName(zone), Host: zone, TTL: ttl, Source: SourceGuard}
}

// Apex returns the records to store at the apex name of zone: the records the
// objects publishing the apex were granted, or the guard when there are none.
func Apex(zone string, granted []skydns.Record, ttl uint32) []skydns.Record {
	if len(granted) > 0 {
		return granted
	}
	return []skydns.Record{Guard(zone, ttl)}
}

// Records returns the records skylb keeps for the zones, by stored name: for
// each zone its nameservers at NSName (nil when there are none) and its apex
// (see Apex), given the records granted at each apex name (by stored name,
// skydns.ApexName).
func Records(zones []string, ns []Nameserver, ttl uint32, granted map[string][]skydns.Record) map[string][]skydns.Record {
	out := make(map[string][]skydns.Record, 2*len(zones))
	for _, z := range zones {
		out[NSName(z)] = NSRecords(z, ns, ttl)
		apex := skydns.ApexName(z)
		out[apex] = Apex(z, granted[apex], ttl)
	}
	return out
}

// Warning returns what is wrong with the delegation of a zone served by ns, or
// "" when nothing is.
func Warning(zone string, ns []Nameserver) string {
	switch len(ns) {
	case 0:
		return fmt.Sprintf("zone %s has no nameserver: an NS query at its apex answers NXDOMAIN and it cannot be delegated; "+
			"give --nameserver or --nameserver-selector", zone)
	case 1:
		return fmt.Sprintf("zone %s has one nameserver (%s): a delegation needs at least %d, on independent nodes",
			zone, ns[0].Addr, MinNameservers)
	}
	return ""
}
