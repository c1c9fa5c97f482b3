package publish

import (
	"context"
	"testing"
	"time"

	"github.com/skylb/skylb/internal/arbitrate"
)

// Verdicts hands what was added to the reader in order, and Wait returns
// only once the reader is Done with all of it.
func TestVerdictsWaitForTheReader(t *testing.T) {
	vs := NewVerdicts()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := vs.Wait(ctx); err != nil {
		t.Fatalf("Wait with nothing added = %v", err)
	}
	vs.add([]Verdict{{Stored: "a.example.org", Claim: &arbitrate.Decision{Holders: []string{"east"}}}, {Stored: "b.example.org", Share: &arbitrate.Sharing{Serve: true}}})
	select {
	case <-vs.Ready():
	default:
		t.Fatal("Ready not signalled after add")
	}
	told := vs.Take()
	if len(told) != 2 || told[0].Stored != "a.example.org" || told[1].Stored != "b.example.org" {
		t.Fatalf("Take() = %+v, want a then b", told)
	}
	if err := vs.Wait(ctx); err == nil {
		t.Fatal("Wait returned before the reader was Done")
	}
	vs.Done(len(told))
	if err := vs.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after Done = %v", err)
	}
	var none *Verdicts
	none.add([]Verdict{{Stored: "c.example.org"}})
	if err := none.Wait(context.Background()); err != nil {
		t.Fatalf("nil Verdicts' Wait = %v", err)
	}
}
