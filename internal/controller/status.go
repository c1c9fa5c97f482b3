package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skylb/skylb/internal/kubeclient"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// statusTimeout bounds one status write.
const statusTimeout = 10 * time.Second

// writeStatus sets status.loadBalancer.ingress of a Service when the cached
// Service's differs from want. It sends a merge patch of the status alone: the
// cached Service lacks what the informer transform strips, and an update of the
// status subresource would write its labels and annotations back as they are
// in the copy. The patch carries the Service's uid, so that it never lands on
// a Service re-created under the same name; without a resource version it
// needs no retry on conflict.
func (c *Controller) writeStatus(ctx context.Context, cached *corev1.Service, want []corev1.LoadBalancerIngress) error {
	if source.StatusEqual(cached.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	if c.cfg.DryRun {
		c.cfg.Log.WithFields(logrus.Fields{"service": cached.Namespace + "/" + cached.Name, "ingress": describeStatus(want)}).
			Info("dry run: service status would change")
		return nil
	}
	patch, err := json.Marshal(statusPatch{
		Metadata: patchMeta{UID: cached.UID},
		Status:   patchStatus{LoadBalancer: patchLB{Ingress: want}},
	})
	if err != nil {
		return fmt.Errorf("status patch of service %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	if landed, err := c.patchStatus(ctx, kubeclient.Services, cached.Namespace, cached.Name, patch); !landed {
		return err
	}
	list := describeStatus(want)
	c.statuses.writes.Add(1)
	c.recorder.Eventf(cached, corev1.EventTypeNormal, source.ReasonAddressesChanged, "load balancer ingress set to %s", list)
	c.cfg.Log.WithFields(logrus.Fields{"service": cached.Namespace + "/" + cached.Name, "ingress": list}).Info("service status updated")
	return nil
}

// patchStatus sends a JSON merge patch of an object's status and reports
// whether it landed: an object deleted, or deleted and created again (the
// patch names its uid), is no error, for its own sync follows.
func (c *Controller) patchStatus(ctx context.Context, r schema.GroupVersionResource, ns, name string, patch []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	err := c.kube.Patch(ctx, r, ns, name, types.MergePatchType, patch, "status")
	switch {
	case apierrors.IsNotFound(err) || uidChanged(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("update status of %s %s/%s: %w", r.Resource, ns, name, err)
	}
	return true, nil
}

// statusPatch is the JSON merge patch writeStatus sends. A nil Ingress is
// null, which clears the list.
type statusPatch struct {
	Metadata patchMeta   `json:"metadata"`
	Status   patchStatus `json:"status"`
}

type patchMeta struct {
	UID types.UID `json:"uid"`
}

type patchStatus struct {
	LoadBalancer patchLB `json:"loadBalancer"`
}

type patchLB struct {
	Ingress []corev1.LoadBalancerIngress `json:"ingress"`
}

// uidChanged reports whether a patch was refused because the Service's uid is
// not the one in the patch.
func uidChanged(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

func describeStatus(ingress []corev1.LoadBalancerIngress) string {
	if len(ingress) == 0 {
		return "[]"
	}
	parts := make([]string, len(ingress))
	for i, ing := range ingress {
		parts[i] = ing.IP + ing.Hostname
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// statusWorkers is the number of goroutines writing Service status.
const statusWorkers = 2

// serviceStatus is what a Service's status and skylb's finalizer on it need
// for its publication (nil when it publishes nothing): the
// status.loadBalancer.ingress to write, and the finalizer to add or release.
// Both the decision (serviceStatusOf) and the status writer
// (syncServiceStatus) ask it, with the Service and publication each has.
type serviceStatus struct {
	write bool
	// ingress is what to write; nil clears a status skylb wrote.
	ingress []corev1.LoadBalancerIngress
	// finalizer is 1 to add skylb's finalizer, -1 to release it, 0 to
	// leave it.
	finalizer int8
}

func (c *Controller) serviceStatus(svc *corev1.Service, pub *source.Publication) serviceStatus {
	var s serviceStatus
	switch {
	case pub != nil && pub.WriteStatus && svc.DeletionTimestamp == nil:
		s.write, s.ingress = !source.StatusEqual(svc.Status.LoadBalancer.Ingress, pub.Status), pub.Status
		if !hasFinalizer(svc) {
			s.finalizer = 1
		}
		return s
	case pub == nil && c.caches.builder.StaleStatus(svc):
		s.write = true
	}
	if hasFinalizer(svc) && c.finalizerChange(svc, pub) && c.cfg.Scope.Object(source.KindService, svc) {
		s.finalizer = -1
	}
	return s
}

// serviceStatusOf adds to out a Service whose status or finalizer differs
// from what its publication wants (or holds a stale status skylb wrote). It
// is queued for writing: status writes have a queue and workers of their
// own, for they are API requests, throttled by the client's rate limit, and
// must never hold up the records of other objects behind them.
func (c *Controller) serviceStatusOf(out *outcome, svc *corev1.Service, pub *source.Publication) {
	if svc == nil {
		return
	}
	if s := c.serviceStatus(svc, pub); s.write || s.finalizer != 0 {
		out.status = append(out.status, status{key: skydns.ObjectKey{Kind: source.KindService, Namespace: svc.Namespace, Name: svc.Name}})
	}
}

// syncStatus writes the status of one object, as the writer of its kind
// does, while leading.
func (c *Controller) syncStatus(ctx context.Context, key skydns.ObjectKey) error {
	if !c.cfg.Leading() {
		return nil
	}
	if k := c.kindOf(key.Kind); k != nil && k.writeStatus != nil {
		return k.writeStatus(c, ctx, key)
	}
	return nil
}

// syncServiceStatus writes the status of one Service, and adds or releases
// skylb's finalizer, as its current publication wants (serviceStatus).
func (c *Controller) syncServiceStatus(ctx context.Context, key skydns.ObjectKey) error {
	svc, err := c.caches.services.Services(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	c.mu.Lock()
	pub := c.book.index.Publication(key.String())
	c.mu.Unlock()
	s := c.serviceStatus(svc, pub)
	// The status first, then the finalizer: the other order would leave
	// the cache a version with the finalizer and the old status, which a
	// sync in between would write again. skylb's records are its own
	// whatever the order (a restart finds them by owner), and the
	// finalizer is there before the Service can be deleted but for that
	// moment.
	if s.write {
		if err := c.writeStatus(ctx, svc, s.ingress); err != nil {
			return err
		}
	}
	switch s.finalizer {
	case 1:
		return c.setFinalizer(ctx, svc, true)
	case -1:
		return c.releaseFinalizer(ctx, svc, pub)
	}
	return nil
}

func (c *Controller) runStatusWorker(ctx context.Context) {
	for c.processNextStatus(ctx) {
	}
}

// processNextStatus writes one queued status; a failure is retried with backoff.
func (c *Controller) processNextStatus(ctx context.Context) bool {
	key, shutdown := c.statuses.queue.Get()
	if shutdown {
		return false
	}
	defer c.statuses.queue.Done(key)
	if err := c.syncStatus(ctx, key); err != nil {
		c.cfg.Log.WithError(err).WithField("object", key.String()).Warn("status write failed; will retry")
		c.statuses.queue.AddRateLimited(key)
		return true
	}
	c.statuses.queue.Forget(key)
	return true
}

// drainStatus writes the queued status until the queue is empty or ctx ends;
// writes that fail stay queued for the workers.
func (c *Controller) drainStatus(ctx context.Context) {
	for ctx.Err() == nil && c.statuses.queue.Len() > 0 {
		if !c.processNextStatus(ctx) {
			return
		}
	}
}
