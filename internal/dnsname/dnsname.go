// Package dnsname normalises and validates the DNS names that skylb publishes
// and places them in the zones it serves.
package dnsname

import (
	"errors"
	"fmt"
	"strings"
)

// Limits from RFC 1035 section 2.3.4, in presentation form without the trailing dot.
const (
	MaxLabelLength = 63
	MaxNameLength  = 253
)

// Sentinel errors returned (wrapped) by Parse and Zones.Place.
var (
	ErrEmpty       = errors.New("empty name")
	ErrTooLong     = errors.New("name longer than 253 characters")
	ErrLabel       = errors.New("invalid label")
	ErrWildcard    = errors.New("wildcard labels are not served by CoreDNS's etcd plugin")
	ErrOutsideZone = errors.New("name is outside every served zone")
	ErrReserved    = errors.New("name is reserved for the zone's nameserver and apex records")
)

// Normalize lower-cases the ASCII letters of a name, trims surrounding white
// space and drops one trailing dot. Other characters are kept as they are, so
// that Parse refuses them rather than publishing a different name (Unicode
// lower-casing maps the Kelvin sign to "k").
func Normalize(name string) string {
	b := []byte(strings.TrimSpace(name))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return strings.TrimSuffix(string(b), ".")
}

// Parse normalises name and checks that it is a host name made of RFC 1123
// labels: letters, digits and inner hyphens, at most 63 characters each and 253
// in all. The labels "*" and "any" are refused: CoreDNS reads them as wildcards
// in a query and never serves them from storage.
func Parse(name string) (string, error) {
	n := Normalize(name)
	if n == "" {
		return "", ErrEmpty
	}
	if len(n) > MaxNameLength {
		return "", fmt.Errorf("%.40s...: %w", n, ErrTooLong)
	}
	for label := range strings.SplitSeq(n, ".") {
		if label == "*" || label == "any" {
			return "", fmt.Errorf("%s: %w", n, ErrWildcard)
		}
		if err := checkLabel(label); err != nil {
			return "", fmt.Errorf("%s: %w", n, err)
		}
	}
	return n, nil
}

// IsLabel reports whether s is a single valid RFC 1123 label.
func IsLabel(s string) bool {
	return checkLabel(s) == nil
}

func checkLabel(label string) error {
	if label == "" {
		return fmt.Errorf("%w: empty label", ErrLabel)
	}
	if len(label) > MaxLabelLength {
		return fmt.Errorf("%w: %.20s... is longer than 63 characters", ErrLabel, label)
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(label)-1:
		default:
			return fmt.Errorf("%w: %q", ErrLabel, label)
		}
	}
	return nil
}

// IsWithin reports whether name equals parent or lies beneath it.
func IsWithin(name, parent string) bool {
	return name == parent || strings.HasSuffix(name, "."+parent)
}

// Related reports whether one of a and b equals or lies beneath the other. CoreDNS
// answers a name with every record stored beneath it, so related names share answers.
func Related(a, b string) bool {
	return IsWithin(a, b) || IsWithin(b, a)
}
