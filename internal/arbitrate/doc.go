// Package arbitrate decides which of several clusters sharing an etcd
// publishes a name. It is pure: the claims come in, a decision goes out;
// reading and writing the claims in etcd is package publish's job. The
// value a claim holds in etcd is encoded and decoded here (DecodeClaim,
// EncodeShared), so that readers such as "skylb records" (package inventory)
// read claims without the writer.
//
// Each cluster claims every stored name it publishes (see Claim). The
// earliest claim on a name holds it; a later claim joins it when both are
// shared (skylb.io/shared) and waits otherwise, so that it takes the name
// over when the earlier claims go (see Name).
//
// CoreDNS answers a name with every record stored beneath it, so a cluster
// publishing a.x.example.org adds its addresses to the answers for
// x.example.org. Between clusters sharing an etcd, a name is therefore refused
// while another cluster holds a name nested with it (a strict ancestor or a
// strict descendant) by an older claim: the same rule by age as for one name,
// with no sharing, since skylb.io/shared merges identical names only. The one
// exception is a name beneath a name both clusters share: its records join
// answers that hold both clusters' addresses already, as the SRV records of a
// shared Service do (see Nested). Decide applies both rules.
//
// The clusters that share a name decide together which of them answer it
// (see Share): each publishes beside its claim its policy (balanced or
// failover), its priority, whether it has a healthy address for the name and
// whether it serves it, and each decides from the same claims. In balanced
// every cluster with a healthy address answers; in failover only the most
// preferred ones; every cluster answers when none is healthy. A cluster hands
// a name over only once the cluster taking it serves, and in failover a
// preferred cluster healthy again takes the name back only after a hold-down.
//
// Which object of one cluster publishes a name is package rank's concern,
// never this one's.
package arbitrate
