package stack

import "testing"

func TestStoredPath(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"web.example.org", "/skydns/org/example/web"},
		{"web.shop.example.org.", "/skydns/org/example/shop/web"},
		{"example.org", "/skydns/org/example"},
	} {
		if got := StoredPath(tc.name); got != tc.want {
			t.Errorf("StoredPath(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
