package app

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// eventQueue is how many Events client-go's broadcaster holds ahead of the
// API server (maxQueuedEvents in tools/record): beyond it, it drops each new
// one with an error line that prints the whole Event.
const eventQueue = 1000

// eventGate is the Event recorder the controller writes to. The API server
// takes Events at --event-qps, and a cold start over a large cluster
// publishes thousands of objects at once, one Published Event each: handed to
// client-go's broadcaster, all but its queue's worth would be built, logged as
// errors one by one and dropped. The gate keeps the broadcaster's queue from
// filling instead. A token bucket the size of most of that queue refills at
// the rate the Events are sent; Normal Events take a token only while more
// than half remain, so that Warnings, which tell of something wrong, always
// find room. What finds none is counted (Dropped) and logged in one line: at
// once for the first, then at most once a minute with the number since.
type eventGate struct {
	record.EventRecorder
	log logrus.FieldLogger
	now func() time.Time

	mu       sync.Mutex
	tokens   float64
	rate     float64 // tokens a second
	size     float64
	last     time.Time // when tokens was last refilled
	logged   time.Time // when drops were last logged
	pending  [2]int64  // drops not yet logged: Normal, Warning
	flushing bool      // a log of the pending drops is due

	dropped [2]atomic.Int64 // Normal, Warning
}

// newEventGate returns a gate in front of rec whose Events are sent at qps
// on average.
func newEventGate(rec record.EventRecorder, qps float32, log logrus.FieldLogger) *eventGate {
	size := float64(eventQueue) * 0.9
	return &eventGate{EventRecorder: rec, log: log, now: time.Now, tokens: size, rate: float64(qps), size: size}
}

// Event records an Event if the queue has room for it.
func (g *eventGate) Event(obj runtime.Object, eventtype, reason, message string) {
	if g.admit(eventtype) {
		g.EventRecorder.Event(obj, eventtype, reason, message)
	}
}

// Eventf records an Event if the queue has room for it.
func (g *eventGate) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if g.admit(eventtype) {
		g.EventRecorder.Eventf(obj, eventtype, reason, messageFmt, args...)
	}
}

// AnnotatedEventf records an Event if the queue has room for it.
func (g *eventGate) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if g.admit(eventtype) {
		g.EventRecorder.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	}
}

// Dropped returns the Normal and Warning Events dropped so far.
func (g *eventGate) Dropped() (normal, warning int64) {
	return g.dropped[0].Load(), g.dropped[1].Load()
}

// admit takes a token for an Event of type eventtype, or counts it dropped.
func (g *eventGate) admit(eventtype string) bool {
	i, reserve := 0, g.size/2
	if eventtype == corev1.EventTypeWarning {
		i, reserve = 1, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if !g.last.IsZero() {
		g.tokens = min(g.size, g.tokens+now.Sub(g.last).Seconds()*g.rate)
	}
	g.last = now
	if g.tokens >= reserve+1 {
		g.tokens--
		return true
	}
	g.dropped[i].Add(1)
	g.pending[i]++
	if !g.flushing {
		g.flushing = true
		time.AfterFunc(max(0, time.Minute-now.Sub(g.logged)), g.logDropped)
	}
	return false
}

// logDropped logs the Events dropped since the last time.
func (g *eventGate) logDropped() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log.WithFields(logrus.Fields{"normal": g.pending[0], "warning": g.pending[1]}).
		Warn("Events dropped: more at once than the API server takes at --event-qps (skylb_events_dropped_total counts them)")
	g.pending, g.logged, g.flushing = [2]int64{}, g.now(), false
}
