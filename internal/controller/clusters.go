package controller

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// ReasonHostnameGranted is the reason of the Normal Event sent when a name
// another cluster held is published again.
const ReasonHostnameGranted = "HostnameGranted"

// ClusterClaim tells the objects publishing a stored name that another cluster
// sharing the etcd holds it, or that it is theirs again. The publisher calls it
// whenever its decision on the name's claim changes.
func (c *Controller) ClusterClaim(stored string, granted bool, holders []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	log := c.cfg.Log.WithField("name", stored)
	if granted {
		log.Info("no other cluster holds the name any more; publishing it")
	} else {
		log.WithField("holders", holders).Warn("another cluster sharing the etcd holds the name; not publishing it")
	}
	for _, bySource := range c.granted {
		for src, names := range bySource {
			i := slices.IndexFunc(names, func(n string) bool { return n == stored || skydns.ApexName(n) == stored })
			pub := c.index.Publication(src)
			if i < 0 || pub == nil {
				continue
			}
			if granted {
				c.event(&pub.Ref, corev1.EventTypeNormal, ReasonHostnameGranted,
					fmt.Sprintf("hostname %s is published: no other cluster holds it any more", names[i]))
				continue
			}
			c.event(&pub.Ref, corev1.EventTypeWarning, source.ReasonHostnameConflict,
				fmt.Sprintf("hostname %s is not published: cluster %s holds it in the etcd shared between clusters; "+
					"to publish it from several clusters, annotate its objects %s: \"true\" in each of them",
					names[i], strings.Join(holders, ", "), source.AnnotationShared))
		}
	}
}
