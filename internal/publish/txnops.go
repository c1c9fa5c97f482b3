package publish

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// minTxnOps is the fewest operations a transaction is cut down to when etcd
// refuses one as too large: below etcd's own default of 128, and enough for
// the largest name a Guard and its claim leave room for.
const minTxnOps = 16

// errSmallerTxns is returned by a flush whose transactions etcd refused as
// too large once the publisher has made them smaller: the flush is retried
// at once.
var errSmallerTxns = errors.New("etcd allows fewer operations per transaction; retrying with smaller transactions")

// txnOps returns the most operations a transaction holds: Config.MaxTxnOps,
// or less once etcd refused that many.
func (p *Publisher) txnOps() int {
	return int(p.maxOps.Load())
}

// fewerTxnOps halves the operations of a transaction after etcd refused a
// transaction of a flush whose limit was from (its --max-txn-ops is lower
// than Config.MaxTxnOps), and reports whether the limit is now lower than
// from: false when it is already at minTxnOps, where the refusal is an error
// like any other.
func (p *Publisher) fewerTxnOps(from int, err error) bool {
	if !errors.Is(err, rpctypes.ErrTooManyOps) || from <= minTxnOps {
		return false
	}
	to := max(from/2, minTxnOps)
	if p.maxOps.CompareAndSwap(int64(from), int64(to)) {
		p.cfg.Log.WithError(err).WithField("operations", to).Warn(
			"etcd refused a transaction as too large: its --max-txn-ops is lower than skylb's --etcd-max-txn-ops; transactions now hold fewer operations")
	}
	return true
}
