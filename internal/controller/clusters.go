package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// ReasonHostnameGranted is the reason of the Normal Event sent when a name
// another cluster held is published again.
const ReasonHostnameGranted = "HostnameGranted"

// ClusterClaim tells the objects publishing a stored name that another cluster
// sharing the etcd holds it or a name nested with it, or that it is theirs
// again. The publisher calls it whenever its decision on the name's claim
// changes.
func (c *Controller) ClusterClaim(stored string, d arbitrate.Decision) {
	var out outcome
	defer func() { c.apply(out) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	log := c.cfg.Log.WithField("name", stored)
	if d.Granted {
		log.Info("no other cluster holds the name any more; publishing it")
	} else {
		log.WithFields(logrus.Fields{"holders": d.Holders, "nested": d.Nested, "outside": d.Outside}).
			Warn("another cluster sharing the etcd, or records outside this skylb's scope, hold the name or a name nested with it; not publishing it")
	}
	for _, bySource := range c.granted {
		for src, names := range bySource {
			i := slices.IndexFunc(names, func(n string) bool { return n == stored || skydns.ApexName(n) == stored })
			pub := c.index.Publication(src)
			if i < 0 || pub == nil {
				continue
			}
			if d.Granted {
				out.event(&pub.Ref, corev1.EventTypeNormal, ReasonHostnameGranted,
					fmt.Sprintf("hostname %s is published: no other cluster holds it any more", names[i]))
				continue
			}
			if len(d.Holders) > 0 {
				out.event(&pub.Ref, corev1.EventTypeWarning, source.ReasonHostnameConflict,
					fmt.Sprintf("hostname %s is not published: cluster %s holds it in the etcd shared between clusters; "+
						"to publish it from several clusters, annotate its objects %s: \"true\" in each of them",
						names[i], strings.Join(d.Holders, ", "), source.AnnotationShared))
			}
			if len(d.Outside) > 0 {
				out.event(&pub.Ref, corev1.EventTypeWarning, source.ReasonHostnameConflict,
					fmt.Sprintf("hostname %s is not published: records of %s, outside the namespaces and sources this skylb "+
						"watches, hold it for another namespace; they stay until handed over", names[i], strings.Join(d.Outside, ", ")))
			}
			if len(d.Nested) > 0 {
				out.event(&pub.Ref, corev1.EventTypeWarning, source.ReasonHostnameConflict,
					fmt.Sprintf("hostname %s is not published: cluster %s holds a name above or beneath it in the etcd "+
						"shared between clusters, and DNS answers a name with the records beneath it too",
						names[i], strings.Join(d.Nested, ", ")))
			}
		}
	}
}
