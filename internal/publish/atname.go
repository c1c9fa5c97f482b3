package publish

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
)

// following is what a Publisher knows of the names stored at their name:
// followers holds, by stored name, the names following it, refollow those
// to decide again in the flush under way, and occupied the names whose key
// holds a value that is not this cluster's.
type following struct {
	// follows is, for each name that follows another (Want.Follows), that
	// name; followers the other way round. Few names follow one, so this
	// is a map rather than a field of every name.
	follows   map[string]string
	followers map[string]nameSet
	refollow  []string
	occupied  map[string]bool
}

// A name stored at its name (skydns.AtName: the reverse name of an address,
// where its PTR record lives) differs from the others in two ways.
//
// Its key is not this cluster's own: it is the one key CoreDNS reads for the
// address, so any writer of a PTR record for the address (another cluster, a
// person, another tool) writes the same key. skylb writes it only while
// nobody else holds it: a value there that is not this cluster's (another
// owner's, hand-written, not JSON) occupies the name, and skylb leaves it
// alone, claim included, until that value goes. Each put and delete of such a
// key is guarded in its transaction: the key is absent, or this cluster's at
// the revision the view holds. A write racing another writer's fails, and is
// decided again once the watch has delivered the other write.
//
// And its records follow another name (Want.Follows): a PTR record points to
// a name and exists only while this cluster publishes that name, that is,
// while its claim on the name is granted (see claims.go), not merely while
// its objects want it. A name whose followed name another cluster holds is
// withdrawn with its claim, and written again once the followed name is
// granted.

// keyCond is the condition on a key stored at its name.
type keyCond struct {
	key    string
	modRev int64 // the revision the key must have; 0: it must be absent
}

// keyConds appends the conditions of guards.
func keyConds(guards []keyCond, cmps []clientv3.Cmp) []clientv3.Cmp {
	for _, g := range guards {
		if g.modRev == 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(g.key), "=", 0))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(g.key), "=", g.modRev))
		}
	}
	return cmps
}

// heldLocked reports whether a name's records may not be written now: its
// key is occupied by another writer, or this cluster does not publish the
// name its records follow.
func (p *Publisher) heldLocked(stored string) bool {
	if p.follow.occupied[stored] {
		return true
	}
	follows := p.follow.follows[stored]
	if follows == "" || !p.codec.claiming() {
		return false
	}
	d, _ := p.verdictLocked(follows)
	return !d.Granted
}

// set records the name stored follows; empty for none.
func (f *following) set(stored, follows string) {
	was := f.follows[stored]
	if was == follows {
		return
	}
	if was != "" {
		if set := f.followers[was]; set != nil {
			delete(set, stored)
			if len(set) == 0 {
				delete(f.followers, was)
			}
		}
	}
	if follows == "" {
		delete(f.follows, stored)
	} else {
		f.follows[stored] = follows
		if f.followers[follows] == nil {
			f.followers[follows] = make(nameSet)
		}
		f.followers[follows][stored] = struct{}{}
	}
}

// last moves the names that follow another after the others, each part in
// its order.
func (f *following) last(names []string) []string {
	var following []string
	kept := names[:0]
	for _, stored := range names {
		if f.follows[stored] != "" {
			following = append(following, stored)
		} else {
			kept = append(kept, stored)
		}
	}
	return append(kept, following...)
}

// requeue queues the names following stored for the flush under way, after
// the decision on stored changed.
func (f *following) requeue(stored string) {
	for name := range f.followers[stored] {
		f.refollow = append(f.refollow, name)
	}
}

// takeRequeued returns the names requeued since the last call, and forgets
// them.
func (f *following) takeRequeued() []string {
	out := f.refollow
	f.refollow = nil
	return out
}

// occupy records whether the key of a name stored at its name holds a value
// that is not this cluster's, and reports whether that changed.
func (f *following) occupy(stored string, occupied bool) bool {
	if f.occupied[stored] == occupied {
		return false
	}
	if occupied {
		f.occupied[stored] = true
	} else {
		delete(f.occupied, stored)
	}
	return true
}

// occupyLocked records whether the key of a name stored at its name holds a
// value that is not this cluster's, and marks the name when that changes.
func (p *Publisher) occupyLocked(stored string, occupied bool) {
	if !p.follow.occupy(stored, occupied) {
		return
	}
	n := p.view.names[stored]
	if n == nil {
		return
	}
	if occupied && n.records != nil {
		p.cfg.Log.WithField("name", stored).
			Warn("another writer holds the key of this name; leaving it alone until its value goes")
	}
	p.markLocked(stored)
}

// atName reports whether a stored name's records are stored at the name.
func atName(stored string) bool { return skydns.AtName(stored) }
