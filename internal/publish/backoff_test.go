package publish

import (
	"testing"
	"time"
)

func TestBackoffGrowsToItsCap(t *testing.T) {
	bo := newBackoff(100*time.Millisecond, maxRetryDelay)
	var last time.Duration
	for i := range 20 {
		d := bo.next()
		if d > maxRetryDelay {
			t.Fatalf("attempt %d: delay %v above the cap %v", i, d, maxRetryDelay)
		}
		last = d
	}
	if last < maxRetryDelay*4/5 {
		t.Errorf("after 20 attempts the delay is %v, want about %v", last, maxRetryDelay)
	}
	bo.reset()
	if d := bo.next(); d > 100*time.Millisecond {
		t.Errorf("after reset the delay is %v, want at most 100ms", d)
	}
}
