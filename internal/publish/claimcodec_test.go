package publish

import (
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// TestClaimCodec checks the claims' keys and values with literals alone.
func TestClaimCodec(t *testing.T) {
	c := newClaimCodec("east", "/skylb/claims/")
	if !c.claiming() || newClaimCodec("east", "").claiming() {
		t.Error("claiming: want true with a prefix, false without")
	}
	if got := c.key("web.example.org", "west"); got != "/skylb/claims/web.example.org/west" {
		t.Errorf("key = %q", got)
	}
	for _, tt := range []struct {
		key, stored, owner string
		ok                 bool
	}{
		{"/skylb/claims/web.example.org/west", "web.example.org", "west", true},
		{"/skylb/claims/web.example.org/", "", "", false},
		{"/skylb/claims/west", "", "", false},
		{"/skydns/org/example/web", "", "", false},
	} {
		stored, owner, ok := c.split(tt.key)
		if stored != tt.stored || owner != tt.owner || ok != tt.ok {
			t.Errorf("split(%q) = %q, %q, %v; want %q, %q, %v", tt.key, stored, owner, ok, tt.stored, tt.owner, tt.ok)
		}
	}
	own := c.fromKV("east", &mvccpb.KeyValue{Value: []byte(`{"owner":"east"}`), CreateRevision: 3, ModRevision: 5, Lease: 7})
	if own.shared || own.share != nil || &own.value[0] != &c.encode(false)[0] || own.created != 3 || own.modRev != 5 || own.lease != 7 {
		t.Errorf("this cluster's unshared claim decoded as %+v, want the one shared value", own)
	}
	if shared, _ := c.decode("east", c.encode(true)); !shared {
		t.Error("east's shared value read as unshared")
	}
	junk := c.fromKV("west", &mvccpb.KeyValue{Value: []byte("not json")})
	if junk.shared {
		t.Errorf("a value that is not a claim read as %+v, want an unshared claim", junk)
	}
}
