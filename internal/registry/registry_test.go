package registry_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/registry"
	"github.com/skylb/skylb/test/stack"
)

const prefix = "/skylb/scopes/east/"

// instance is one running Registry.
type instance struct {
	*registry.Registry
	resolved atomic.Int32
	stop     func()
}

func start(t *testing.T, c *clientv3.Client, name, scope string) *instance {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	in := &instance{}
	in.Registry = registry.New(c, registry.Config{
		Prefix: prefix, Scope: scope, Identity: name, TTL: 2 * time.Second, Log: log,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); in.Run(ctx) }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-in.Resolved():
				in.resolved.Add(1)
			}
		}
	}()
	stopped := false
	in.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(in.stop)
	select {
	case <-in.Checked():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: registrations not read after 10 s", name)
	}
	return in
}

// eventually waits up to 10 seconds for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	stack.Eventually(t, 10*time.Second, what, func() (bool, string) { return cond(), "" })
}

// writes reports whether a write under the instance's conditions lands.
func writes(t *testing.T, c *clientv3.Client, in *instance) bool {
	t.Helper()
	cmps, err := in.Compares()
	if err != nil {
		if !errors.Is(err, publish.ErrPaused) {
			t.Fatalf("Compares() = %v, want an error wrapping publish.ErrPaused", err)
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Txn(ctx).If(cmps...).Then(clientv3.OpPut("/skydns/test", "x")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	return resp.Succeeded
}

func registrations(t *testing.T, c *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.Count)
}

// An unscoped skylb alone registers nothing: a restart writes nothing.
func TestUnscopedAloneWritesNothing(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	rev := etcdtest.Revision(t, c)
	u := start(t, c, "u", "")
	if u.Conflict() != nil || !writes(t, c, u) {
		t.Fatalf("an unscoped instance alone: conflict %v, writes %v; want none and true", u.Conflict(), writes(t, c, u))
	}
	if got := etcdtest.Revision(t, c); got != rev+1 {
		t.Errorf("revision %d after one write of the test, want %d: the registry wrote", got, rev+1)
	}
}

// Replicas of one scope register and write.
func TestReplicasOfOneScope(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	a := start(t, c, "a", "namespace=shop")
	b := start(t, c, "b", "namespace=shop")
	eventually(t, "both registered", func() bool { return registrations(t, c) == 2 })
	eventually(t, "both writing", func() bool { return writes(t, c, a) && writes(t, c, b) })
	if a.Conflict() != nil || b.Conflict() != nil {
		t.Errorf("replicas of one scope conflict: %v, %v", a.Conflict(), b.Conflict())
	}
}

// Two scopes under one owner id: neither writes until one stops.
func TestTwoScopesHoldEachOther(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	a := start(t, c, "a", "namespace=shop")
	eventually(t, "a writing", func() bool { return writes(t, c, a) })
	b := start(t, c, "b", "namespace=blog")
	eventually(t, "both held", func() bool { return a.Conflict() != nil && b.Conflict() != nil })
	if writes(t, c, a) || writes(t, c, b) {
		t.Fatal("an instance writes beside another of another scope")
	}
	if err := a.Conflict(); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("Conflict() = %v, want ErrConflict", err)
	}
	b.stop()
	eventually(t, "a writing again", func() bool { return writes(t, c, a) })
	eventually(t, "a told the conflict resolved", func() bool { return a.resolved.Load() > 0 })
	if a.resolved.Load() != 1 {
		t.Errorf("Resolved received %d times, want once", a.resolved.Load())
	}
}

// An unscoped skylb registers once a scoped one does, so that both hold.
func TestUnscopedRegistersBesideAScopedOne(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	u := start(t, c, "u", "")
	s := start(t, c, "s", "source=service")
	eventually(t, "both registered and held", func() bool {
		return registrations(t, c) == 2 && u.Conflict() != nil && s.Conflict() != nil
	})
	u.stop()
	eventually(t, "the scoped one writing once the other stopped", func() bool { return writes(t, c, s) })
}

// A write decided before another instance registered does not land.
func TestWriteFencedByANewRegistration(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	a := start(t, c, "a", "namespace=shop")
	eventually(t, "a writing", func() bool { return writes(t, c, a) })
	cmps, err := a.Compares()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, prefix+"other", `{"scope":"namespace=blog","instance":"other"}`); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Txn(ctx).If(cmps...).Then(clientv3.OpPut("/skydns/test", "x")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Succeeded {
		t.Error("a write decided before another scope registered landed")
	}
	eventually(t, "a held", func() bool { return a.Conflict() != nil })
}
