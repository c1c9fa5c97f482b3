package publish

import (
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
)

// TestEchoOfTransactionUnderWay checks that the watched changes of a
// transaction under way are recorded without marking their names, and that
// any other change of the same keys still marks them.
func TestEchoOfTransactionUnderWay(t *testing.T) {
	const owner, lease = "east", 7
	rec := skydns.Record{Name: "web.example.org", Host: "192.0.2.1"}
	key, value := skydns.Key("/skydns", owner, rec), skydns.Encode(owner, rec)
	gone := "/skydns/org/example/old/x1"
	put := func(key string, value []byte, lease int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: value, Lease: lease, CreateRevision: 5, ModRevision: 5}}
	}
	del := func(key string) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: 6}}
	}
	held := put(gone, skydns.Encode(owner, skydns.Record{Name: "old.example.org", Host: "192.0.2.9"}), lease)
	held.Kv.ModRevision = 4
	claim := "/skylb/claims/web.example.org/" + owner
	other := skydns.Encode(owner, skydns.Record{Name: "web.example.org", Host: "192.0.2.2"})
	batch := []change{{name: "web.example.org", lease: lease, recordLease: lease, claimPlan: claimPlan{claimPut: []byte(`{"owner":"east"}`)},
		keyChange: keyChange{puts: []want{{key: key, value: value}}}}, {name: "old.example.org", keyChange: keyChange{dels: []string{gone}}}}

	tests := []struct {
		name   string
		before []*clientv3.Event // in the view before the batch is sent
		events []*clientv3.Event
		claims bool
		marked bool
	}{
		{name: "the put under way", events: []*clientv3.Event{put(key, value, lease)}},
		{name: "another value", events: []*clientv3.Event{put(key, other, lease)}, marked: true},
		{name: "another lease", events: []*clientv3.Event{put(key, value, lease+1)}, marked: true},
		{name: "the delete under way", before: []*clientv3.Event{held}, events: []*clientv3.Event{del(gone)}},
		{name: "a delete of a key being written", events: []*clientv3.Event{put(key, value, lease), del(key)}, marked: true},
		{name: "the claim under way", events: []*clientv3.Event{put(claim, []byte(`{"owner":"east"}`), lease)}, claims: true},
		{name: "another claim value", events: []*clientv3.Event{put(claim, []byte(`{"owner":"east","shared":true}`), lease)}, claims: true, marked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(nil, Config{Prefix: "/skydns", Owner: owner, ClaimPrefix: "/skylb/claims", Log: quiet()})
			p.applyLocked(tt.before, 4)
			clear(p.work.dirty)
			keys := p.work.sending.add(batch, p.codec)
			if tt.claims {
				p.applyClaimsLocked(tt.events, 5)
			} else {
				p.applyLocked(tt.events, 5)
			}
			if _, marked := p.work.dirty["web.example.org"]; marked != tt.marked {
				t.Errorf("web.example.org marked = %t, want %t", marked, tt.marked)
			}
			if _, marked := p.work.dirty["old.example.org"]; marked {
				t.Error("old.example.org marked by the delete under way")
			}
			if ev := tt.events[len(tt.events)-1]; string(ev.Kv.Key) == key && ev.Type == mvccpb.PUT {
				if n := p.view.names["web.example.org"]; n == nil || n.find(p.relKey("web.example.org", key)) == nil {
					t.Errorf("the change is not recorded in the view: %+v", n)
				}
			}
			if tt.claims && p.ownClaimLocked("web.example.org") == nil {
				t.Error("the claim is not recorded in the view")
			}
			p.work.sending.forget(keys)
			if len(p.work.sending) != 0 {
				t.Errorf("keys left under way after the batch: %v", p.work.sending)
			}
		})
	}
}
