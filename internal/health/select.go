package health

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Mode says how many of the healthy addresses are published.
type Mode string

// The modes.
const (
	// Balanced publishes every healthy address.
	Balanced Mode = "balanced"
	// Exclusive publishes exactly one: the current one while it is healthy,
	// then the next healthy one in address order.
	Exclusive Mode = "exclusive"
)

// AnnotationMode chooses the Mode of a Service or Ingress.
const AnnotationMode = "skylb.io/mode"

// ParseMode reads the mode annotation; an invalid value is reported and
// Balanced used.
func ParseMode(annotations map[string]string) (Mode, error) {
	v, ok := annotations[AnnotationMode]
	if !ok {
		return Balanced, nil
	}
	switch m := Mode(strings.ToLower(strings.TrimSpace(v))); m {
	case Balanced, Exclusive:
		return m, nil
	}
	return Balanced, fmt.Errorf("annotation %s: %q is neither balanced nor exclusive; using balanced", AnnotationMode, v)
}

// Select returns the addresses to publish among sorted candidates. Unhealthy
// addresses are left out, unless none is healthy: then all are published
// (fail open), because an answer that may work beats no answer. In Exclusive
// mode one address is kept: current while it is a healthy candidate, otherwise
// the first healthy candidate after it in address order, wrapping around.
func Select(candidates []netip.Addr, healthy func(netip.Addr) bool, mode Mode, current netip.Addr) (out []netip.Addr, failOpen bool) {
	for _, a := range candidates {
		if healthy(a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 && len(candidates) > 0 {
		out, failOpen = slices.Clone(candidates), true
	}
	if mode != Exclusive || len(out) <= 1 {
		return out, failOpen
	}
	if slices.Contains(out, current) {
		return []netip.Addr{current}, failOpen
	}
	for _, a := range out {
		if a.Compare(current) > 0 {
			return []netip.Addr{a}, failOpen
		}
	}
	return out[:1], failOpen
}
