// Package rank ranks the objects of one cluster that claim the same names: it
// decides which object publishes which name, and what records each published
// name gets.
//
// CoreDNS answers a name with every record stored beneath it, so two namespaces
// must never publish names where one equals or lies beneath the other. Claims are
// ranked first come, first served: older objects (creationTimestamp) first, then
// by namespace and name, whatever the kind of name, generated names
// (<service>.<namespace>.<zone>) included. The ranking depends on the objects
// alone, so the order of events and a restart never change the outcome. A claim
// is granted unless a better-ranked claim of another namespace holds a related
// name: a later object never takes a name from an older one of another
// namespace. Objects of one namespace may share a name; their addresses and
// the texts of their TXT records are merged.
//
// Names are resolved in groups: all names below the same child of a zone (for
// example everything under default.example.org), and the zone apex on its own.
// Only names in one group can be related, so a change re-resolves one group.
//
// The PTR records of the published addresses that lie in reverse zones follow
// the same rule: an address's PTR record points to the name of the oldest
// object publishing it (see reverse.go).
//
// Which of several clusters sharing an etcd publishes a name is decided apart,
// by package arbitrate.
package rank
