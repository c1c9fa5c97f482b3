package source

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/externaldns"
)

// ReasonRecordTypeRefused is told of a DNSEndpoint's endpoint whose record
// type skylb does not publish.
const ReasonRecordTypeRefused = "RecordTypeRefused"

// DNSEndpointTypes are the record types of a DNSEndpoint's endpoints that
// skylb publishes. The others are refused and told: NS, since the zones'
// nameservers are skylb's own (--nameserver); SRV, since skylb's SRV records
// are its own scheme, one per named port of an object's name, held by that
// name and pointing to it (skydns.HeldBy), with no priority or weight; MX and
// the rest, which its records do not carry.
var DNSEndpointTypes = []string{"A", "AAAA", "CNAME", "TXT"}

// MaxTextLength is the longest text of a TXT endpoint that skylb publishes,
// in bytes. CoreDNS serves a text of 255 bytes or more as several strings of
// 255 (the last shorter, or empty), which readers of SPF and DKIM join, so a
// text is not refused for its length below this. The cap keeps a
// transaction of --etcd-max-txn-ops writes (128) well below etcd's 1.5 MiB
// request limit; a DKIM record of a 4096-bit key takes about 750 bytes.
const MaxTextLength = 4096

// DNSEndpoint returns the publication of an external-dns DNSEndpoint: the
// name of each endpoint of a type skylb publishes, answering that
// endpoint's targets with its TTL; a TXT endpoint's targets are the texts of
// the name's TXT records. Endpoints of one name are merged, the smallest TTL
// winning for all its records; a name at a zone's apex is refused, whatever the
// namespace, for the apex holds the zone's own records. Health checks do
// not apply: the targets are published as given.
func (b *Builder) DNSEndpoint(d *externaldns.DNSEndpoint) *Publication {
	p := b.newPublication(KindDNSEndpoint, &d.ObjectMeta)
	p.Health, p.Select, p.Generation = nil, "", d.Generation
	p.Answers = make(map[string]Answer)
	for i, e := range d.Spec.Endpoints {
		b.addEndpoint(p, fmt.Sprintf("spec.endpoints[%d] (%s %s)", i, e.DNSName, e.RecordType), e)
	}
	b.capNames(p)
	// The addresses the filter refuses are told once, for every name.
	var all []netip.Addr
	for _, a := range p.Answers {
		all = append(all, a.Addresses...)
	}
	slices.SortFunc(all, netip.Addr.Compare)
	p.Addresses = slices.Compact(all)
	b.cfg.Filter.apply(p)
	p.Addresses, p.Targets = nil, nil
	for name, a := range p.Answers {
		if !slices.ContainsFunc(p.Names, func(n Name) bool { return n.Name == name }) {
			delete(p.Answers, name)
			continue
		}
		a.Addresses = slices.DeleteFunc(a.Addresses, func(addr netip.Addr) bool { return !b.cfg.Filter.Permits(addr) })
		slices.SortFunc(a.Addresses, netip.Addr.Compare)
		a.Addresses = slices.Compact(a.Addresses)
		slices.Sort(a.Targets)
		a.Targets = slices.Compact(a.Targets)
		slices.Sort(a.Texts)
		a.Texts = slices.Compact(a.Texts)
		p.Answers[name] = a
		p.Addresses = append(p.Addresses, a.Addresses...)
		p.Targets = append(p.Targets, a.Targets...)
	}
	slices.SortFunc(p.Addresses, netip.Addr.Compare)
	p.Addresses = slices.Compact(p.Addresses)
	slices.Sort(p.Targets)
	p.Targets = slices.Compact(p.Targets)
	return p
}

// addEndpoint adds one endpoint, called what in what is told of it, to p.
func (b *Builder) addEndpoint(p *Publication, what string, e externaldns.Endpoint) {
	typ := strings.ToUpper(e.RecordType)
	if !slices.Contains(DNSEndpointTypes, typ) {
		p.problem(ReasonRecordTypeRefused, "%s is not published: skylb publishes records of type %s only", what, strings.Join(DNSEndpointTypes, ", "))
		return
	}
	placed, err := b.cfg.Zones.Place(e.DNSName)
	if err != nil {
		p.problem(ReasonInvalidHostname, "%s is not published: %v", what, err)
		return
	}
	if placed.Apex() {
		p.problem(ReasonApexRefused, "%s is not published: it is the apex of zone %s, whose records skylb keeps itself", what, placed.Zone)
		return
	}
	ttl := p.TTL
	if e.RecordTTL != 0 {
		if e.RecordTTL < 1 || e.RecordTTL > MaxTTL {
			p.problem(ReasonInvalidTTL, "%s: recordTTL %d is outside 1 to %d seconds; using %d", what, e.RecordTTL, MaxTTL, p.TTL)
		} else {
			ttl = uint32(e.RecordTTL)
		}
	}
	a, seen := p.Answers[placed.Name]
	if !seen || ttl < a.TTL {
		a.TTL = ttl
	}
	for _, t := range e.Targets {
		if typ == "TXT" {
			text, err := parseText(t)
			if err != nil {
				p.problem(ReasonInvalidAddress, "%s: target %q: %v", what, t, err)
				continue
			}
			a.Texts = append(a.Texts, text)
			continue
		}
		if typ == "CNAME" {
			target, err := dnsname.Parse(t)
			if err != nil {
				p.problem(ReasonInvalidAddress, "%s: target %q: %v", what, t, err)
				continue
			}
			a.Targets = append(a.Targets, target)
			continue
		}
		addr, err := netip.ParseAddr(t)
		if err != nil || addr.Zone() != "" || addr.Unmap().Is4() != (typ == "A") {
			p.problem(ReasonInvalidAddress, "%s: target %q is not an %s address", what, t, map[string]string{"A": "IPv4", "AAAA": "IPv6"}[typ])
			continue
		}
		a.Addresses = append(a.Addresses, addr.Unmap())
	}
	p.Answers[placed.Name] = a
	p.addPlaced(placed, false)
}

// parseText returns the text of a TXT endpoint's target: the target without
// one pair of surrounding double quotes, which external-dns writes around
// the texts of its own TXT records ("\"heritage=external-dns,...\"") and
// drops when it reads them. An empty text, which CoreDNS would not serve,
// is refused, and so is one longer than MaxTextLength.
func parseText(target string) (string, error) {
	text := target
	if len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"' {
		text = text[1 : len(text)-1]
	}
	switch {
	case text == "":
		return "", errors.New("a TXT record's text must not be empty")
	case len(text) > MaxTextLength:
		return "", fmt.Errorf("a TXT record's text is %d bytes, more than the %d allowed", len(text), MaxTextLength)
	}
	return text, nil
}
