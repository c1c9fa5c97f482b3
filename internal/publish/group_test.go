package publish_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

// viewHosts returns the hosts of name in the tree of view, sorted by key.
func viewHosts(t *testing.T, c *clientv3.Client, view, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, skydns.Path(skydns.ViewPrefix("/skydns", view), name)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		v, err := skydns.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.Host)
	}
	return out
}

// A Group's view writes a name only while the default view answers it: not
// while another cluster sharing the etcd holds it, and as soon as it no
// longer does, handed over by the Group without anything Set again.
func TestGroupViewFollowsTheDefaultViewsClaim(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	east := startCluster(t, c, "east", 0)
	const name = "www.example.org"
	east.set(name, "192.0.2.1", false)
	waitIdle(t, east.pub)

	g := publish.NewGroup(c, publish.Config{
		Prefix: "/skydns", Owner: "west", Timeout: 2 * time.Second, Log: quietLog(), ClaimPrefix: "/skylb/claims",
	}, "office")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	w := publish.Want{Records: []skydns.Record{rec(name, "192.0.2.2")}}
	g.Set("", name, w)
	g.Set("office", name, publish.Want{Records: []skydns.Record{rec(name, "192.0.2.3")}})
	g.Complete()
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := g.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if got := viewHosts(t, c, "office", name); len(got) != 0 {
		t.Fatalf("the view holds %v while east holds the name, want nothing", got)
	}

	east.pub.Set(name, publish.Want{})
	eventually(t, "the view's records once east let the name go", func() bool {
		got := viewHosts(t, c, "office", name)
		return len(got) == 1 && got[0] == "192.0.2.3"
	})
	equalEventually(t, "the default view's records", func() []string { return hosts(t, c, name) }, "west=192.0.2.2")
}
