package dnsname

import (
	"fmt"
	"strings"
)

// Zones is the ordered list of zones skylb serves; the first holds generated names.
type Zones []string

// ParseZones validates and normalises zone names. It refuses an empty list and duplicates.
func ParseZones(in []string) (Zones, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("at least one zone is required")
	}
	seen := make(map[string]bool, len(in))
	zones := make(Zones, 0, len(in))
	for _, z := range in {
		n, err := Parse(z)
		if err != nil {
			return nil, fmt.Errorf("zone %q: %w", z, err)
		}
		if seen[n] {
			return nil, fmt.Errorf("zone %q is given twice", n)
		}
		seen[n] = true
		zones = append(zones, n)
	}
	return zones, nil
}

// Placed is a valid name together with the zone that serves it.
type Placed struct {
	Name string // normalised host name
	Zone string // the most specific served zone containing Name
}

// Apex reports whether the name is the zone's apex.
func (p Placed) Apex() bool { return p.Name == p.Zone }

// Place parses name and finds the most specific zone that contains it. Names in the
// subtree "dns.<zone>" are refused: CoreDNS's etcd plugin keeps the zone's
// nameserver (dns/ns) and apex (dns/apex) records there.
func (zs Zones) Place(name string) (Placed, error) {
	n, err := Parse(name)
	if err != nil {
		return Placed{}, err
	}
	best := ""
	for _, z := range zs {
		if IsWithin(n, z) && len(z) > len(best) {
			best = z
		}
	}
	if best == "" {
		return Placed{}, fmt.Errorf("%s: %w (%s)", n, ErrOutsideZone, strings.Join(zs, ", "))
	}
	if IsWithin(n, "dns."+best) {
		return Placed{}, fmt.Errorf("%s: %w", n, ErrReserved)
	}
	return Placed{Name: n, Zone: best}, nil
}
