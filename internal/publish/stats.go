package publish

import (
	"sync/atomic"
	"time"

	"github.com/skylb/skylb/internal/skydns"
)

// Stats counts what a Publisher has written since it started.
type Stats struct {
	Txns        int64 // transactions committed
	Puts        int64 // keys written
	Deletes     int64 // keys deleted
	Errors      int64 // failed etcd requests of any kind
	ListErrors  int64
	WatchErrors int64
	TxnErrors   int64
	Relists     int64 // full lists of the prefix
	// Refused is the number of names another cluster holds, or holds a name
	// nested with (see claims.go and nested.go).
	Refused int64
	// LeasesLost counts the record leases that expired under skylb.
	LeasesLost int64
	// Swept counts the records of other clusters deleted because their
	// claim expired (see sweep.go).
	Swept int64
	// TookOver and HandedOver count the times this cluster started and
	// stopped serving a shared name it had claimed before, as committed;
	// Standby is the number of shared names it claims and does not serve
	// (see share.go).
	TookOver, HandedOver, Standby int64
	// HeldDeletes is the number of deletions the last full reconciliation held
	// back under MaxDeleteRatio; 0 when it held none.
	HeldDeletes int64
	// NoSpaceErrors counts transactions etcd refused because its database is
	// full (NOSPACE); NoSpace is true while the latest one was.
	NoSpaceErrors int64
	NoSpace       bool
	// LastSync is when a flush last found etcd as skylb wants it, or left
	// it so; zero before the first. A writing Publisher flushes at least at
	// every Resync, so a LastSync older than a few resync periods means
	// writes fail or never run.
	LastSync time.Time
}

// Stats returns the counters of what the Publisher has done.
func (p *Publisher) Stats() Stats { return p.count.stats() }

// counters are what a Publisher counts as it works; each is updated on its
// own, without the Publisher's lock.
type counters struct {
	txns, puts, deletes, relists, held atomic.Int64
	listErrs, watchErrs, txnErrs       atomic.Int64
	refused, leasesLost, swept         atomic.Int64
	tookOver, handedOver, standby      atomic.Int64
	noSpaceErrs                        atomic.Int64
	noSpace                            atomic.Bool
	lastSync                           atomic.Int64 // unix nanoseconds; see Stats.LastSync
}

// stats returns the counters' values.
func (c *counters) stats() Stats {
	return Stats{
		Txns: c.txns.Load(), Puts: c.puts.Load(), Deletes: c.deletes.Load(),
		Errors:     c.listErrs.Load() + c.watchErrs.Load() + c.txnErrs.Load(),
		ListErrors: c.listErrs.Load(), WatchErrors: c.watchErrs.Load(), TxnErrors: c.txnErrs.Load(),
		Relists: c.relists.Load(), HeldDeletes: c.held.Load(),
		Refused: c.refused.Load(), LeasesLost: c.leasesLost.Load(), Swept: c.swept.Load(),
		TookOver: c.tookOver.Load(), HandedOver: c.handedOver.Load(), Standby: c.standby.Load(),
		NoSpaceErrors: c.noSpaceErrs.Load(), NoSpace: c.noSpace.Load(),
		LastSync: lastSync(c.lastSync.Load()),
	}
}

// synced records that etcd was found, or left, as skylb wants it at t.
func (c *counters) synced(t time.Time) { c.lastSync.Store(t.UnixNano()) }

// noteTxn records whether the latest transaction was refused for NOSPACE.
func (c *counters) noteTxn(err error) {
	full := err != nil && IsNoSpace(err)
	if full {
		c.noSpaceErrs.Add(1)
	}
	c.noSpace.Store(full)
}

// lastSync is the time of unix nanoseconds ns, zero for 0.
func lastSync(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// CountRecords calls f for every record wanted that CoreDNS serves, with its
// stored name and the type CoreDNS serves it as; the apex guard, which CoreDNS
// serves as nothing, is left out.
func (p *Publisher) CountRecords(f func(stored string, t skydns.Type)) {
	p.lock()
	defer p.mu.Unlock()
	for stored, n := range p.view.names {
		for _, r := range n.records {
			if t := r.Type(); t != skydns.None {
				f(stored, t)
			}
		}
	}
}

// CountOutside returns the number of records of Owner in etcd that this
// Publisher does not own (see Config.Owns), and leaves alone.
func (p *Publisher) CountOutside() int {
	p.lock()
	defer p.mu.Unlock()
	n := 0
	for _, nm := range p.view.names {
		for _, e := range nm.actual {
			if e.outside && !e.deleted {
				n++
			}
		}
	}
	return n
}
