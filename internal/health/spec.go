// Package health probes the addresses skylb would publish and remembers which
// answer, so that only those are published.
//
// A Spec says how to probe (TCP connect, or an HTTP(S) request with an expected
// status), how often and how many consecutive results change an address's
// state. A Prober probes each wanted target at its interval with bounded
// concurrency and reports every change of state. Health state lives in memory:
// a new leader starts from "healthy" and converges after one interval.
package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of check.
type Kind string

// The kinds of check.
const (
	None  Kind = "none"
	TCP   Kind = "tcp"
	HTTP  Kind = "http"
	HTTPS Kind = "https"
)

// Annotations that configure the check of a Service or Ingress.
const (
	AnnotationCheck     = "skylb.io/health-check"
	AnnotationPort      = "skylb.io/health-port"
	AnnotationPath      = "skylb.io/health-path"
	AnnotationStatus    = "skylb.io/health-status"
	AnnotationInterval  = "skylb.io/health-interval"
	AnnotationTimeout   = "skylb.io/health-timeout"
	AnnotationThreshold = "skylb.io/health-threshold"
)

// annotationsRead are the annotations Parse reads.
var annotationsRead = []string{AnnotationCheck, AnnotationPort, AnnotationPath, AnnotationStatus,
	AnnotationInterval, AnnotationTimeout, AnnotationThreshold}

// Spec is how one object's addresses are checked.
type Spec struct {
	Kind      Kind
	Port      int    // 0: the object's default port
	Path      string // HTTP path
	Host      string // Host header for HTTP(S): the published name
	StatusMin int    // accepted HTTP status range
	StatusMax int
	Interval  time.Duration
	Timeout   time.Duration
	Threshold int // consecutive results that change the state
}

// Defaults of a Spec.
var Default = Spec{
	Kind: None, Path: "/healthz", StatusMin: 200, StatusMax: 200,
	Interval: 10 * time.Second, Timeout: 2 * time.Second, Threshold: 2,
}

// Parse reads a Spec from annotations. Each invalid value is reported and
// replaced by its default; the rest of the Spec still applies.
func Parse(annotations map[string]string) (Spec, []error) {
	if !slices.ContainsFunc(annotationsRead, func(key string) bool { _, ok := annotations[key]; return ok }) {
		// Most objects name no health check: nothing to read, and nothing
		// allocated for it, once per object at a first pass.
		return Default, nil
	}
	s := Default
	var errs []error
	bad := func(key string, err error) {
		errs = append(errs, fmt.Errorf("annotation %s: %w; using the default", key, err))
	}
	if v, ok := annotations[AnnotationCheck]; ok {
		switch k := Kind(strings.ToLower(strings.TrimSpace(v))); k {
		case None, TCP, HTTP, HTTPS:
			s.Kind = k
		default:
			bad(AnnotationCheck, fmt.Errorf("%q is not one of none, tcp, http, https", v))
		}
	}
	if v, ok := annotations[AnnotationPort]; ok {
		p, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || p < 1 || p > 65535 {
			bad(AnnotationPort, fmt.Errorf("%q is not a port", v))
		} else {
			s.Port = p
		}
	}
	if v, ok := annotations[AnnotationPath]; ok {
		if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\r\n") {
			bad(AnnotationPath, fmt.Errorf("%q is not an absolute path", v))
		} else {
			s.Path = v
		}
	}
	if v, ok := annotations[AnnotationStatus]; ok {
		lo, hi, err := parseStatus(v)
		if err != nil {
			bad(AnnotationStatus, err)
		} else {
			s.StatusMin, s.StatusMax = lo, hi
		}
	}
	durations := []struct {
		key      string
		dst      *time.Duration
		min, max time.Duration
	}{
		{AnnotationInterval, &s.Interval, time.Second, time.Hour},
		{AnnotationTimeout, &s.Timeout, 100 * time.Millisecond, time.Minute},
	}
	for _, d := range durations {
		v, ok := annotations[d.key]
		if !ok {
			continue
		}
		dur, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || dur < d.min || dur > d.max {
			bad(d.key, fmt.Errorf("%q is not a duration between %v and %v", v, d.min, d.max))
			continue
		}
		*d.dst = dur
	}
	if s.Timeout >= s.Interval {
		s.Timeout = s.Interval / 2
	}
	if v, ok := annotations[AnnotationThreshold]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 10 {
			bad(AnnotationThreshold, fmt.Errorf("%q is not a number from 1 to 10", v))
		} else {
			s.Threshold = n
		}
	}
	return s, errs
}

// parseStatus reads "200" or "200-399".
func parseStatus(v string) (int, int, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(v), "-")
	a, err := strconv.Atoi(lo)
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a status code or range", v)
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil {
			return 0, 0, fmt.Errorf("%q is not a status code or range", v)
		}
	}
	if a < 100 || b > 599 || a > b {
		return 0, 0, fmt.Errorf("%q is not within 100-599", v)
	}
	return a, b, nil
}
