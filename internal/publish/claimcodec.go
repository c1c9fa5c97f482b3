package publish

import (
	"bytes"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/skylb/skylb/internal/arbitrate"
)

// claimCodec encodes and decodes the keys and values of one cluster's
// claims (see claims.go). It is set once and changes nothing.
type claimCodec struct {
	owner string
	dir   string // ClaimPrefix with a trailing slash; empty: no claims
	// values are the values of this cluster's claim, unshared and shared
	// (see encode), encoded once.
	values [2][]byte
}

func newClaimCodec(owner, prefix string) claimCodec {
	c := claimCodec{owner: owner, values: [2][]byte{arbitrate.EncodeClaim(owner, false), arbitrate.EncodeClaim(owner, true)}}
	if prefix != "" {
		c.dir = trimSlash(prefix) + "/"
	}
	return c
}

// claiming reports whether names are claimed.
func (c claimCodec) claiming() bool { return c.dir != "" }

// key returns the key of owner's claim on stored.
func (c claimCodec) key(stored, owner string) string { return c.dir + stored + "/" + owner }

// ownKey returns the key of this cluster's claim on stored.
func (c claimCodec) ownKey(stored string) string { return c.key(stored, c.owner) }

// nameDir returns the prefix of every claim on stored.
func (c claimCodec) nameDir(stored string) string { return c.dir + stored + "/" }

// split returns the stored name and the owner of a claim key.
func (c claimCodec) split(key string) (stored, owner string, ok bool) {
	rest, ok := strings.CutPrefix(key, c.dir)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// fromKV returns the claim a key holds. A value that is not a claim is kept
// as an unshared one: it still holds the name for its owner, and if the
// owner is this cluster, the value differs from what it wants and is
// repaired.
func (c claimCodec) fromKV(owner string, kv *mvccpb.KeyValue) claimEntry {
	e := claimEntry{owner: owner, value: kv.Value, created: kv.CreateRevision, modRev: kv.ModRevision, lease: kv.Lease}
	if c.ownUnshared(owner, kv.Value) {
		e.value = c.values[0] // one copy for every name, not one each
	} else {
		e.shared, e.share = arbitrate.DecodeClaim(owner, kv.Value)
	}
	return e
}

// decode is arbitrate.DecodeClaim, but for the value of this cluster's
// unshared claim, the most common by far, which it knows without decoding
// it.
func (c claimCodec) decode(owner string, value []byte) (shared bool, share *arbitrate.Member) {
	if c.ownUnshared(owner, value) {
		return false, nil
	}
	return arbitrate.DecodeClaim(owner, value)
}

// ownUnshared reports whether owner's claim value is this cluster's unshared
// one.
func (c claimCodec) ownUnshared(owner string, value []byte) bool {
	return owner == c.owner && bytes.Equal(value, c.values[0])
}

// encode returns the value of this cluster's claim. There are two, so they
// are encoded once and shared by every name: callers must not modify them.
func (c claimCodec) encode(shared bool) []byte {
	if shared {
		return c.values[1]
	}
	return c.values[0]
}

// encodeShared returns the value of this cluster's claim on a name it
// shares as m.
func (c claimCodec) encodeShared(m arbitrate.Member) []byte {
	m.Owner = c.owner
	return arbitrate.EncodeShared(m)
}
