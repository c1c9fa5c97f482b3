// Package dnsprobe asks a DNS server whether it answers zones
// authoritatively: skylb publishes its zones in etcd, and CoreDNS serves
// only the zones its Corefile names, which are configured apart from skylb's.
// A zone published and not served answers nothing, and nothing else says so.
//
// Classify reads one reply (classify.go), Query asks the server (query.go),
// and a Checker asks about every zone at start and then at an interval, and
// reports each zone's state when it changes (checker.go).
package dnsprobe
