package publish

import (
	"crypto/sha256"
	"slices"
	"strings"

	"github.com/skylb/skylb/internal/skydns"
)

// entry is a key of skylb's in the view, or a tombstone of one it deleted.
type entry struct {
	// key is the key relative to its name's path (see keyBase): the path is
	// the same for every key of the name, and the rest takes a third of the
	// room ("/default-1c2a3c7b5f1e", "/_tcp/_http/default-…", or empty at a
	// name stored at its name).
	key string
	// sum is a digest of the value (see digest): the view only compares
	// values, and a digest takes a tenth of the room of a value.
	sum     digest
	host    string // what the record answers (skydns.Record.Data)
	modRev  int64
	lease   int64
	deleted bool
	// outside marks a key of Owner's that this Publisher does not own (see
	// Config.Owns): it is never deleted. Its source is in name.outside, so
	// that an entry takes 64 bytes rather than 80.
	outside bool
}

// digest identifies a value: the first 64 bits of its SHA-256, so that any
// value that differs from the one wanted, whoever wrote it, is told apart
// (making another value match one skylb wants takes a second preimage of
// 64 bits). At 64 bits an entry fits 80 bytes, not 96: 0.5 MiB at 32,000
// names.
type digest [8]byte

func digestOf(value []byte) digest {
	sum := sha256.Sum256(value)
	return digest(sum[:8])
}

// name is what the Publisher holds for one stored name. Most names have one
// or two records, so both halves are small slices rather than maps: at ten
// thousand names that is the difference between a few and tens of megabytes.
type name struct {
	// records are the records wanted, the slice Set was handed; nil when
	// nothing is wanted. Their keys and values are encoded when the name is
	// compared with the view.
	records []skydns.Record
	// shared and unclaimed are those of the Want (its Follows is in
	// following.follows).
	shared, unclaimed bool
	// shard is the name's lease shard (see lease.go), hashed once; beside
	// the flags it takes no room.
	shard uint8
	// granted is whether the last decision on the name's claim granted it
	// (see tellLocked).
	granted bool
	// share is how this cluster takes part in answering the name, when it
	// shares it (see share.go); nil otherwise.
	share *shareState
	// actual are skylb's keys beneath the name, sorted by key.
	actual []entry
	// claims are the claims of the clusters on the name, this one's
	// included, sorted by owner (see claims.go). A name other clusters
	// claim is kept for their claims alone (see othersOnly).
	claims []claimEntry
	// outside holds the source of each key of actual outside what this
	// Publisher owns, by key; nil when there is none, as almost always.
	outside map[string]string
}

// newName returns the name stored with nothing wanted and no keys.
func newName(stored string) *name {
	return &name{shard: leaseShard(stored)}
}

// othersOnly reports whether the name is held only for other clusters'
// claims: no records wanted, no keys, no claim of this cluster's, owner. Such
// a name has nothing to write, and is not marked.
func (n *name) othersOnly(owner string) bool {
	return n.records == nil && len(n.actual) == 0 && len(n.claims) > 0 && n.claimOf(owner) == nil
}

// claimOf returns owner's claim on the name, or nil.
func (n *name) claimOf(owner string) *claimEntry {
	if i, found := slices.BinarySearchFunc(n.claims, owner, cmpOwner); found {
		return &n.claims[i]
	}
	return nil
}

// find returns the entry of key, or nil.
func (n *name) find(key string) *entry { return find(n.actual, key) }

// find returns the entry of key in entries sorted by key, or nil.
func find(entries []entry, key string) *entry {
	if i, ok := slices.BinarySearchFunc(entries, key, cmpKey); ok {
		return &entries[i]
	}
	return nil
}

// put adds or replaces the entry of e.key, and returns the key as the view
// holds it: e.key may be part of a longer string, which the view does not
// keep. src is the source of a key outside what the Publisher owns
// (e.outside), empty otherwise.
func (n *name) put(e entry, src string) string {
	i, ok := slices.BinarySearchFunc(n.actual, e.key, cmpKey)
	if ok {
		e.key = n.actual[i].key
		n.actual[i] = e
	} else {
		e.key = strings.Clone(e.key)
		n.actual = slices.Insert(n.actual, i, e)
	}
	if e.outside {
		if n.outside == nil {
			n.outside = make(map[string]string)
		}
		n.outside[e.key] = src
	} else if n.outside != nil {
		n.forgetOutside(e.key)
	}
	return e.key
}

// shareHosts has each key of the name that holds the host of a record
// wanted (the keys wanted whole, the name's path baseLen long) hold the record's
// string rather than its own: a key loaded from etcd at a restart holds a
// copy decoded from its value, until the name is compared with what is
// wanted. At 10,000 Services with two named ports and 2,000 Ingresses the
// copies took 0.8 MB of each tree.
func (n *name) shareHosts(wanted []want, baseLen int) {
	for _, w := range wanted {
		if e := n.find(w.key[baseLen:]); e != nil && e.host == w.host {
			e.host = w.host
		}
	}
}

// forgetOutside drops the source of key, if it was outside.
func (n *name) forgetOutside(key string) {
	delete(n.outside, key)
	if len(n.outside) == 0 {
		n.outside = nil
	}
}

// holdsOutside reports whether the name holds a key of Owner's from
// outside what this Publisher owns.
func (n *name) holdsOutside() bool {
	return slices.ContainsFunc(n.actual, func(e entry) bool { return e.outside && !e.deleted })
}

// heldOutside returns the sources of the records of Owner's outside what this
// Publisher owns that hold a name it wants for another namespace, nil when
// none does: it cannot rank their objects, which it does not see, so the
// older name stays theirs.
func heldOutside(n *name) []string {
	if n.records == nil || n.unclaimed || !n.holdsOutside() {
		return nil
	}
	wanted := map[string]bool{}
	for _, r := range n.records {
		wanted[sourceNamespace(r.Source)] = true
	}
	var out []string
	for _, e := range n.actual {
		if src := n.outside[e.key]; e.outside && !e.deleted && !wanted[sourceNamespace(src)] && !slices.Contains(out, src) {
			out = append(out, src)
		}
	}
	slices.Sort(out)
	return out
}

// sourceNamespace returns the namespace of a source "kind/namespace/name".
func sourceNamespace(src string) string {
	k, _ := skydns.ParseObjectKey(src)
	return k.Namespace
}

// remove drops the entry of key.
func (n *name) remove(key string) {
	if i, ok := slices.BinarySearchFunc(n.actual, key, cmpKey); ok {
		n.actual = slices.Delete(n.actual, i, i+1)
		n.forgetOutside(key)
	}
}

func cmpKey(e entry, key string) int { return strings.Compare(e.key, key) }
