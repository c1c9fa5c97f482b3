package controller

import (
	"context"
	"net/netip"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/source"
)

// RunHealth probes the addresses objects ask to be checked until ctx ends.
// Only the leader runs it; followers publish nothing and assume every address
// healthy.
func (c *Controller) RunHealth(ctx context.Context) { c.health.prober.Run(ctx) }

// HealthStates returns the state of every probed target.
func (c *Controller) HealthStates() map[health.Target]bool { return c.health.prober.States() }

// checkHealth adds to out the addresses of pub to probe and keeps those to
// publish: the healthy ones (all of them when none is), or one in exclusive
// mode.
func (c *Controller) checkHealth(out *outcome, src string, pub *source.Publication) {
	if pub == nil {
		out.probes = append(out.probes, probe{source: src})
		c.health.forget(src)
		return
	}
	targets := pub.HealthTargets()
	out.probes = append(out.probes, probe{source: src, targets: targets})
	if len(targets) == 0 && pub.Select != health.Exclusive {
		return
	}
	healthy := func(a netip.Addr) bool {
		for _, t := range targets {
			if t.Addr == a {
				return c.health.prober.Healthy(t)
			}
		}
		return true
	}
	keep, failOpen := c.health.choose(src, pub, healthy)
	pub.Keep(keep)
	// Other clusters sharing the object's names learn of it through its
	// claims (see clusterShare).
	pub.Unhealthy = failOpen
	if failOpen {
		pub.Problems = append(pub.Problems, source.Problem{
			Reason:  source.ReasonAllUnhealthy,
			Message: "every address failed its health check: publishing all of them rather than none",
		})
	}
}

// healthChoices are the prober and what health checking chose for each
// object (by source): the address exclusive mode publishes, and whether it
// publishes all its addresses, none being healthy.
type healthChoices struct {
	prober *health.Prober // set by New; it calls healthChanged

	mu       sync.Mutex
	chosen   map[string]netip.Addr
	failOpen map[string]bool
}

// choose selects the addresses of pub to publish, keeping the address chosen
// before in exclusive mode while it stays healthy.
func (h *healthChoices) choose(src string, pub *source.Publication, healthy func(netip.Addr) bool) (keep []netip.Addr, failOpen bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chosen == nil {
		h.chosen, h.failOpen = make(map[string]netip.Addr), make(map[string]bool)
	}
	keep, failOpen = health.Select(pub.Addresses, healthy, pub.Select, h.chosen[src])
	if pub.Select == health.Exclusive && len(keep) > 0 {
		h.chosen[src] = keep[0]
	}
	if failOpen {
		h.failOpen[src] = true
	} else {
		delete(h.failOpen, src)
	}
	return keep, failOpen
}

// forget drops the choices of an object that publishes nothing.
func (h *healthChoices) forget(src string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.chosen, src)
	delete(h.failOpen, src)
}

// failingOpen returns the number of objects publishing all their addresses.
func (h *healthChoices) failingOpen() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.failOpen)
}

// healthChanged is told by the prober that a target changed state: the objects
// that want it are synced again and told (see healthLocked).
func (c *Controller) healthChanged(ch health.Change) {
	if out, err := c.decide(inputs{health: []health.Change{ch}}, nil); err == nil {
		c.apply(out)
	}
}

// healthLocked adds to out the Events of a target's change of state on the
// objects that want it, and syncs them again: their records follow from
// their sync. It is called by decide, under mu.
func (c *Controller) healthLocked(out *outcome, ch health.Change) {
	kind, reason, verb := corev1.EventTypeNormal, "AddressHealthy", "passes its health check again"
	if !ch.Healthy {
		kind, reason, verb = corev1.EventTypeWarning, "AddressUnhealthy", "failed its health check ("+ch.Reason+")"
	}
	for _, src := range ch.Sources {
		c.cfg.Log.WithFields(logrus.Fields{"object": src, "address": ch.Target.String(), "healthy": ch.Healthy}).Info("health changed")
		// An object that publishes nothing has no address to check: it
		// is gone, or changed, and synced for it.
		if pub := c.book.index.Publication(src); pub != nil {
			out.event(pub, kind, reason, "address "+ch.Target.String()+" "+verb)
			out.requeue = append(out.requeue, requeue{key: pub.Key})
		}
	}
}
