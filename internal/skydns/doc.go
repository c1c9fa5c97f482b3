// Package skydns maps DNS records to the etcd keys and JSON values that CoreDNS's
// etcd plugin serves, and back.
//
// A name is stored as a path of its labels in reverse order under a prefix, and
// every record of the name is one key beneath that path:
//
//	web.default.example.org  A  192.0.2.10
//	/skydns/org/example/default/web/default-5c2f8e0e1a3b = {"host":"192.0.2.10","ttl":30,...}
//
// The last segment of a key is a DNS label made from the owner id and a hash of
// the record's content, so the same record always has the same key and the keys of
// different owners never collide. The exception is a record with an explicit
// Label, such as a zone's nameserver, whose name CoreDNS takes from the key:
// /skydns/org/example/dns/ns/ns1 is the nameserver ns1.ns.dns.example.org.
// And a PTR record is stored at the reverse name of its address itself, with no
// label, since CoreDNS answers a PTR query from that one key:
//
//	10.2.0.192.in-addr.arpa  PTR  web.default.example.org
//	/skydns/arpa/in-addr/192/0/2/10 = {"host":"web.default.example.org","ttl":30,...}
//
// CoreDNS ignores the JSON fields it does not know; skylb adds "owner" and
// "source" so that a person reading etcd sees who wrote a record and why.
package skydns
