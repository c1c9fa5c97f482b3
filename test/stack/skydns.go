package stack

import (
	"slices"
	"strings"
)

// StoredPath returns the etcd directory of a DNS name under /skydns, without
// a trailing slash: web.shop.example.org (with or without the final dot) is
// /skydns/org/example/shop/web. A record of the name is a key beneath it,
// StoredPath(name)+"/"+id, so a prefix read of the name's own records is
// StoredPath(name)+"/". It is written here again, independently of skylb's
// own mapping, so that the tests check that mapping rather than share it.
func StoredPath(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return "/skydns/" + strings.Join(labels, "/")
}
