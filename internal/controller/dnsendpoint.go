package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/tools/cache"

	"github.com/skylb/skylb/internal/externaldns"
	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// The kind of external-dns's DNSEndpoints (see kindsOf): their publication,
// and status.observedGeneration, written as external-dns does once the
// records of a generation are decided.

// dnsEndpointPublication is what a cached DNSEndpoint publishes, with the
// DNSEndpoint, whose status follows it. One is published when it is in the
// scope: its namespace and --label-selector, the way external-dns's
// --label-filter shares the DNSEndpoints of a cluster with another
// controller.
func (c *Controller) dnsEndpointPublication(obj any) (*source.Publication, any, error) {
	d, ok := obj.(*externaldns.DNSEndpoint)
	if !ok {
		return nil, nil, fmt.Errorf("cached DNSEndpoint is a %T: %w", obj, errPermanent)
	}
	if !c.cfg.Scope.Object(source.KindDNSEndpoint, d) {
		return nil, nil, nil
	}
	return c.caches.builder.DNSEndpoint(d), d, nil
}

// dnsEndpointStatusOf adds to out the status of a DNSEndpoint whose
// generation its status does not say published yet.
func (c *Controller) dnsEndpointStatusOf(out *outcome, obj any, pub *source.Publication) {
	d, ok := obj.(*externaldns.DNSEndpoint)
	if ok && pub != nil && d.Status.ObservedGeneration != pub.Generation {
		out.status = append(out.status, status{key: pub.Key})
	}
}

// syncDNSEndpointStatus writes status.observedGeneration of a DNSEndpoint:
// the generation of its publication in the index, decided already. A
// DNSEndpoint changed since is synced again, and queues its own status.
func (c *Controller) syncDNSEndpointStatus(ctx context.Context, key skydns.ObjectKey) error {
	obj, exists, err := c.kindOf(key.Kind).indexer.GetByKey(cache.NewObjectName(key.Namespace, key.Name).String())
	d, ok := obj.(*externaldns.DNSEndpoint)
	if err != nil || !exists || !ok {
		return err
	}
	c.mu.Lock()
	pub := c.book.index.Publication(key.String())
	c.mu.Unlock()
	if pub == nil || pub.UID != d.UID || pub.Generation == d.Status.ObservedGeneration {
		return nil
	}
	log := c.cfg.Log.WithFields(logrus.Fields{"object": key.String(), "generation": pub.Generation})
	if c.cfg.DryRun {
		log.Info("dry run: DNSEndpoint status would change")
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": patchMeta{UID: d.UID},
		"status":   map[string]int64{"observedGeneration": pub.Generation},
	})
	if err != nil {
		return fmt.Errorf("status patch of %s: %w", key, err)
	}
	if landed, err := c.patchStatus(ctx, kubeclient.DNSEndpoints, key.Namespace, key.Name, patch); !landed {
		return err
	}
	log.Info("DNSEndpoint status updated")
	return nil
}
