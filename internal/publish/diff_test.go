package publish

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantOf returns the want of a key holding host, with the value "<host>".
func wantOf(key, host string) want {
	return want{key: key, value: []byte(`"` + host + `"`), host: host}
}

// The paths of the names of the tests: the view holds keys relative to them.
const (
	webBase = "/skydns/org/example/web"
	ptrBase = "/skydns/arpa/in-addr/192/0/2/10"
)

// rel returns a key of either name relative to the name's path.
func rel(key string) string {
	if strings.HasPrefix(key, ptrBase) {
		return key[len(ptrBase):]
	}
	return key[len(webBase):]
}

// entryOf returns the view's entry of a key holding w's value under lease.
func entryOf(w want, lease int64) entry {
	return entry{key: rel(w.key), sum: digestOf(w.value), host: w.host, modRev: 7, lease: lease}
}

func TestDiff(t *testing.T) {
	a := wantOf("/skydns/org/example/web/x-a", "192.0.2.1")
	b := wantOf("/skydns/org/example/web/x-b", "192.0.2.2")
	c := wantOf("/skydns/org/example/web/x-c", "192.0.2.3")
	added := func(w want) want { w.added = true; return w }
	tombstone := func(w want) entry { return entry{key: rel(w.key), modRev: 8, deleted: true} }
	sub := wantOf(webBase+"/_tcp/_http/x-a", "web.example.org")
	outside := func(w want) entry { e := entryOf(w, 0); e.outside = true; return e }
	tests := []struct {
		name   string
		wanted []want
		lease  int64
		actual []entry
		want   keyChange
	}{
		{name: "nothing wanted, nothing there"},
		{
			name:   "new keys are written and added",
			wanted: []want{a, b},
			want:   keyChange{puts: []want{added(a), added(b)}},
		},
		{
			name:   "keys as wanted are left alone",
			wanted: []want{a, b},
			lease:  3,
			actual: []entry{entryOf(a, 3), entryOf(b, 3)},
		},
		{
			name:   "a missing key is written beside those in place",
			wanted: []want{a, b, c},
			actual: []entry{entryOf(a, 0), entryOf(c, 0)},
			want:   keyChange{puts: []want{added(b)}},
		},
		{
			name:   "keys nobody wants are deleted, with their hosts",
			wanted: []want{b},
			actual: []entry{entryOf(a, 0), entryOf(b, 0), entryOf(c, 0)},
			want:   keyChange{dels: []string{a.key, c.key}, removed: []string{a.host, c.host}},
		},
		{
			name:   "nothing wanted deletes every key",
			actual: []entry{entryOf(a, 0), entryOf(b, 0)},
			want:   keyChange{dels: []string{a.key, b.key}, removed: []string{a.host, b.host}},
		},
		{
			name:   "a key on another lease is written again, its host not added",
			wanted: []want{a},
			lease:  4,
			actual: []entry{entryOf(a, 3)},
			want:   keyChange{puts: []want{a}},
		},
		{
			name:   "the keys of SRV records beneath the name are the name's too",
			wanted: []want{sub, b},
			actual: []entry{entryOf(sub, 0), entryOf(a, 0)},
			want:   keyChange{puts: []want{added(b)}, dels: []string{a.key}, removed: []string{a.host}},
		},
		{
			name:   "another value of the same host is written, its host not added",
			wanted: []want{{key: a.key, value: []byte(`"192.0.2.1" ttl 60`), host: a.host}},
			actual: []entry{entryOf(a, 0)},
			want:   keyChange{puts: []want{{key: a.key, value: []byte(`"192.0.2.1" ttl 60`), host: a.host}}},
		},
		{
			name:   "another host at the key is written and added",
			wanted: []want{{key: a.key, value: b.value, host: b.host}},
			actual: []entry{entryOf(a, 0)},
			want:   keyChange{puts: []want{{key: a.key, value: b.value, host: b.host, added: true}}},
		},
		{
			name:   "a key skylb deleted and wants again is written and added",
			wanted: []want{a},
			actual: []entry{tombstone(a)},
			want:   keyChange{puts: []want{added(a)}},
		},
		{
			name:   "a tombstone nobody wants is not deleted again",
			actual: []entry{tombstone(a), entryOf(b, 0)},
			want:   keyChange{dels: []string{b.key}, removed: []string{b.host}},
		},
		{
			name:   "a key outside what skylb owns is never deleted",
			wanted: []want{b},
			actual: []entry{outside(a), entryOf(b, 0), entryOf(c, 0)},
			want:   keyChange{dels: []string{c.key}, removed: []string{c.host}},
		},
		{
			name:   "nothing wanted leaves the keys outside what skylb owns",
			actual: []entry{outside(a), outside(b)},
		},
		{
			name:   "a key outside what skylb owns that it wants is taken over",
			wanted: []want{{key: a.key, value: []byte(`"192.0.2.1" from another source`), host: a.host}},
			actual: []entry{outside(a)},
			want:   keyChange{puts: []want{{key: a.key, value: []byte(`"192.0.2.1" from another source`), host: a.host}}},
		},
		{
			name:   "writes and deletions together",
			wanted: []want{a, c},
			lease:  5,
			actual: []entry{entryOf(a, 5), entryOf(b, 5), tombstone(c)},
			want:   keyChange{puts: []want{added(c)}, dels: []string{b.key}, removed: []string{b.host}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diff(tt.wanted, webBase, tt.lease, tt.actual, false)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(keyChange{}, want{})); d != "" {
				t.Errorf("diff() (-want +got):\n%s", d)
			}
		})
	}
}

func TestDiffAtName(t *testing.T) {
	a := wantOf("/skydns/arpa/in-addr/192/0/2/10", "web.example.org")
	other := want{key: a.key, value: []byte(`"api.example.org"`), host: "api.example.org"}
	added := func(w want) want { w.added = true; return w }
	tests := []struct {
		name   string
		wanted []want
		actual []entry
		want   keyChange
	}{
		{
			name:   "a new key must be absent",
			wanted: []want{a},
			want:   keyChange{puts: []want{added(a)}, guards: []keyCond{{key: a.key}}},
		},
		{
			name:   "a key rewritten must be as the view saw it",
			wanted: []want{other},
			actual: []entry{entryOf(a, 0)},
			want:   keyChange{puts: []want{added(other)}, guards: []keyCond{{key: a.key, modRev: 7}}},
		},
		{
			name:   "a key written again after skylb deleted it must be absent",
			wanted: []want{a},
			actual: []entry{{key: rel(a.key), modRev: 8, deleted: true}},
			want:   keyChange{puts: []want{added(a)}, guards: []keyCond{{key: a.key}}},
		},
		{
			name:   "a key deleted must be as the view saw it",
			actual: []entry{entryOf(a, 0)},
			want:   keyChange{dels: []string{a.key}, removed: []string{a.host}, guards: []keyCond{{key: a.key, modRev: 7}}},
		},
		{
			name:   "a key as wanted needs nothing",
			wanted: []want{a},
			actual: []entry{entryOf(a, 0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diff(tt.wanted, ptrBase, 0, tt.actual, true)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(keyChange{}, want{}, keyCond{})); d != "" {
				t.Errorf("diff() (-want +got):\n%s", d)
			}
		})
	}
}
