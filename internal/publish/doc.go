// Package publish writes skylb's records to etcd.
//
// A Publisher holds two things per stored name: the records skylb wants there
// (set by the controller) and the keys skylb owns there (its view of etcd). The
// view is loaded by one paged list of the prefix and kept current by a watch from
// the next revision, so comparing the two needs no etcd read. When they differ,
// the Publisher writes the difference in transactions: all changes to one name in
// one transaction, many names per transaction up to etcd's operation limit, and a
// few transactions at once. The change of one name (plan, from what its claims
// decided) and the split of the changes into transactions (batcher) are pure;
// the Publisher reads the view under its lock, records what was decided and
// writes to etcd. A flush decides each transaction's
// names as a slot of those in flight frees up (see queue.go), so that a cold
// start does not hold the changes of every name at once.
//
// The parts and their locks. Everything that reaches a Publisher from
// outside its writer is a message on its inbox (inbox.go: Set, Complete,
// Resync, Recheck, the watches' events, a lease obtained, a hold-down's
// end), under the inbox's own lock, a leaf: the controller, the watches and
// the timers never wait for a flush. The table (Publisher.mu: the names, the
// claims, the followers, the queue of dirty names) is taken only by the
// writer's goroutines and the readers (the views' Gate, CountRecords,
// Ready), and lock receives the inbox first. A name that may need a change
// is marked on the queue (work, queue.go); a flush takes the marked names
// whole, plans each from what the table holds then (plan, pure; the claims
// decided by claimLocked), batches the changes (batcher, pure) and commits
// them in transactions fenced by the Guard; a failed one marks its names
// again. Verdicts (verdicts.go) and the sweeper (sweep.go) have their own
// leaf locks, and the leases' ids are atomic (lease.go). No Publisher holds
// another's table: a view asks its Gate before it takes its own (gate.go).
//
// Clusters sharing an etcd claim the names they publish beside the records; which
// of them publishes a name is decided by package arbitrate (see claims.go), and
// which of the clusters sharing a name answer it too (see share.go).
//
// A key is skylb's when its value is JSON whose "owner" is skylb's owner id. Keys of
// other owners, hand-written keys and keys whose value is not JSON are never changed
// or deleted, with one exception: a key skylb wants to write is written, which
// repairs garbage stored under one of skylb's own deterministic keys. Nothing is ever
// deleted by prefix.
//
// Until Complete is called the Publisher writes nothing, so that nothing is deleted
// before the controller's caches have synced.
package publish
