package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/source"
)

// Reasons of the Events about the clusters sharing an etcd.
const (
	// ReasonHostnameGranted is the reason of the Normal Event sent when a
	// name another cluster held is published again.
	ReasonHostnameGranted = "HostnameGranted"
	// ReasonClusterAnswering and ReasonClusterStandby are sent when this
	// cluster starts and stops answering a name it shares with other
	// clusters; ReasonClusterHeldDown when, healthy again, it waits for the
	// failback hold-down before it takes the name back.
	ReasonClusterAnswering = "ClusterAnswering"
	ReasonClusterStandby   = "ClusterStandby"
	ReasonClusterHeldDown  = "ClusterHeldDown"
)

// runVerdicts tells the objects of the publisher's decisions on their names
// (Config.Verdicts) until ctx ends.
func (c *Controller) runVerdicts(ctx context.Context) {
	vs := c.cfg.Verdicts
	for {
		select {
		case <-ctx.Done():
			return
		case <-vs.Ready():
		}
		told := vs.Take()
		// An Event's words come from the verdict, so they are decided
		// from it rather than from a key.
		if out, err := c.decide(inputs{verdicts: told}, nil); err == nil {
			c.apply(out)
		}
		vs.Done(len(told))
	}
}

// clusterClaimLocked tells the objects publishing a stored name that another
// cluster sharing the etcd holds it or a name nested with it, or that it is
// theirs again: the publisher's decision on the name's claim changed. It
// is called by decide, under mu.
func (c *Controller) clusterClaimLocked(out *outcome, stored string, d arbitrate.Decision) {
	log := c.cfg.Log.WithField("name", stored)
	if d.Granted {
		log.Info("no other cluster holds the name any more; publishing it")
	} else {
		log.WithFields(logrus.Fields{"holders": d.Holders, "nested": d.Nested, "outside": d.Outside}).
			Warn("another cluster sharing the etcd, or records outside this skylb's scope, hold the name or a name nested with it; not publishing it")
	}
	c.publishersLocked(stored, func(pub *source.Publication, name string) {
		if d.Granted {
			out.event(pub, corev1.EventTypeNormal, ReasonHostnameGranted,
				fmt.Sprintf("hostname %s is published: no other cluster holds it any more", name))
			return
		}
		if len(d.Holders) > 0 {
			out.event(pub, corev1.EventTypeWarning, source.ReasonHostnameConflict,
				fmt.Sprintf("hostname %s is not published: cluster %s holds it in the etcd shared between clusters; "+
					"to publish it from several clusters, annotate its objects %s: \"true\" in each of them",
					name, strings.Join(d.Holders, ", "), source.AnnotationShared))
		}
		if len(d.Outside) > 0 {
			out.event(pub, corev1.EventTypeWarning, source.ReasonHostnameConflict,
				fmt.Sprintf("hostname %s is not published: records of %s, outside the namespaces and sources this skylb "+
					"watches, hold it for another namespace; they stay until handed over", name, strings.Join(d.Outside, ", ")))
		}
		if len(d.Nested) > 0 {
			out.event(pub, corev1.EventTypeWarning, source.ReasonHostnameConflict,
				fmt.Sprintf("hostname %s is not published: cluster %s holds a name above or beneath it in the etcd "+
					"shared between clusters, and DNS answers a name with the records beneath it too",
					name, strings.Join(d.Nested, ", ")))
		}
	})
}

// clusterShareLocked tells the objects publishing a stored name shared with
// other clusters that this cluster starts or stops answering it, waits for
// its failback hold-down, or disagrees with the others on the policy: the
// publisher's decision on the name changed from was (nil for the first). It
// is called by decide, under mu.
func (c *Controller) clusterShareLocked(out *outcome, stored string, s arbitrate.Sharing, was *arbitrate.Sharing) {
	events := shareEvents(s, was)
	if len(events) == 0 {
		return
	}
	log := c.cfg.Log.WithFields(logrus.Fields{"name": stored, "policy": s.Policy, "answering": s.Answer, "serving": s.Serve})
	if !s.HeldUntil.IsZero() {
		log = log.WithField("held_until", s.HeldUntil.Format(time.RFC3339))
	}
	log.Info("the clusters sharing the name changed who answers it")
	c.publishersLocked(stored, func(pub *source.Publication, name string) {
		for _, e := range events {
			out.event(pub, e.kind, e.reason, fmt.Sprintf(e.message, name))
		}
	})
}

// shareEvent is an Event of ClusterShare; its message has one %s, the name.
type shareEvent struct{ kind, reason, message string }

// shareEvents returns the Events a change of the sharing of a name from was
// (nil: none before) to s brings.
func shareEvents(s arbitrate.Sharing, was *arbitrate.Sharing) []shareEvent {
	var out []shareEvent
	answer := strings.Join(s.Answer, ", ")
	if s.Disagree && (was == nil || !was.Disagree) {
		out = append(out, shareEvent{corev1.EventTypeWarning, source.ReasonClusterPolicyConflict,
			"the clusters sharing %s name different " + source.AnnotationClusterPolicy + ": every one of them uses " +
				string(arbitrate.Balanced) + " until they agree"})
	}
	switch {
	case s.Serve && was != nil && !was.Serve && s.FailOpen:
		out = append(out, shareEvent{corev1.EventTypeWarning, ReasonClusterAnswering,
			"this cluster answers %s again: no cluster sharing it has a healthy address, so every one answers (fail open)"})
	case s.Serve && was != nil && !was.Serve:
		out = append(out, shareEvent{corev1.EventTypeNormal, ReasonClusterAnswering,
			"this cluster answers %s now (policy " + string(s.Policy) + "; answering: " + answer + ")"})
	case !s.Serve && s.HeldUntil.IsZero() && (was == nil || was.Serve):
		out = append(out, shareEvent{corev1.EventTypeNormal, ReasonClusterStandby,
			"this cluster stands by for %s and publishes none of its addresses: by the policy " + string(s.Policy) +
				" it is answered by " + answer})
	}
	if !s.HeldUntil.IsZero() && (was == nil || !was.HeldUntil.Equal(s.HeldUntil)) {
		out = append(out, shareEvent{corev1.EventTypeNormal, ReasonClusterHeldDown,
			"this cluster's addresses for %s pass their health checks again: it takes the name back at " +
				s.HeldUntil.UTC().Format(time.RFC3339) + ", once the failback hold-down has passed"})
	}
	return out
}

// publishersLocked calls f with every object publishing stored (as the
// object's own name, the zone's for its apex records) and that name.
func (c *Controller) publishersLocked(stored string, f func(pub *source.Publication, name string)) {
	c.book.tellings.publishers(stored, func(src, name string) {
		if pub := c.book.index.Publication(src); pub != nil {
			f(pub, name)
		}
	})
}
