package publish

// batcher fills one transaction with changes, in their order. etcd limits the
// operations and the conditions of a transaction to maxOps each, and a
// Guard's conditions take guardCmps of them. The names of a batch share most
// ancestors, each asked about once (see nested.go). A change larger than the
// limits makes a batch on its own.
type batcher struct {
	maxOps    int
	batch     []change
	ops, cmps int
	asked     map[string]bool
}

func newBatcher(maxOps int) *batcher {
	return &batcher{maxOps: maxOps, cmps: guardCmps, asked: make(map[string]bool)}
}

// add adds c to the batch and reports whether it fit. A change that does not
// fit is left out, and the batch is full.
func (b *batcher) add(c change) bool {
	o, more := c.counts()
	for _, a := range c.above {
		if !b.asked[a.name] {
			more++
		}
	}
	if len(b.batch) > 0 && (b.ops+o > b.maxOps || b.cmps+more > b.maxOps) {
		return false
	}
	for _, a := range c.above {
		b.asked[a.name] = true
	}
	b.ops += o
	b.cmps += more
	b.batch = append(b.batch, c)
	return true
}

// take returns the batch and starts an empty one.
func (b *batcher) take() []change {
	out := b.batch
	// The next batch is likely to be as long: room for it at once rather
	// than by doublings.
	b.batch, b.ops, b.cmps = make([]change, 0, len(out)), 0, guardCmps
	clear(b.asked)
	return out
}
