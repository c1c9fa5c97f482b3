package skydns

import "testing"

func TestObjectKey(t *testing.T) {
	k := ObjectKey{Kind: "service", Namespace: "default", Name: "web"}
	if s := k.String(); s != "service/default/web" {
		t.Errorf("String: %q", s)
	}
	if got, ok := ParseObjectKey(k.String()); !ok || got != k {
		t.Errorf("ParseObjectKey(%q) = %+v, %v", k.String(), got, ok)
	}
	for _, bad := range []string{"", "service", "service/default", "service//web", "/default/web", "service/default/", "service/default/web/x", "zone-nameserver/ns1"} {
		if got, ok := ParseObjectKey(bad); ok {
			t.Errorf("ParseObjectKey(%q) = %+v, want refused", bad, got)
		}
	}
}
