package dnsprobe

import (
	"fmt"

	"github.com/miekg/dns"
)

// State is what a server's answer says of a zone.
type State int8

const (
	// Unknown: the server gave no answer that tells (no reply, SERVFAIL).
	// CoreDNS may be starting, or unreachable for a while; it is not a
	// mismatch of zones.
	Unknown State = iota
	// Served: the server answers the zone authoritatively.
	Served
	// NotServed: the server answers, and not for the zone.
	NotServed
)

// String returns "unknown", "served" or "not served".
func (s State) String() string {
	switch s {
	case Served:
		return "served"
	case NotServed:
		return "not served"
	}
	return "unknown"
}

// Result is a zone's state and what the server answered, in a few words for
// a log line: "REFUSED", "the SOA of example.org", or the error of a query
// that got no reply.
type Result struct {
	State  State
	Answer string
}

// Classify returns what r, the reply to a query for the SOA record of zone's
// apex, says of zone:
//
//   - Served: NOERROR with the authoritative flag and the SOA record of zone
//     itself in the answer. CoreDNS's etcd plugin makes that record up for
//     every zone of its server block, without reading etcd, so it answers
//     so with an empty tree or while etcd is down.
//   - NotServed: REFUSED (no server block of CoreDNS holds the zone),
//     NOTAUTH or NXDOMAIN; or NOERROR with the SOA of another zone (a block
//     of a parent zone answers the names, but not as a zone of their own:
//     neither its SOA nor its NS records), without the authoritative flag
//     (a forwarder's answer), or without an SOA.
//   - Unknown: no reply (nil), SERVFAIL, or another failure of the server
//     (FORMERR, NOTIMP): the server did not say.
func Classify(zone string, r *dns.Msg) Result {
	if r == nil {
		return Result{Unknown, "no reply"}
	}
	rcode := dns.RcodeToString[r.Rcode]
	if rcode == "" {
		rcode = fmt.Sprintf("rcode %d", r.Rcode)
	}
	switch r.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeRefused, dns.RcodeNotAuth, dns.RcodeNameError:
		return Result{NotServed, rcode}
	default:
		return Result{Unknown, rcode}
	}
	apex := dns.CanonicalName(zone)
	other := ""
	for _, rr := range r.Answer {
		soa, ok := rr.(*dns.SOA)
		if !ok {
			continue
		}
		owner := dns.CanonicalName(soa.Hdr.Name)
		if owner != apex {
			other = owner
			continue
		}
		if !r.Authoritative {
			return Result{NotServed, "its SOA, not authoritative"}
		}
		return Result{Served, "its SOA"}
	}
	if other != "" {
		return Result{NotServed, "the SOA of " + trimDot(other)}
	}
	return Result{NotServed, "NOERROR without its SOA"}
}

// trimDot returns name without its final dot, as skylb writes zones.
func trimDot(name string) string {
	if len(name) > 1 && name[len(name)-1] == '.' {
		return name[:len(name)-1]
	}
	return name
}
