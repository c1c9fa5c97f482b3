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
	for _, tt := range []struct{ bad, kind string }{
		{"", ""}, {"service", "service"}, {"service/default", "service"}, {"service//web", "service"},
		{"/default/web", ""}, {"service/default/", "service"}, {"service/default/web/x", "service"},
		{"zone-nameserver/ns1", "zone-nameserver"},
	} {
		if got, ok := ParseObjectKey(tt.bad); ok || got != (ObjectKey{Kind: tt.kind}) {
			t.Errorf("ParseObjectKey(%q) = %+v, %v; want refused, kind %q alone", tt.bad, got, ok, tt.kind)
		}
	}
}
