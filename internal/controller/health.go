package controller

import (
	"context"
	"net/netip"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/health"
	"github.com/skylb/skylb/internal/source"
)

// RunHealth probes the addresses objects ask to be checked until ctx ends.
// Only the leader runs it; followers publish nothing and assume every address
// healthy.
func (c *Controller) RunHealth(ctx context.Context) { c.prober.Run(ctx) }

// HealthStates returns the state of every probed target.
func (c *Controller) HealthStates() map[health.Target]bool { return c.prober.States() }

// checkHealthLocked adds to out the addresses of pub to probe and keeps those
// to publish: the healthy ones (all of them when none is), or one in exclusive
// mode.
func (c *Controller) checkHealthLocked(out *outcome, src string, pub *source.Publication) {
	if pub == nil {
		out.probes = append(out.probes, probe{source: src})
		delete(c.chosen, src)
		delete(c.failOpen, src)
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
				return c.prober.Healthy(t)
			}
		}
		return true
	}
	keep, failOpen := health.Select(pub.Addresses, healthy, pub.Select, c.chosen[src])
	if pub.Select == health.Exclusive && len(keep) > 0 {
		c.chosen[src] = keep[0]
	}
	pub.Keep(keep)
	if failOpen {
		c.failOpen[src] = true
	} else {
		delete(c.failOpen, src)
	}
	if failOpen {
		pub.Problems = append(pub.Problems, source.Problem{
			Reason:  source.ReasonAllUnhealthy,
			Message: "every address failed its health check: publishing all of them rather than none",
		})
	}
}

// healthChanged is told by the prober that a target changed state: the objects
// that want it are synced again and told.
func (c *Controller) healthChanged(ch health.Change) {
	kind, reason, verb := corev1.EventTypeNormal, "AddressHealthy", "passes its health check again"
	if !ch.Healthy {
		kind, reason, verb = corev1.EventTypeWarning, "AddressUnhealthy", "failed its health check ("+ch.Reason+")"
	}
	var out outcome
	for _, src := range ch.Sources {
		c.cfg.Log.WithFields(logrus.Fields{"object": src, "address": ch.Target.String(), "healthy": ch.Healthy}).Info("health changed")
		c.mu.Lock()
		pub := c.index.Publication(src)
		c.mu.Unlock()
		if pub != nil {
			out.event(&pub.Ref, kind, reason, "address "+ch.Target.String()+" "+verb)
		}
		out.requeue = append(out.requeue, requeue{key: src})
	}
	c.apply(out)
}
