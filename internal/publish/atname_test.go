package publish_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

const (
	ptrName = "10.2.0.192.in-addr.arpa"
	ptrKey  = "/skydns/arpa/in-addr/192/0/2/10"
)

// TestPTRKeyOfAnotherWriterIsLeftAlone: a PTR record's key is the address's,
// not the owner's; skylb writes it only while no other writer holds it.
func TestPTRKeyOfAnotherWriterIsLeftAlone(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	manual := `{"host":"manual.example.net","ttl":60}`
	put(t, c, ptrKey, manual)
	p := start(t, c)

	ptr := skydns.Record{Name: ptrName, Host: "web.example.org", TTL: 30, Source: "service/default/web"}
	other := rec("other.example.org", "192.0.2.99")
	p.Set(ptrName, publish.Want{Records: []skydns.Record{ptr}, Follows: "web.example.org"})
	p.Set(other.Name, publish.Want{Records: []skydns.Record{other}})
	p.Complete()
	waitIdle(t, p)
	if got := dump(t, c)[ptrKey]; got != manual {
		t.Fatalf("%s = %s, want the hand-written value left alone", ptrKey, got)
	}

	// The hand-written value goes: skylb writes its own.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Delete(ctx, ptrKey); err != nil {
		t.Fatal(err)
	}
	_, value := kv(ptr)
	eventually(t, "skylb's PTR record after the other value went", func() bool { return dump(t, c)[ptrKey] == value })

	// Another owner overwrites it: skylb yields, where it would repair a key
	// of its own elsewhere.
	foreign := `{"host":"api.example.org","owner":"cluster-b"}`
	put(t, c, ptrKey, foreign)
	// A record of skylb's edited after that is repaired once the watch has
	// passed both edits: by then the PTR key's change has been seen too.
	puts := p.Stats().Puts
	otherKey, otherValue := kv(other)
	put(t, c, otherKey, `{"host":"192.0.2.98","owner":"test"}`)
	eventually(t, "the edited record repaired", func() bool { return dump(t, c)[otherKey] == otherValue })
	waitIdle(t, p)
	if got := dump(t, c)[ptrKey]; got != foreign {
		t.Errorf("%s = %s, want the other owner's value left alone", ptrKey, got)
	}
	if n := p.Stats().Puts - puts; n != 1 {
		t.Errorf("keys written after the edits: %d, want 1 (the repair alone)", n)
	}

	// skylb no longer wants it: the other owner's value stays.
	p.Set(ptrName, publish.Want{})
	waitIdle(t, p)
	if got := dump(t, c)[ptrKey]; got != foreign {
		t.Errorf("%s = %s after skylb withdrew its record, want the other owner's value", ptrKey, got)
	}
}

// TestPTRFollowsItsName: with clusters sharing the etcd, a PTR record is
// written only while its cluster holds the name it points to.
func TestPTRFollowsItsName(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	east := startCluster(t, c, "east", 0)
	west := startCluster(t, c, "west", 0)
	const name = "web.example.org"
	ptrFor := func(host string) skydns.Record {
		return skydns.Record{Name: ptrName, Host: host, TTL: 30, Source: "service/default/web"}
	}
	ptrHost := func() []string {
		v, ok := dump(t, c)[ptrKey]
		if !ok {
			return nil
		}
		d, err := skydns.Decode([]byte(v))
		if err != nil {
			t.Fatalf("decode %s: %v", ptrKey, err)
		}
		return []string{d.Owner + "=" + d.Host}
	}

	east.set(name, "192.0.2.1", false)
	waitIdle(t, east.pub)
	// West publishes the name with 192.0.2.10, and its PTR record: east
	// holds the name, so neither is written, and west claims no PTR.
	west.set(name, "192.0.2.10", false)
	west.pub.Set(ptrName, publish.Want{Records: []skydns.Record{ptrFor(name)}, Follows: name})
	waitIdle(t, west.pub)
	if got := west.verdict(name); got != "refused by east" {
		t.Fatalf("west's verdict on %s = %q, want refused by east", name, got)
	}
	if got, claims := ptrHost(), claimsOf(t, c, ptrName); len(got) != 0 || len(claims) != 0 {
		t.Fatalf("PTR %q, claims %q while east holds %s; want neither", got, claims, name)
	}

	// East withdraws the name: west takes it over, and its PTR record with it.
	east.pub.Set(name, publish.Want{})
	equalEventually(t, "west's PTR record once it holds the name", ptrHost, "west="+name)
	if got := claimsOf(t, c, ptrName); !slices.Equal(got, []string{"west"}) {
		t.Errorf("claims on %s = %q, want west's", ptrName, got)
	}

	// East publishes its own PTR record for the address while west holds it:
	// first claim holds, east's waits.
	east.set("api.example.org", "192.0.2.10", false)
	east.pub.Set(ptrName, publish.Want{Records: []skydns.Record{ptrFor("api.example.org")}, Follows: "api.example.org"})
	waitIdle(t, east.pub)
	if got := ptrHost(); !slices.Equal(got, []string{"west=" + name}) {
		t.Errorf("PTR %q after east asked for it too, want west's kept", got)
	}

	// West withdraws its name, and with it the PTR record: east's follows.
	west.pub.Set(name, publish.Want{})
	west.pub.Set(ptrName, publish.Want{})
	equalEventually(t, "east's PTR record once west's went", ptrHost, "east=api.example.org")

	// Everything withdrawn: nothing left.
	east.pub.Set(ptrName, publish.Want{})
	east.pub.Set("api.example.org", publish.Want{})
	waitIdle(t, east.pub)
	if diff := cmp.Diff(map[string]string{}, dump(t, c)); diff != "" {
		t.Errorf("records left (-want +got):\n%s", diff)
	}
}
