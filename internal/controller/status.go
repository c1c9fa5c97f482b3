package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/skylb/skylb/internal/source"
)

// statusTimeout bounds one status write, retries included.
const statusTimeout = 10 * time.Second

// writeStatus sets status.loadBalancer.ingress of a Service when it differs from
// want. The first attempt starts from the cached Service; after a conflict it
// reads the Service again.
func (c *Controller) writeStatus(cached *corev1.Service, want []corev1.LoadBalancerIngress) error {
	if source.StatusEqual(cached.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	if c.cfg.DryRun {
		c.cfg.Log.WithFields(logrus.Fields{"service": cached.Namespace + "/" + cached.Name, "ingress": describeStatus(want)}).
			Info("dry run: service status would change")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	services := c.kube.CoreV1().Services(cached.Namespace)
	svc := cached
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if svc == nil {
			fresh, err := services.Get(ctx, cached.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			svc = fresh
		}
		if svc.UID != cached.UID || source.StatusEqual(svc.Status.LoadBalancer.Ingress, want) {
			return nil
		}
		update := svc.DeepCopy()
		update.Status.LoadBalancer.Ingress = want
		svc = nil
		if _, err := services.UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("update status of service %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	if changed {
		list := describeStatus(want)
		c.statusWrites.Add(1)
		c.recorder.Eventf(cached, corev1.EventTypeNormal, source.ReasonAddressesChanged, "load balancer ingress set to %s", list)
		c.cfg.Log.WithFields(logrus.Fields{"service": cached.Namespace + "/" + cached.Name, "ingress": list}).Info("service status updated")
	}
	return nil
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
