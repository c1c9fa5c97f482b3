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

// sendLocked records the keys of a batch about to be committed, and
// unsendLocked forgets them once it is committed or has failed.
func (p *Publisher) sendLocked(batch []change) {
	for i := range batch {
		c := &batch[i]
		switch {
		case c.claimPut != nil:
			p.sending[p.claimKey(c.name, p.cfg.Owner)] = sent{value: c.claimPut, lease: c.lease}
		case c.claimDel:
			p.sending[p.claimKey(c.name, p.cfg.Owner)] = sent{}
		}
		for _, w := range c.puts {
			p.sending[w.key] = sent{value: w.value, lease: c.lease}
		}
		for _, key := range c.dels {
			p.sending[key] = sent{}
		}
	}
}

func (p *Publisher) unsendLocked(batch []change) {
	for i := range batch {
		c := &batch[i]
		if c.claimPut != nil || c.claimDel {
			delete(p.sending, p.claimKey(c.name, p.cfg.Owner))
		}
		for _, w := range c.puts {
			delete(p.sending, w.key)
		}
		for _, key := range c.dels {
			delete(p.sending, key)
		}
	}
}

// echoLocked reports whether a watched change is what a transaction under way
// writes: the watch often delivers a transaction's changes before its
// response is handled. Such a change is recorded in the view but marks
// nothing, as the commit records the same; at a cold start the echoes of the
// first flush had marked nearly half the names again, for a second flush that
// wrote nothing.
func (p *Publisher) echoLocked(ev *clientv3.Event) bool {
	s, ok := p.sending[string(ev.Kv.Key)]
	if !ok {
		return false
	}
	if ev.Type == mvccpb.DELETE {
		return s.value == nil
	}
	return s.value != nil && s.lease == ev.Kv.Lease && bytes.Equal(s.value, ev.Kv.Value)
}
