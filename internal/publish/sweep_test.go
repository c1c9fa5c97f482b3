package publish

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/skydns"
)

// TestSweepDeletesWhatTheExpiredClaimHeld checks what a sweep deletes: the
// records of the cluster whose claim went, at the name and beneath it (its
// SRV records), and nothing of another cluster's, of another name of the
// same cluster (nested beneath it, with a claim of its own), or of a leased
// record, which expires by itself; and nothing once the claim is back.
func TestSweepDeletesWhatTheExpiredClaimHeld(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	ctx := context.Background()
	put := func(owner string, r skydns.Record, lease clientv3.LeaseID) string {
		t.Helper()
		key := skydns.Key("/skydns", owner, r)
		if _, err := c.Put(ctx, key, string(skydns.Encode(owner, r)), clientv3.WithLease(lease)); err != nil {
			t.Fatal(err)
		}
		return key
	}
	grant, err := c.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	const web = "web.example.org"
	gone := []string{
		put("east", skydns.Record{Name: web, Host: "192.0.2.1"}, 0),
		put("east", skydns.Record{Name: "_http._tcp." + web, Host: web, Port: 80}, 0),
	}
	kept := []string{
		put("west", skydns.Record{Name: web, Host: "192.0.2.2"}, 0),
		put("east", skydns.Record{Name: "a." + web, Host: "192.0.2.3"}, 0),
		put("east", skydns.Record{Name: web, Host: "192.0.2.4"}, grant.ID),
		put("east", skydns.Record{Name: "web2.example.org", Host: "192.0.2.5"}, 0),
	}
	p := New(c, Config{Prefix: "/skydns", Owner: "west", ClaimPrefix: "/skylb/claims", Timeout: 5 * time.Second, Log: quiet()})
	keys := func() []string {
		resp, err := c.Get(ctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, kv := range resp.Kvs {
			out = append(out, string(kv.Key))
		}
		return out
	}

	// east claims the name again before the sweep: nothing goes.
	claim := "/skylb/claims/" + web + "/east"
	if _, err := c.Put(ctx, claim, `{"owner":"east"}`); err != nil {
		t.Fatal(err)
	}
	before := keys()
	if _, err := p.sweepOne(ctx, sweep{web, "east"}); err != nil {
		t.Fatal(err)
	}
	if got := keys(); !slices.Equal(got, before) {
		t.Errorf("a sweep with east's claim back deleted %v", diffKeys(before, got))
	}

	if _, err := c.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if _, err := p.sweepOne(ctx, sweep{web, "east"}); err != nil {
		t.Fatal(err)
	}
	got := keys()
	for _, k := range gone {
		if slices.Contains(got, k) {
			t.Errorf("%s was not swept", k)
		}
	}
	for _, k := range kept {
		if !slices.Contains(got, k) {
			t.Errorf("%s was swept", k)
		}
	}
	if s := p.Stats(); s.Swept != int64(len(gone)) {
		t.Errorf("Stats().Swept = %d, want %d", s.Swept, len(gone))
	}
}

// diffKeys returns the keys of before missing from after.
func diffKeys(before, after []string) []string {
	var out []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			out = append(out, k)
		}
	}
	return out
}
