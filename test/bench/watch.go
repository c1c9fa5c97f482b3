package main

import (
	"context"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// watchEvent is one change under /skydns/ as the benchmark's etcd watch saw it.
type watchEvent struct {
	at  time.Time
	key string
	put bool
	rev int64
}

// recorder keeps every event under /skydns/ with the time it arrived.
type recorder struct {
	mu     sync.Mutex
	events []watchEvent
	err    error
}

// record watches prefix from revision rev on until ctx ends.
func record(ctx context.Context, c *clientv3.Client, prefix string, rev int64) *recorder {
	r := &recorder{}
	ready := make(chan struct{})
	go func() {
		wch := c.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithCreatedNotify())
		close(ready)
		for wr := range wch {
			now := time.Now()
			if err := wr.Err(); err != nil {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
				continue
			}
			r.mu.Lock()
			for _, ev := range wr.Events {
				r.events = append(r.events, watchEvent{at: now, key: string(ev.Kv.Key), put: ev.Type == clientv3.EventTypePut, rev: ev.Kv.ModRevision})
			}
			r.mu.Unlock()
		}
	}()
	<-ready
	return r
}

// since returns the events from index i on, and the next index.
func (r *recorder) since(i int) ([]watchEvent, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i > len(r.events) {
		i = len(r.events)
	}
	out := append([]watchEvent(nil), r.events[i:]...)
	return out, len(r.events)
}

// mark returns the index of the next event.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// first returns the first event from index i on whose key starts with prefix.
func (r *recorder) first(i int, prefix string) (watchEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events[min(i, len(r.events)):] {
		if strings.HasPrefix(ev.key, prefix) {
			return ev, true
		}
	}
	return watchEvent{}, false
}
