package arbitrate

import (
	"testing"
	"time"
)

func TestClaimValues(t *testing.T) {
	if shared, m := DecodeClaim("a", EncodeClaim("a", false)); shared || m != nil {
		t.Errorf("unshared claim decoded as shared %v, %+v", shared, m)
	}
	// A shared claim that says no more is healthy and serving, balanced, at
	// the default priority.
	shared, m := DecodeClaim("a", EncodeClaim("a", true))
	if !shared || m == nil || m.Owner != "a" || m.Policy != Balanced || m.Priority != DefaultPriority || !m.Healthy || !m.Serving || !m.Since.IsZero() {
		t.Errorf("bare shared claim decoded as %v, %+v", shared, m)
	}
	since := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	want := Member{Owner: "b", Policy: Failover, Priority: 7, Healthy: false, Serving: false, Since: since}
	shared, m = DecodeClaim("b", EncodeShared(want))
	if !shared || m == nil || *m != want {
		t.Errorf("round trip of %+v: %v, %+v", want, shared, m)
	}
	// Not a claim: unshared, as the writer keeps it.
	for _, v := range []string{"", "{", `{"owner":"c","shared":"yes"}`, `[]`} {
		if shared, m := DecodeClaim("c", []byte(v)); shared || m != nil {
			t.Errorf("%q decoded as shared %v, %+v", v, shared, m)
		}
	}
	// An unknown policy is balanced.
	if _, m := DecodeClaim("d", []byte(`{"owner":"d","shared":true,"policy":"random"}`)); m == nil || m.Policy != Balanced {
		t.Errorf("unknown policy decoded as %+v", m)
	}
}
