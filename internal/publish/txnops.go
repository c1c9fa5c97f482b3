package publish

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// minTxnOps is the fewest operations a transaction is cut down to when etcd
// refuses one as too large, well below etcd's own default of 128.
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

// fewerTxnOps halves the operations of a transaction after etcd refused as
// too large one holding the changes of a number of names, in a flush whose
// limit was from (etcd's --max-txn-ops is lower than Config.MaxTxnOps), and
// reports whether the limit is now lower than from. It is not when the limit
// is already at minTxnOps, nor for a transaction of one name, which makes a
// transaction of its own whatever the limit: the refusal is then an error
// like any other.
func (p *Publisher) fewerTxnOps(from, names int, err error) bool {
	if !errors.Is(err, rpctypes.ErrTooManyOps) || from <= minTxnOps || names < 2 {
		return false
	}
	to := max(from/2, minTxnOps)
	if p.maxOps.CompareAndSwap(int64(from), int64(to)) {
		p.cfg.Log.WithError(err).WithField("operations", to).Warn(
			"etcd refused a transaction as too large: its --max-txn-ops is lower than skylb's --etcd-max-txn-ops; transactions now hold fewer operations")
	}
	return true
}
