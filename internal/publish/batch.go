package publish

// batches splits changes, in their order, into the transactions that commit
// them. etcd limits the operations and the conditions of a transaction to
// maxOps each, and a Guard's conditions take guardCmps of them. The names of
// a batch share most ancestors, each asked about once (see nested.go). A
// change larger than the limits makes a batch on its own.
func batches(changes []change, maxOps int) [][]change {
	var out [][]change
	asked := make(map[string]bool)
	for len(changes) > 0 {
		n, ops, cmps := 0, 0, guardCmps
		clear(asked)
		for n < len(changes) {
			c := &changes[n]
			o, more := c.counts()
			for _, a := range c.above {
				if !asked[a.name] {
					more++
				}
			}
			if n > 0 && (ops+o > maxOps || cmps+more > maxOps) {
				break
			}
			for _, a := range c.above {
				asked[a.name] = true
			}
			ops += o
			cmps += more
			n++
		}
		out = append(out, changes[:n:n])
		changes = changes[n:]
	}
	return out
}
