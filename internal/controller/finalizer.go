package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/source"
)

// FinalizerCleanup is the finalizer a load-balancer implementation puts on
// the Services it implements, the one Kubernetes' own service controller
// uses: the Service is not removed from the API until skylb has removed its
// records and its status.
const FinalizerCleanup = "service.kubernetes.io/load-balancer-cleanup"

// recordsWait bounds how long a finalizer's removal waits for the publisher
// to have written what it was handed; the removal is retried after it.
const recordsWait = 2 * time.Second

// hasFinalizer reports whether a Service carries skylb's finalizer.
func hasFinalizer(svc *corev1.Service) bool {
	return slices.Contains(svc.Finalizers, FinalizerCleanup)
}

// finalizerChange reports whether the finalizer of a Service is to be added
// (skylb implements it and it is not being deleted) or removed (skylb no
// longer implements it: it is being deleted or is no longer a LoadBalancer).
// The finalizer of a LoadBalancer Service of another class is another
// implementation's, the same well-known name: skylb leaves it alone.
func (c *Controller) finalizerChange(svc *corev1.Service, pub *source.Publication) bool {
	takes := pub != nil && pub.WriteStatus && svc.DeletionTimestamp == nil
	if takes || !hasFinalizer(svc) {
		return takes != hasFinalizer(svc)
	}
	return svc.Spec.Type != corev1.ServiceTypeLoadBalancer || c.caches.builder.Implements(svc)
}

// finalizerPatch is the strategic merge patch that adds or removes skylb's
// finalizer alone, whatever other finalizers the Service has. Like the
// status patch it carries the Service's uid, so that it never lands on a
// Service created again under the same name.
type finalizerPatch struct {
	Metadata struct {
		UID        types.UID `json:"uid"`
		Finalizers []string  `json:"finalizers,omitempty"`
		Delete     []string  `json:"$deleteFromPrimitiveList/finalizers,omitempty"`
	} `json:"metadata"`
}

// setFinalizer adds (add) or removes skylb's finalizer on a Service.
func (c *Controller) setFinalizer(ctx context.Context, svc *corev1.Service, add bool) error {
	verb := "removed"
	if add {
		verb = "added"
	}
	log := c.cfg.Log.WithFields(logrus.Fields{"service": svc.Namespace + "/" + svc.Name, "finalizer": FinalizerCleanup})
	if c.cfg.DryRun {
		log.Infof("dry run: finalizer would be %s", verb)
		return nil
	}
	var p finalizerPatch
	p.Metadata.UID = svc.UID
	if add {
		p.Metadata.Finalizers = []string{FinalizerCleanup}
	} else {
		p.Metadata.Delete = []string{FinalizerCleanup}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("finalizer patch of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	err = c.kube.Patch(ctx, kubeclient.Services, svc.Namespace, svc.Name, types.StrategicMergePatchType, data)
	switch {
	case apierrors.IsNotFound(err) || uidChanged(err):
		return nil
	case err != nil:
		return fmt.Errorf("finalizer of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	log.Debugf("finalizer %s", verb)
	return nil
}

// releaseFinalizer removes skylb's finalizer from a Service skylb no longer
// implements, once its records are gone: the publisher has written what it
// was handed, the Service's removal among it. A Service still published
// waits for its own sync, which hands the removal over and queues it again.
func (c *Controller) releaseFinalizer(ctx context.Context, svc *corev1.Service, pub *source.Publication) error {
	if svc.DeletionTimestamp != nil && pub != nil {
		return nil
	}
	if !c.cfg.DryRun {
		wctx, cancel := context.WithTimeout(ctx, recordsWait)
		defer cancel()
		if err := c.pub.WaitIdle(wctx); err != nil {
			return fmt.Errorf("finalizer of service %s/%s: records not yet removed from etcd: %w", svc.Namespace, svc.Name, err)
		}
	}
	return c.setFinalizer(ctx, svc, false)
}
