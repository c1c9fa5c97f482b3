package publish

import (
	"bytes"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// sent is what a transaction under way writes at a key: a value with its
// lease, or a delete (nil value).
type sent struct {
	value []byte
	lease int64
}

// underWay is what the transactions under way write, by key.
type underWay map[string]sent

// add records the keys of a batch about to be committed and returns them,
// for forget once the batch is committed or has failed.
func (u underWay) add(batch []change, codec claimCodec) []string {
	var keys []string
	for i := range batch {
		c := &batch[i]
		if c.claimPut != nil || c.claimDel {
			key := codec.ownKey(c.name)
			u[key] = sent{value: c.claimPut, lease: c.lease}
			keys = append(keys, key)
		}
		for _, w := range c.puts {
			u[w.key] = sent{value: w.value, lease: c.recordLease}
			keys = append(keys, w.key)
		}
		for _, key := range c.dels {
			u[key] = sent{}
			keys = append(keys, key)
		}
	}
	return keys
}

// forget forgets the keys add returned.
func (u underWay) forget(keys []string) {
	for _, key := range keys {
		delete(u, key)
	}
}

// echo reports whether a watched change is what a transaction under way
// writes: the watch often delivers a transaction's changes before its
// response is handled. Such a change is recorded in the view but marks
// nothing, as the commit records the same; at a cold start the echoes of the
// first flush had marked nearly half the names again, for a second flush that
// wrote nothing.
func (u underWay) echo(ev *clientv3.Event) bool {
	s, ok := u[string(ev.Kv.Key)]
	if !ok {
		return false
	}
	if ev.Type == mvccpb.DELETE {
		return s.value == nil
	}
	return s.value != nil && s.lease == ev.Kv.Lease && bytes.Equal(s.value, ev.Kv.Value)
}
