package publish

import (
	"slices"
	"strings"
)

// want is a key skylb wants written.
type want struct {
	key   string
	value []byte
	host  string // what the record answers (skydns.Record.Data)
	// added says that the host is not published at the key yet, for the log.
	added bool
}

// keyChange is what brings skylb's keys beneath one name to what is wanted:
// the keys to write and the keys to delete.
type keyChange struct {
	puts []want
	dels []string
	// removed are the hosts of dels, for the log.
	removed []string
	// guards are the conditions on the keys of a name stored at its name
	// (see atname.go): each key written or deleted is as the view saw it.
	guards []keyCond
}

// diff returns the keyChange that brings actual, skylb's keys beneath one
// name sorted by key, to wanted, sorted by key too, every key attached to
// lease. A key is written when it is missing, deleted, holds another value or
// is attached to another lease; a key of skylb's that is not wanted is
// deleted, unless it lies outside what skylb owns. A tombstone is never
// deleted again. For a name stored at its name (atName), each key written or
// deleted is guarded: it must be absent, or this cluster's at the revision the
// view holds. The wanted keys are whole, those of actual relative to base, the
// name's path (see entry.key); the keys of the change are whole.
func diff(wanted []want, base string, lease int64, actual []entry, atName bool) keyChange {
	var c keyChange
	for _, w := range wanted {
		e := find(actual, w.key[len(base):])
		if e != nil && !e.deleted && e.sum == digestOf(w.value) && e.lease == lease {
			continue
		}
		w.added = e == nil || e.deleted || e.host != w.host
		c.puts = append(c.puts, w)
		if atName {
			g := keyCond{key: w.key}
			if e != nil && !e.deleted {
				g.modRev = e.modRev
			}
			c.guards = append(c.guards, g)
		}
	}
	for _, e := range actual {
		if e.deleted || e.outside {
			continue
		}
		if _, ok := slices.BinarySearchFunc(wanted, e.key, func(w want, rel string) int { return strings.Compare(w.key[len(base):], rel) }); ok {
			continue
		}
		key := base + e.key
		c.dels = append(c.dels, key)
		c.removed = append(c.removed, e.host)
		if atName {
			c.guards = append(c.guards, keyCond{key: key, modRev: e.modRev})
		}
	}
	return c
}

// withoutBeneath returns c without the puts and deletes of keys beneath base,
// the name's path (its SRV records'), and whether it had any.
func (c keyChange) withoutBeneath(base string) (keyChange, bool) {
	beneath := func(key string) bool { return len(key) > len(base) && strings.Contains(key[len(base)+1:], "/") }
	out := keyChange{guards: c.guards}
	for _, w := range c.puts {
		if !beneath(w.key) {
			out.puts = append(out.puts, w)
		}
	}
	for i, key := range c.dels {
		if !beneath(key) {
			out.dels, out.removed = append(out.dels, key), append(out.removed, c.removed[i])
		}
	}
	return out, len(out.puts)+len(out.dels) < len(c.puts)+len(c.dels)
}
