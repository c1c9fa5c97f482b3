package publish_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

// TestRecordsOutsideTheScopeAreKept: a Publisher that owns only some sources
// (a skylb scoped to namespaces or kinds of object) deletes the records of
// its owner id it owns and no one wants, and leaves the others, and their
// claims, as they are; a record it wants is taken over.
func TestRecordsOutsideTheScopeAreKept(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	mine := skydns.Record{Name: "web.shop.example.org", Host: "192.0.2.1", TTL: 30, Source: "service/shop/web"}
	otherNS := skydns.Record{Name: "web.blog.example.org", Host: "192.0.2.2", TTL: 30, Source: "service/blog/web"}
	otherKind := skydns.Record{Name: "front.example.org", Host: "192.0.2.3", TTL: 30, Source: "ingress/shop/front"}
	for _, r := range []skydns.Record{mine, otherNS, otherKind} {
		k, v := kv(r)
		put(t, c, k, v)
		put(t, c, "/skylb/claims/"+r.Name+"/"+owner, `{"owner":"`+owner+`"}`)
	}
	p := publish.New(c, publish.Config{
		Prefix: "/skydns", Owner: owner, Timeout: 2 * time.Second, Log: quietLog(), ClaimPrefix: "/skylb/claims",
		Owns: func(src string) bool { return strings.HasPrefix(src, "service/shop/") },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(otherNS, otherKind), dump(t, c)); diff != "" {
		t.Fatalf("after the first pass (-want +got):\n%s", diff)
	}
	for _, r := range []skydns.Record{otherNS, otherKind} {
		if got := claimsOf(t, c, r.Name); len(got) != 1 || got[0] != owner {
			t.Errorf("claims on %s: %q, want this owner's kept", r.Name, got)
		}
	}
	if got := claimsOf(t, c, mine.Name); len(got) != 0 {
		t.Errorf("claims on %s: %q, want the owned name's claim deleted with its records", mine.Name, got)
	}

	if got := p.CountOutside(); got != 2 {
		t.Errorf("CountOutside() = %d, want 2", got)
	}

	// A full comparison again changes nothing.
	rev := etcdtest.Revision(t, c)
	p.Resync()
	waitIdle(t, p)
	if got := etcdtest.Revision(t, c); got != rev {
		t.Errorf("a resync wrote: revision %d, was %d", got, rev)
	}

	// A record it wants at a key outside its scope becomes its own.
	taken := otherKind
	taken.Source = "service/shop/front"
	p.Set(taken.Name, publish.Want{Records: []skydns.Record{taken}})
	waitIdle(t, p)
	if diff := cmp.Diff(want(otherNS, taken), dump(t, c)); diff != "" {
		t.Fatalf("after taking a record over (-want +got):\n%s", diff)
	}
	if got := p.CountOutside(); got != 1 {
		t.Errorf("CountOutside() after the take-over = %d, want 1", got)
	}
	p.Set(taken.Name, publish.Want{})
	waitIdle(t, p)
	if diff := cmp.Diff(want(otherNS), dump(t, c)); diff != "" {
		t.Fatalf("after letting the record taken over go (-want +got):\n%s", diff)
	}
}

// TestNameHeldOutsideTheScope: a name that records of the owner id outside
// the scope hold for another namespace is not published for an object of
// the scope, which is told why; once those records are gone, it is.
func TestNameHeldOutsideTheScope(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	held := skydns.Record{Name: "www.example.org", Host: "192.0.2.2", TTL: 30, Source: "ingress/blog/www"}
	k, v := kv(held)
	put(t, c, k, v)
	verdicts := publish.NewVerdicts()
	var told []arbitrate.Decision
	read := func() {
		for _, v := range verdicts.Take() {
			told = append(told, *v.Claim)
			verdicts.Done(1)
		}
	}
	p := publish.New(c, publish.Config{
		Prefix: "/skydns", Owner: owner, Timeout: 2 * time.Second, Log: quietLog(),
		Owns:     func(src string) bool { return strings.HasPrefix(src, "service/shop/") },
		Verdicts: verdicts,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	mine := skydns.Record{Name: "www.example.org", Host: "192.0.2.1", TTL: 30, Source: "service/shop/www"}
	p.Set(mine.Name, publish.Want{Records: []skydns.Record{mine}})
	p.Complete()
	waitIdle(t, p)
	if diff := cmp.Diff(want(held), dump(t, c)); diff != "" {
		t.Fatalf("a name held outside the scope (-want +got):\n%s", diff)
	}
	eventually(t, "the refusal told", func() bool {
		read()
		return len(told) == 1 && !told[0].Granted && slices.Equal(told[0].Outside, []string{"ingress/blog/www"})
	})
	if got := p.Stats().Refused; got != 1 {
		t.Errorf("Stats().Refused = %d, want 1", got)
	}

	// The records outside go (handed over): the name is published.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if _, err := c.Delete(ctx2, k); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the name published", func() bool { return cmp.Equal(want(mine), dump(t, c)) })
	eventually(t, "the grant told", func() bool {
		read()
		return len(told) == 2 && told[1].Granted
	})
	if got := p.Stats().Refused; got != 0 {
		t.Errorf("Stats().Refused = %d after the grant, want 0", got)
	}
}
