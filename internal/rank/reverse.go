package rank

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// PTR records follow the addresses the cluster publishes. An address inside
// one of the reverse zones gets a PTR record at its reverse name, pointing to
// a name that publishes it, for as long as one does: a name refused,
// withdrawn or no longer holding the address takes its PTR record with it.
//
// CoreDNS answers a PTR query from the one key at the reverse name
// (skydns.AtName), so an address has one PTR record, though DNS would allow
// several and several names often share an address (every Service running
// on a node shares the node's address, with the nodes address source).
// The name is chosen first come, first served, as names are: the name of the
// oldest object publishing the address (creationTimestamp, then namespace
// and name), and of that object's names the first a person gave (a hostname
// annotation, an Ingress host, a route hostname) before the generated ones.
// So a newer object sharing the address never takes its PTR record, and the
// choice depends on the objects alone.

// reverse indexes the published addresses that lie in reverse zones, by the
// names publishing them. An address may be published by thousands of names
// (every Service on a node, with the nodes address source), so each address
// keeps its best candidacy, and looks for the next only when that one goes.
type reverse struct {
	zones []dnsname.ReverseZone
	// byName holds, by forward stored name, its addresses in a reverse zone.
	byName map[string][]netip.Addr
	// byAddr holds, by address, the names publishing it.
	byAddr map[netip.Addr]*publishers
	// touched holds the addresses resolutions changed since the last
	// Reverse, with their best candidacy before.
	touched map[netip.Addr]was
}

// publishers are the names publishing one address.
type publishers struct {
	by   map[string]candidacy // by forward stored name
	best candidacy
}

// set records a name's candidacy for its address and reports whether it changed.
func (r *reverse) set(c candidacy) bool {
	ps := r.byAddr[c.addr]
	if ps == nil {
		ps = &publishers{by: make(map[string]candidacy), best: c}
		r.byAddr[c.addr] = ps
	}
	prev, had := ps.by[c.stored]
	if had && prev == c {
		return false
	}
	ps.by[c.stored] = c
	switch {
	case had && ps.best.stored == c.stored:
		ps.rescan()
	case compareCandidacies(c, ps.best) < 0:
		ps.best = c
	}
	return true
}

// remove drops a name's candidacy for addr.
func (r *reverse) remove(addr netip.Addr, stored string) {
	ps := r.byAddr[addr]
	if ps == nil {
		return
	}
	delete(ps.by, stored)
	switch {
	case len(ps.by) == 0:
		delete(r.byAddr, addr)
	case ps.best.stored == stored:
		ps.rescan()
	}
}

// rescan finds the best candidacy again.
func (ps *publishers) rescan() {
	first := true
	for _, c := range ps.by {
		if first || compareCandidacies(c, ps.best) < 0 {
			ps.best, first = c, false
		}
	}
}

// best returns the best candidacy for addr, if any name publishes it.
func (r *reverse) best(addr netip.Addr) (candidacy, bool) {
	if ps := r.byAddr[addr]; ps != nil {
		return ps.best, true
	}
	return candidacy{}, false
}

// candidacy is a name publishing an address, as a target for its PTR record.
type candidacy struct {
	addr   netip.Addr
	stored string // the forward name's stored name
	target string // the name clients query: the zone for its apex records
	ttl    uint32
	source string
	// rank orders candidacies (see compareCandidacies).
	created         time.Time
	namespace, name string
	generated       bool
	position        int // the name's place among its object's names
}

// compareCandidacies orders candidacies first come, first served: the older
// object, then namespace and object name, then the object's names given by
// a person before the generated ones, each in their order.
func compareCandidacies(a, b candidacy) int {
	return cmp.Or(
		a.created.Compare(b.created),
		cmp.Compare(a.namespace, b.namespace),
		cmp.Compare(a.name, b.name),
		cmp.Compare(a.source, b.source),
		compareBool(a.generated, b.generated),
		cmp.Compare(a.position, b.position),
		cmp.Compare(a.target, b.target),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// SetReverseZones sets the reverse zones PTR records are published in. It is
// called before the first Resolve.
func (x *Index) SetReverseZones(zones []dnsname.ReverseZone) {
	x.rev.zones = slices.Clone(zones)
}

// inZone reports whether addr lies in one of the reverse zones.
func (r *reverse) inZone(addr netip.Addr) bool {
	for _, z := range r.zones {
		if z.Prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// candidacies returns the candidacies of a stored name from its records.
func (x *Index) candidacies(stored string, records []skydns.Record) []candidacy {
	var out []candidacy
	for _, rec := range records {
		if t := rec.Type(); rec.Port != 0 || t != skydns.A && t != skydns.AAAA {
			continue
		}
		addr, err := netip.ParseAddr(rec.Host)
		if err != nil || !x.rev.inZone(addr.Unmap()) {
			continue
		}
		c := candidacy{addr: addr.Unmap(), stored: stored, target: skydns.Queried(stored), ttl: rec.TTL, source: rec.Source}
		if pub := x.pubs[rec.Source]; pub != nil {
			c.created, c.namespace, c.name = pub.Created, pub.Key.Namespace, pub.Key.Name
			c.position = slices.IndexFunc(pub.Names, func(n source.Name) bool { return n.Name == c.target })
			if c.position >= 0 {
				c.generated = pub.Names[c.position].Generated
			}
		}
		out = append(out, c)
	}
	return out
}

// updateReverse records the records of the stored names res resolved, and
// remembers which addresses they touched, for Reverse.
func (x *Index) updateReverse(res *Result) {
	if len(x.rev.zones) == 0 {
		return
	}
	touch := func(addr netip.Addr) {
		if _, ok := x.rev.touched[addr]; !ok {
			c, ok := x.rev.best(addr)
			x.rev.touched[addr] = was{c, ok}
		}
	}
	for stored, records := range res.Records {
		old, now := x.rev.byName[stored], x.candidacies(stored, records)
		if len(old) == 0 && len(now) == 0 {
			continue
		}
		addrs := make([]netip.Addr, 0, len(now))
		for _, c := range now {
			addrs = append(addrs, c.addr)
		}
		for _, a := range old {
			if !slices.Contains(addrs, a) {
				touch(a)
				x.rev.remove(a, stored)
			}
		}
		for _, c := range now {
			touch(c.addr)
			x.rev.set(c)
		}
		if len(addrs) == 0 {
			delete(x.rev.byName, stored)
		} else {
			x.rev.byName[stored] = addrs
		}
	}
}

// was is the best candidacy of an address before a change, if it had one.
type was struct {
	c  candidacy
	ok bool
}

// Reverse returns the PTR records of the addresses whose chosen name changed
// since the last call, by reverse name (nil for an address no name publishes
// any more), and the stored name each of them follows: the PTR record may
// exist only while that name is published. Called once the groups a change
// touched are resolved, it decides each address once, whatever the order of
// the groups.
func (x *Index) Reverse() (records map[string][]skydns.Record, follows map[string]string) {
	records, follows = make(map[string][]skydns.Record), make(map[string]string)
	for addr, w := range x.rev.touched {
		best, ok := x.rev.best(addr)
		if ok == w.ok && best == w.c {
			continue
		}
		name := dnsname.ReverseName(addr)
		if !ok {
			records[name] = nil
			continue
		}
		records[name] = []skydns.Record{{Name: name, Host: best.target, TTL: best.ttl, Source: best.source}}
		follows[name] = best.stored
	}
	clear(x.rev.touched)
	return records, follows
}
