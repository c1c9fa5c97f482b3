package publish

import (
	"math/rand/v2"
	"time"
)

// maxRetryDelay caps the delay between attempts to list or write after etcd
// failed. Once etcd is back (after an outage, or after an operator cleared a
// NOSPACE alarm) the next attempt comes at most this late, so skylb converges
// within seconds; one request every two seconds is no load for etcd. It
// matches the reconnect backoff of the etcd client (internal/etcdclient).
const maxRetryDelay = 2 * time.Second

// backoff yields exponentially growing delays with jitter, up to a maximum.
type backoff struct {
	min, max, cur time.Duration
}

func newBackoff(min, max time.Duration) *backoff {
	return &backoff{min: min, max: max}
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	// Up to a fifth less, so that many replicas do not retry in step.
	return b.cur - time.Duration(rand.Int64N(int64(b.cur)/5+1))
}

func (b *backoff) reset() { b.cur = 0 }
