package publish

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/skydns"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrFenced is returned when a transaction was refused because its conditions
// no longer hold: leadership lost to another replica (a Guard's), or another
// cluster's claim on a name changed (see claims.go).
var ErrFenced = errors.New("transaction refused by its conditions")

// ErrPaused is what a Guard's error wraps when writes wait for something the
// Guard reports itself: the Publisher retries them quietly.
var ErrPaused = errors.New("writes paused")

// guardCmps is the room left in every transaction for a Guard's conditions.
const guardCmps = 4

// Guard adds conditions to every transaction the Publisher commits.
type Guard interface {
	// Compares returns the conditions under which a write may land, or an error
	// when no write may be attempted now.
	Compares() ([]clientv3.Cmp, error)
}

// Config configures a Publisher.
type Config struct {
	Prefix    string        // key prefix, e.g. "/skydns"
	Owner     string        // owner id written into every value
	Timeout   time.Duration // deadline of each etcd request
	MaxTxnOps int           // operations per transaction, at most etcd's --max-txn-ops (halved while etcd refuses that many)
	PageSize  int64         // keys per page when listing the prefix
	Guard     Guard         // optional
	// MaxDeleteRatio is the largest share of skylb's records a full
	// reconciliation may delete at once when it owns more than
	// minOwnedForRatio of them; a larger deletion is held back. Deletions
	// driven by changes to objects are never held. 0 means 0.5; 1 or more
	// disables the check.
	MaxDeleteRatio float64
	// MaxTxnsInFlight is how many transactions one flush commits at once
	// (they touch distinct names); etcd then shares its disk syncs among
	// them. 0 means 4.
	MaxTxnsInFlight int
	// Inactive starts the Publisher without writing, for a replica that is
	// not (yet) the leader; SetActive starts writing.
	Inactive bool
	// DryRun logs every change instead of writing it.
	DryRun bool
	// ObservePropagation, when set, is told how long each change took from
	// being observed in Kubernetes to being committed in etcd.
	ObservePropagation func(time.Duration)
	// ClaimPrefix, when set, is where the clusters sharing the etcd claim the
	// names they publish (see claims.go); empty claims nothing.
	ClaimPrefix string
	// Verdicts, when set, is told whenever the decision on a claimed name
	// changes (granted, or refused with the owners holding it or a name
	// nested with it), and whenever the decision on a name this cluster
	// shares with others changes (see share.go): whether this cluster
	// serves the name, which clusters answer it, whether it waits for its
	// failback hold-down.
	Verdicts *Verdicts
	// Gate, when set, is the default view's Publisher, for a view's: a name's
	// records are written only while it answers the name (see gate.go).
	Gate Gate
	// FailbackHoldDown is how long a preferred cluster of a failover name,
	// healthy again, waits before it takes the name back from a healthy
	// cluster that answers it (see arbitrate.Share).
	FailbackHoldDown time.Duration
	// RecordExpiry, when set, attaches the claims (and the records no claim
	// holds) to etcd leases of this TTL that the Publisher keeps alive (see
	// lease.go): the claims of a cluster whose skylb stops renewing them
	// expire, and the other clusters delete the records they held (sweep.go).
	RecordExpiry time.Duration
	// Owns, when set, reports whether a record of Owner coming from source
	// (the value's source field) is this Publisher's to keep: a skylb
	// scoped to some namespaces or kinds of object owns only the records of
	// those. A record it does not own is left alone: never deleted, not
	// counted by MaxDeleteRatio, and the name's claim is kept while it is
	// there. One it wants is taken over. Nil owns every record of Owner.
	Owns func(source string) bool
	Log  logrus.FieldLogger
}

// minOwnedForRatio is the number of owned records above which MaxDeleteRatio applies.
const minOwnedForRatio = 10

func (c *Config) defaults() {
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = 128
	}
	if c.MaxTxnsInFlight <= 0 {
		c.MaxTxnsInFlight = 4
	}
	if c.PageSize == 0 {
		c.PageSize = 1000
	}
	if c.MaxDeleteRatio == 0 {
		c.MaxDeleteRatio = 0.5
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
}

// Want is what is wanted at one stored name.
type Want struct {
	// Records are the records; none wants the name removed. The Publisher
	// keeps the slice it is handed: it must not be changed afterwards.
	Records []skydns.Record
	// Shared lets other clusters whose objects share the name publish it
	// beside this one (see claims.go).
	Shared bool
	// Unclaimed records are claimed by no cluster: every cluster keeps its
	// own, like the apex guard of a zone they share.
	Unclaimed bool
	// Policy and Priority say how the clusters sharing the name answer it
	// (a Shared name only; Policy "" is Balanced, Priority 0 the most
	// preferred); Unhealthy says that every address of this cluster for
	// the name fails its health checks (see share.go).
	Policy    arbitrate.Policy
	Priority  int
	Unhealthy bool
	// Follows, when set, is the stored name the records point to: they are
	// written only while this cluster publishes that name (a PTR record
	// follows its forward name; see atname.go).
	Follows string
	// Observed is when the Kubernetes change behind it was seen, or zero.
	Observed time.Time
}
