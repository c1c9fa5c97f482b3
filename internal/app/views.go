package app

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
)

// publishers are the publisher of the default view and those of the views
// (source.Config.Views). The default view's holds the claims and tells the
// controller of other clusters'; each view's writes the records of its view
// under its own prefix, skydns.ViewPrefix. They run, lead and are ready
// together; waiting until they have written what they were given is the
// controller's WaitIdle, which hands it to them.
type publishers struct {
	*publish.Publisher                               // the default view's
	views              map[string]*publish.Publisher // by view name
}

// viewPublishers returns a publisher for each view of cfg, configured as the
// default view's (def) but for its prefix: no claims, since the default
// view's claims hold the names in every view (gate, the default view's
// publisher, says which), and no propagation metric, which the default
// view's measures.
func viewPublishers(etcd *clientv3.Client, cfg Config, def publish.Config, gate publish.Gate) map[string]*publish.Publisher {
	if len(cfg.Source.Views) == 0 {
		return nil
	}
	out := make(map[string]*publish.Publisher, len(cfg.Source.Views))
	for _, v := range cfg.Source.Views {
		c := def
		c.Prefix = skydns.ViewPrefix(cfg.Prefix, v.Name)
		c.ClaimPrefix = ""
		c.ObservePropagation, c.OnAnswer, c.Gate = nil, nil, gate
		c.Log = def.Log.WithField("view", v.Name)
		out[v.Name] = publish.New(etcd, c)
	}
	return out
}

// controllerViews returns the views' publishers as the controller takes them.
func controllerViews(views map[string]*publish.Publisher) map[string]controller.Publisher {
	if len(views) == 0 {
		return nil
	}
	out := make(map[string]controller.Publisher, len(views))
	for name, p := range views {
		out[name] = p
	}
	return out
}

// recheck has every view decide stored again: the default view's answer on
// it may have changed.
func (p *publishers) recheck(stored string) {
	for _, v := range p.views {
		v.Recheck(stored)
	}
}

// Run runs every publisher until ctx ends.
func (p *publishers) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, v := range p.views {
		wg.Go(func() { v.Run(ctx) })
	}
	p.Publisher.Run(ctx)
	wg.Wait()
}

// SetActive starts or stops every publisher's writes.
func (p *publishers) SetActive(active bool) {
	p.Publisher.SetActive(active)
	for _, v := range p.views {
		v.SetActive(active)
	}
}

// Ready reports whether every publisher has loaded its view of etcd.
func (p *publishers) Ready() bool {
	for _, v := range p.views {
		if !v.Ready() {
			return false
		}
	}
	return p.Publisher.Ready()
}

// Resync has every publisher compare everything with etcd once more.
func (p *publishers) Resync() {
	p.Publisher.Resync()
	for _, v := range p.views {
		v.Resync()
	}
}

// Stats returns the counters of every publisher together: the views' keys,
// transactions and errors are skylb's too. NoSpace holds when it holds for
// any of them, and LastSync is the oldest, so that a view whose writes fail
// shows as the default view's would.
func (p *publishers) Stats() publish.Stats {
	s := p.Publisher.Stats()
	for _, v := range p.views {
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
