package skydns

import "strings"

// ObjectKey names the object records come from: the controller's key of
// the object, from the informers' events to its records, whose Source is
// its String, "<kind>/<namespace>/<name>" ("service/default/web"). The
// zones' own records have sources of another form ("zone-nameserver/ns1",
// say), which ParseObjectKey refuses.
type ObjectKey struct {
	Kind, Namespace, Name string
}

// String returns the key as records carry it, in etcd and in logs.
func (k ObjectKey) String() string {
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// ParseObjectKey reads a key String wrote, from a record read back from
// etcd; ok is false for a string that is not "<kind>/<namespace>/<name>"
// with none of them empty. k.Kind is then still what comes before the first
// slash, so that a reader tells a broken key of an object's kind from the
// source of a zone's record.
func ParseObjectKey(s string) (k ObjectKey, ok bool) {
	kind, rest, ok1 := strings.Cut(s, "/")
	ns, name, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || kind == "" || ns == "" || name == "" || strings.Contains(name, "/") {
		return ObjectKey{Kind: kind}, false
	}
	return ObjectKey{Kind: kind, Namespace: ns, Name: name}, true
}
