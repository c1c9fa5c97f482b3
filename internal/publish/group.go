package publish

import (
	"context"
	"maps"
	"slices"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
)

// Group is the Publisher of the default view and those of the views, each
// writing its own tree (skydns.ViewPrefix): the one fan-out over them. Each
// method says whether it covers every view or the default view alone.
//
// The default view's Publisher holds the claims; a view's writes a name only
// while the default view's answers it (Config.Gate, see gate.go), and decides
// it again when that may have changed: the default view's notes the names,
// and the Group hands them to the views.
type Group struct {
	def   *Publisher
	views map[string]*Publisher // by view name
	// mu is held while the names the default view's answer changed on are
	// handed to the views, so that WaitIdle, which hands them too, does not
	// return while another hand-over is under way. Lock order: mu, then the
	// default view's table (takeAnswered) or a view's inbox (Recheck sends).
	mu sync.Mutex
}

// NewGroup returns the Publisher of cfg and those of the views named: the
// default view's first, then each view's, configured as the default view's
// but for its prefix, gated on the default view's, and without the claims,
// the Verdicts and the propagation metric, which the default view's keeps.
func NewGroup(client *clientv3.Client, cfg Config, views ...string) *Group {
	g := &Group{def: newPublisher(client, cfg, len(views) > 0)}
	if len(views) == 0 {
		return g
	}
	g.views = make(map[string]*Publisher, len(views))
	for _, name := range views {
		c := g.def.cfg
		c.Prefix = skydns.ViewPrefix(cfg.Prefix, name)
		c.ClaimPrefix, c.Verdicts, c.ObservePropagation = "", nil, nil
		c.Gate = g.def
		c.Log = g.def.cfg.Log.WithField("view", name)
		g.views[name] = New(client, c)
	}
	return g
}

// Views returns the names of the views besides the default one, sorted.
func (g *Group) Views() []string { return slices.Sorted(maps.Keys(g.views)) }

// View returns the Publisher of a view, "" for the default view's; nil for
// a view the Group does not have.
func (g *Group) View(name string) *Publisher {
	if name == "" {
		return g.def
	}
	return g.views[name]
}

// Set replaces what is wanted at a stored name of a view ("" for the
// default view): see Publisher.Set.
func (g *Group) Set(view, stored string, w Want) {
	if view == "" {
		g.def.Set(stored, w)
		return
	}
	g.views[view].Set(stored, w)
}

// Run runs every Publisher until ctx ends.
func (g *Group) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, v := range g.views {
		wg.Go(func() { v.Run(ctx) })
	}
	if g.views != nil {
		wg.Go(func() { g.recheckLoop(ctx) })
	}
	g.def.Run(ctx)
	wg.Wait()
}

// recheckLoop hands the views the names the default view's answer may have
// changed on, until ctx ends.
func (g *Group) recheckLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.def.answers:
			g.recheck()
		}
	}
}

// recheck has every view decide again the names the default view's answer
// may have changed on.
func (g *Group) recheck() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, stored := range g.def.takeAnswered() {
		for _, v := range g.views {
			v.Recheck(stored)
		}
	}
}

// Complete says to every Publisher that every wanted name has been Set.
func (g *Group) Complete() {
	g.def.Complete()
	for _, v := range g.views {
		v.Complete()
	}
}

// Resync has every Publisher compare everything with etcd once more.
func (g *Group) Resync() {
	g.def.Resync()
	for _, v := range g.views {
		v.Resync()
	}
}

// SetActive starts or stops every Publisher's writes.
func (g *Group) SetActive(active bool) {
	g.def.SetActive(active)
	for _, v := range g.views {
		v.SetActive(active)
	}
}

// Ready reports whether every Publisher has loaded its view of etcd.
func (g *Group) Ready() bool {
	for _, v := range g.views {
		if !v.Ready() {
			return false
		}
	}
	return g.def.Ready()
}

// WaitIdle waits until every Publisher has written everything Set, the
// views what the default view's answers changed too, or ctx ends.
func (g *Group) WaitIdle(ctx context.Context) error {
	if err := g.def.WaitIdle(ctx); err != nil {
		return err
	}
	if g.views != nil {
		g.recheck()
	}
	for _, v := range g.views {
		if err := v.WaitIdle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Loaded is the default view's Publisher.Loaded: the views' records are
// those of the same objects.
func (g *Group) Loaded(ctx context.Context) map[string]uint64 { return g.def.Loaded(ctx) }

// Reachable is the default view's Publisher.Reachable: every view's writes
// go to the same etcd.
func (g *Group) Reachable() bool { return g.def.Reachable() }

// CountRecords is the default view's Publisher.CountRecords: a view holds
// records of the same names.
func (g *Group) CountRecords(f func(stored string, t skydns.Type)) { g.def.CountRecords(f) }

// CountOutside is the default view's Publisher.CountOutside.
func (g *Group) CountOutside() int { return g.def.CountOutside() }

// Stats returns the counters of every Publisher together: the views' keys,
// transactions and errors are skylb's too. NoSpace holds when it holds for
// any of them, and LastSync is the oldest, so that a view whose writes fail
// shows as the default view's would.
func (g *Group) Stats() Stats {
	s := g.def.Stats()
	for _, v := range g.views {
		o := v.Stats()
		s.Txns += o.Txns
		s.Puts += o.Puts
		s.Deletes += o.Deletes
		s.Errors += o.Errors
		s.ListErrors += o.ListErrors
		s.WatchErrors += o.WatchErrors
		s.TxnErrors += o.TxnErrors
		s.Relists += o.Relists
		s.Refused += o.Refused
		s.LeasesLost += o.LeasesLost
		s.Swept += o.Swept
		s.TookOver += o.TookOver
		s.HandedOver += o.HandedOver
		s.Standby += o.Standby
		s.HeldDeletes += o.HeldDeletes
		s.NoSpaceErrors += o.NoSpaceErrors
		s.NoSpace = s.NoSpace || o.NoSpace
		if o.LastSync.Before(s.LastSync) {
			s.LastSync = o.LastSync
		}
	}
	return s
}
