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

// sendLocked records the keys of a batch about to be committed and returns
// them, for unsendLocked to forget once the batch is committed or has failed.
func (p *Publisher) sendLocked(batch []change) []string {
	var keys []string
	for i := range batch {
		c := &batch[i]
		if c.claimPut != nil || c.claimDel {
			key := p.codec.key(c.name, p.cfg.Owner)
			p.work.sending[key] = sent{value: c.claimPut, lease: c.lease}
			keys = append(keys, key)
		}
		for _, w := range c.puts {
			p.work.sending[w.key] = sent{value: w.value, lease: c.recordLease}
			keys = append(keys, w.key)
		}
		for _, key := range c.dels {
			p.work.sending[key] = sent{}
			keys = append(keys, key)
		}
	}
	return keys
}

func (p *Publisher) unsendLocked(keys []string) {
	for _, key := range keys {
		delete(p.work.sending, key)
	}
}

// echoLocked reports whether a watched change is what a transaction under way
// writes: the watch often delivers a transaction's changes before its
// response is handled. Such a change is recorded in the view but marks
// nothing, as the commit records the same; at a cold start the echoes of the
// first flush had marked nearly half the names again, for a second flush that
// wrote nothing.
func (p *Publisher) echoLocked(ev *clientv3.Event) bool {
	s, ok := p.work.sending[string(ev.Kv.Key)]
	if !ok {
		return false
	}
	if ev.Type == mvccpb.DELETE {
		return s.value == nil
	}
	return s.value != nil && s.lease == ev.Kv.Lease && bytes.Equal(s.value, ev.Kv.Value)
}
