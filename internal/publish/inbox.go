package publish

import (
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// inbox is the writer's mailbox: everything that changes what a Publisher
// holds from outside its writer reaches it as a message, in the order sent:
// the records the controller wants (Set), a full reconciliation asked for
// (Complete, Resync, Recheck), the watches' events, a lease obtained, a
// hold-down ended. Sending takes the inbox's own lock and no other, so that
// neither the controller nor a watch nor a timer ever waits for a flush
// (when the table is free, the sender receives the inbox itself: see send).
// The writer receives the messages whenever it takes its table
// (Publisher.lock), so that what reads the table has seen every message
// sent before.
type inbox struct {
	mu    sync.Mutex
	msgs  []message
	spare []message    // a buffer received and emptied, for msgs once taken
	n     atomic.Int64 // len(msgs), read without the lock
}

// maxSpare is the most messages a buffer kept for reuse holds room for: a
// cold start's burst is let go.
const maxSpare = 1024

// message is one change for the writer: kind says which, and which of the
// other fields it carries.
type message struct {
	kind   messageKind
	stored string
	want   Want
	at     time.Time // when Set was called; the end of a hold-down
	events []*clientv3.Event
	rev    int64
	shard  int
}

type messageKind uint8

const (
	msgWant     messageKind = iota // Set: stored, want, at
	msgComplete                    // Complete
	msgResync                      // Resync
	msgRecheck                     // Recheck: stored
	msgRecords                     // the records' watch: events up to rev
	msgClaims                      // the claims' watch: events up to rev
	msgShard                       // a lease obtained for shard
	msgHoldEnd                     // the hold-down of stored, until at, ended
)

// send queues m.
func (in *inbox) send(m message) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.n.Store(int64(len(in.msgs)))
	in.mu.Unlock()
}

// take returns the messages queued, in order, and empties the inbox.
func (in *inbox) take() []message {
	if in.n.Load() == 0 {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.msgs
	in.msgs, in.spare = in.spare, nil
	in.n.Store(0)
	return out
}

// recycle keeps a buffer take returned, once received, for reuse.
func (in *inbox) recycle(msgs []message) {
	if cap(msgs) > maxSpare {
		return
	}
	clear(msgs) // the records and events they hold
	in.mu.Lock()
	in.spare = msgs[:0]
	in.mu.Unlock()
}

// send queues m for the writer. When the table is free, the sender
// receives the inbox itself, as the writer would, rather than wake the
// writer for it: a cold start's thousands of Sets and echoes then cost what
// they did when each took the table. When it is not, the writer receives m
// the next time it takes the table, and is woken for it.
func (p *Publisher) send(m message) {
	p.inbox.send(m)
	if p.mu.TryLock() {
		p.receiveLocked()
		p.mu.Unlock()
		return
	}
	p.work.wakeUp()
}

// lock takes the table, and receives the messages sent before.
func (p *Publisher) lock() {
	p.mu.Lock()
	p.receiveLocked()
}

// receiveLocked applies the messages in the inbox, in the order sent, and
// wakes who waits for the writer (WaitIdle) when there were any.
func (p *Publisher) receiveLocked() {
	msgs := p.inbox.take()
	for i := range msgs {
		m := &msgs[i]
		switch m.kind {
		case msgWant:
			p.setLocked(m.stored, m.want, m.at)
		case msgComplete:
			p.completeLocked()
		case msgResync:
			p.markAllLocked()
		case msgRecheck:
			if p.view.names[m.stored] != nil {
				p.markLocked(m.stored)
			}
		case msgRecords:
			p.applyLocked(m.events, m.rev)
		case msgClaims:
			p.applyClaimsLocked(m.events, m.rev)
		case msgShard:
			p.markShardLocked(m.shard)
		case msgHoldEnd:
			p.holdEndedLocked(m.stored, m.at)
		}
	}
	if len(msgs) > 0 {
		p.inbox.recycle(msgs)
		p.work.done.Broadcast()
	}
}
