package publish

import (
	"context"
	"sync"
	"time"

	"github.com/skylb/skylb/internal/arbitrate"
)

// Verdicts carries the default view's decisions on the names other clusters
// claim, from the Publisher that makes them to the one who acts on them (the
// controller, which tells the objects behind the names with Events). It is
// built before both and handed to each at construction. It has a lock of its
// own, a leaf: the Publisher adds once a flush's transactions are done,
// without its own lock, and the reader takes without the Publisher's.
type Verdicts struct {
	mu      sync.Mutex
	queue   []Verdict
	reading int           // taken by the reader and not Done yet
	ready   chan struct{} // holds a token while the queue is not empty
}

// Verdict is a decision on one stored name that changed: on its claim
// (Claim), or on how the clusters sharing it answer it (Share, with the
// decision told before it in Was, nil for the first).
type Verdict struct {
	Stored string
	Claim  *arbitrate.Decision
	Share  *arbitrate.Sharing
	Was    *arbitrate.Sharing
}

// NewVerdicts returns an empty Verdicts.
func NewVerdicts() *Verdicts { return &Verdicts{ready: make(chan struct{}, 1)} }

// add queues verdicts for the reader. A nil Verdicts takes nothing.
func (vs *Verdicts) add(verdicts []Verdict) {
	if vs == nil || len(verdicts) == 0 {
		return
	}
	vs.mu.Lock()
	vs.queue = append(vs.queue, verdicts...)
	vs.mu.Unlock()
	select {
	case vs.ready <- struct{}{}:
	default:
	}
}

// Ready receives when there are verdicts to Take.
func (vs *Verdicts) Ready() <-chan struct{} { return vs.ready }

// Take returns the verdicts queued, in the order they were made; the reader
// calls Done once it has acted on them.
func (vs *Verdicts) Take() []Verdict {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	out := vs.queue
	vs.queue = nil
	vs.reading += len(out)
	return out
}

// Done says the reader has acted on n verdicts it took.
func (vs *Verdicts) Done(n int) {
	vs.mu.Lock()
	vs.reading -= n
	vs.mu.Unlock()
}

// Wait returns once every verdict queued has been acted on, or ctx's error.
// A nil Verdicts has nothing to wait for.
func (vs *Verdicts) Wait(ctx context.Context) error {
	for vs != nil {
		vs.mu.Lock()
		n := len(vs.queue) + vs.reading
		vs.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
