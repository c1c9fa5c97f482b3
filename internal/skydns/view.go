package skydns

import "strings"

// ViewPrefix returns the etcd prefix of a view's records: the default
// view's prefix with "-<view>" appended (/skydns-internal for /skydns), so
// that a CoreDNS server block of the view reads it as its etcd plugin's
// path, and etcdctl get --prefix /skydns-internal/ lists it.
func ViewPrefix(prefix, view string) string {
	return strings.TrimSuffix(prefix, "/") + "-" + view
}
