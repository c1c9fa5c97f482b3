package publish

import (
	"slices"
	"strings"

	"github.com/skylb/skylb/internal/skydns"
)

// planInput is what plan decides one name from: what the Publisher holds for
// it, read under its lock, and what its claims decided (claimLocked).
type planInput struct {
	stored        string
	prefix, owner string          // Config.Prefix and Config.Owner, which the keys and values carry
	records       []skydns.Record // the records wanted; nil when nothing is
	actual        []entry         // skylb's keys beneath the name, sorted by key
	claimed       bool            // a cluster, this one or another, claims the name
	// claim is what the claims decided; its write is false while records
	// outside what the Publisher owns hold the name (heldOutside).
	claim claimPlan
	// held says the records may not be written now (see atname.go); gate
	// that the default view answers the name (always outside a view).
	held, gate bool
	lease      int64 // the lease of the name's shard, the claim's
	// recordLease is the lease of the records' puts (see recordLease).
	recordLease int64
	maxOps      int // the most operations a transaction holds now
}

// planned is plan's decision on one name.
type planned struct {
	change
	// wants are the keys wanted, written or already there.
	wants []want
	// misfiled are records wanted that the name does not hold
	// (skydns.HeldBy): a caller's error, left out.
	misfiled []skydns.Record
	// again says that keys beneath the name (its SRV records') wait for
	// the next flush: they would not fit one transaction beside the name's.
	again bool
	// drop says that nothing is wanted, stored or claimed at the name any
	// more: the Publisher forgets it.
	drop bool
}

// plan returns what brings one name to what is wanted: the keys to write and
// delete beside the claim's change, with the conditions the transaction
// holds under. It is pure: it changes nothing, and the Publisher records
// what it decided (diffLocked). A change with no operation is nothing to
// write.
func plan(in planInput) planned {
	out := planned{change: change{name: in.stored, lease: in.lease, recordLease: in.recordLease, claimPlan: in.claim}}
	if in.claim.write && !in.held && in.gate {
		out.wants, out.misfiled = encodeWants(in.prefix, in.owner, in.stored, in.records)
	}
	base := skydns.Path(in.prefix, in.stored)
	out.keyChange = diff(out.wants, base, in.recordLease, in.actual, atName(in.stored))
	if ops, _ := out.counts(); ops > in.maxOps {
		// A name's keys change in one transaction, which its own records
		// fit (config holds --max-addresses-per-name to it); the keys of its
		// SRV records, beneath it, wait for the next flush when they would
		// not fit beside them.
		if own, deferred := out.keyChange.withoutBeneath(base); deferred && len(own.puts)+len(own.dels) > 0 {
			out.keyChange, out.again = own, true
		}
	}
	if ops, _ := out.counts(); ops == 0 {
		out.drop = in.records == nil && len(in.actual) == 0 && !in.claimed
	}
	return out
}

// encodeWants encodes the keys and values of records wanted at stored, sorted
// by key; of records with the same key the last one counts. A record that
// stored does not hold (skydns.HeldBy: its own records and its SRV records)
// is returned as misfiled and left out, since the view files every key by
// that rule and would file its key under another name.
func encodeWants(prefix, owner, stored string, records []skydns.Record) (wants []want, misfiled []skydns.Record) {
	out := make([]want, 0, len(records))
	for _, r := range records {
		if skydns.HeldBy(r.Name) != stored {
			misfiled = append(misfiled, r)
			continue
		}
		out = append(out, want{key: skydns.Key(prefix, owner, r), value: skydns.Encode(owner, r), host: r.Data()})
	}
	slices.SortStableFunc(out, func(a, b want) int { return strings.Compare(a.key, b.key) })
	kept := out[:0]
	for i, w := range out {
		if i+1 < len(out) && out[i+1].key == w.key {
			continue
		}
		kept = append(kept, w)
	}
	return kept, misfiled
}
