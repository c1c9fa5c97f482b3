package skydns

import "strings"

// ObjectKey names the object records come from: a record's Source, and the
// controller's key of the object, "<kind>/<namespace>/<name>"
// ("service/default/web"). The zones' own records have sources of another
// form ("zone-nameserver/ns1", say), which ParseObjectKey refuses.
type ObjectKey struct {
	Kind, Namespace, Name string
}

// String returns the key as records and the controller's queue carry it.
func (k ObjectKey) String() string {
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// ParseObjectKey reads a key String wrote; ok is false for a string that is
// not "<kind>/<namespace>/<name>" with none of them empty.
func ParseObjectKey(s string) (k ObjectKey, ok bool) {
	kind, rest, ok1 := strings.Cut(s, "/")
	ns, name, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || kind == "" || ns == "" || name == "" || strings.Contains(name, "/") {
		return ObjectKey{}, false
	}
	return ObjectKey{Kind: kind, Namespace: ns, Name: name}, true
}
