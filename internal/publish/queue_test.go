package publish

import (
	"maps"
	"testing"
	"time"
)

// TestWork checks the queue of dirty names with literals alone: a change
// outranks a full reconciliation, marking again keeps what is marked, the
// earliest observation is kept, and a flush takes everything at once.
func TestWork(t *testing.T) {
	w := work{dirty: map[string]bool{}, since: map[string]time.Time{}, wake: make(chan struct{}, 1)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.markFull("a")
	w.mark("b")
	w.markFull("b") // marked by a change already: stays so
	w.observed("b", t0.Add(time.Second))
	w.observed("b", t0)                  // earlier: kept
	w.observed("b", t0.Add(time.Minute)) // later: not
	w.observed("b", time.Time{})         // none: nothing
	if !w.asked || len(w.wake) != 1 {
		t.Errorf("mark: asked %v, %d wake-ups pending; want a flush asked for and woken", w.asked, len(w.wake))
	}
	if w.idle() {
		t.Error("idle with names marked")
	}
	q := w.take()
	if want := map[string]bool{"a": false, "b": true}; !maps.Equal(q.marked, want) {
		t.Errorf("took %v, want %v", q.marked, want)
	}
	if got := q.since["b"]; !got.Equal(t0) {
		t.Errorf("b observed at %v, want the earliest, %v", got, t0)
	}
	if !w.idle() {
		t.Errorf("not idle once everything is taken: %v", w.dirty)
	}

	// Marked again after a failed transaction: as it was, unless marked
	// meanwhile.
	w.mark("a")
	w.markAgain("a", false, t0)
	w.markAgain("c", true, t0)
	w.markAgain("c", false, t0.Add(time.Second))
	if want := map[string]bool{"a": true, "c": true}; !maps.Equal(w.dirty, want) {
		t.Errorf("marked again: %v, want %v", w.dirty, want)
	}
	if got := w.since["c"]; !got.Equal(t0) {
		t.Errorf("c observed at %v, want %v", got, t0)
	}
}

// TestFollowing checks the followers' part with literals alone.
func TestFollowing(t *testing.T) {
	f := following{follows: map[string]string{}, followers: map[string]nameSet{}, occupied: map[string]bool{}}
	f.set("1.2.0.192.in-addr.arpa", "web.example.org")
	f.set("2.2.0.192.in-addr.arpa", "web.example.org")
	f.set("2.2.0.192.in-addr.arpa", "api.example.org") // follows another now
	if got := len(f.followers["web.example.org"]); got != 1 {
		t.Errorf("web.example.org has %d followers, want 1", got)
	}
	if got := f.last([]string{"2.2.0.192.in-addr.arpa", "web.example.org", "1.2.0.192.in-addr.arpa", "api.example.org"}); got[0] != "web.example.org" || got[1] != "api.example.org" || got[2] != "2.2.0.192.in-addr.arpa" {
		t.Errorf("last = %v, want the followed names first, each part in its order", got)
	}
	f.requeue("web.example.org")
	if got := f.takeRequeued(); len(got) != 1 || got[0] != "1.2.0.192.in-addr.arpa" {
		t.Errorf("requeued %v, want web.example.org's follower", got)
	}
	if got := f.takeRequeued(); len(got) != 0 {
		t.Errorf("requeued %v once taken, want nothing", got)
	}
	f.set("2.2.0.192.in-addr.arpa", "")
	if len(f.followers["api.example.org"]) != 0 || f.follows["2.2.0.192.in-addr.arpa"] != "" {
		t.Errorf("a name that follows nothing is still indexed: %v %v", f.follows, f.followers)
	}
	if !f.occupy("3.2.0.192.in-addr.arpa", true) || f.occupy("3.2.0.192.in-addr.arpa", true) || !f.occupy("3.2.0.192.in-addr.arpa", false) || len(f.occupied) != 0 {
		t.Errorf("occupy reports a change only when there is one; left %v", f.occupied)
	}
}
