package publish_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

// gate answers the names of its set.
type gate struct {
	mu  sync.Mutex
	yes map[string]bool
}

func (g *gate) Answers(stored string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.yes[stored]
}

func (g *gate) set(stored string, yes bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.yes[stored] = yes
}

// A view's Publisher writes a name only while its Gate answers it, deletes
// its records once the Gate stops, and decides again on Recheck.
func TestGate(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	g := &gate{yes: map[string]bool{"open.example.org": true}}
	p := startWith(t, c, publish.Config{Gate: g})
	open, shut := rec("open.example.org", "192.0.2.1"), rec("shut.example.org", "192.0.2.2")
	p.Set("open.example.org", publish.Want{Records: []skydns.Record{open}})
	p.Set("shut.example.org", publish.Want{Records: []skydns.Record{shut}})
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(open), dump(t, c)); diff != "" {
		t.Fatalf("the gate answers open.example.org alone (-want +got):\n%s", diff)
	}

	g.set("shut.example.org", true)
	g.set("open.example.org", false)
	p.Recheck("shut.example.org")
	p.Recheck("open.example.org")
	p.Recheck("never.example.org") // never Set: nothing to decide
	waitIdle(t, p)
	if diff := cmp.Diff(want(shut), dump(t, c)); diff != "" {
		t.Fatalf("after the gate turned (-want +got):\n%s", diff)
	}
}
