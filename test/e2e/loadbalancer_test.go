package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skylb/skylb/test/stack"
)

// cleanupFinalizer is Kubernetes' load-balancer cleanup finalizer.
const cleanupFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// TestStatusAtCreation: a LoadBalancer Service with no pods gets every usable
// node as its EXTERNAL-IP at once, and skylb's finalizer; it publishes no
// record until a pod is ready.
func TestStatusAtCreation(t *testing.T) {
	namespace(t, "lbnew")
	start := time.Now()
	lbService(t, "lbnew", "web")
	usable := usableNodeAddresses(t)
	var took time.Duration
	// The bound is a busy machine's; the time it took is logged.
	stack.Eventually(t, slow, "an EXTERNAL-IP without pods", func() (bool, string) {
		ext := externalIPs(t, "lbnew", "web")
		took = time.Since(start)
		return slices.Equal(ext, usable), fmt.Sprintf("EXTERNAL-IP %q, want %q", ext, usable)
	})
	t.Logf("EXTERNAL-IP %q %v after the Service's creation, with no pods", usable, took.Round(time.Millisecond))
	// The finalizer follows the status, in a patch of its own.
	stack.Eventually(t, slow, "the cleanup finalizer", func() (bool, string) {
		svc, err := st.Kube.CoreV1().Services("lbnew").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(svc.Finalizers, cleanupFinalizer), fmt.Sprintf("finalizers %q", svc.Finalizers)
	})
	within(t, quick, "web.lbnew.example.org")
	deploy(t, "lbnew", "web", 1, "")
	follow(t, slow, "lbnew", "web", "web.lbnew.example.org", 1)
}

// TestRollingUpdateKeepsStatus: a rolling update of the pods behind a
// Service changes its answer, never its status, which kube-proxy serves.
func TestRollingUpdateKeepsStatus(t *testing.T) {
	namespace(t, "lbroll")
	deploy(t, "lbroll", "web", 3, "")
	lbService(t, "lbroll", "web")
	follow(t, slow, "lbroll", "web", "web.lbroll.example.org", 3)
	svc, err := st.Kube.CoreV1().Services("lbroll").Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := svc.Status.LoadBalancer.Ingress
	ctx, cancel := context.WithTimeout(ctxT(t), slow+time.Minute)
	defer cancel()
	w, err := st.Kube.CoreV1().Services("lbroll").Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "web").String(), ResourceVersion: svc.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"rollout":"%d"}}}}}`, time.Now().UnixNano())
	d, err := st.Kube.AppsV1().Deployments("lbroll").Patch(ctxT(t), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stack.Eventually(t, slow+time.Minute, "the rollout ends", func() (bool, string) {
		cur, err := st.Kube.AppsV1().Deployments("lbroll").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return rolledOut(cur, d.Generation), fmt.Sprintf("%+v", cur.Status)
	})
	follow(t, slow, "lbroll", "web", "web.lbroll.example.org", 3)
	// The status never changed meanwhile: every event of the watch since
	// before the rollout carries the same ingress.
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of the Service ended")
			}
			s, isSvc := ev.Object.(*corev1.Service)
			if !isSvc || ev.Type != watch.Modified {
				t.Fatalf("watch event %s %T", ev.Type, ev.Object)
			}
			if !equality.Semantic.DeepEqual(s.Status.LoadBalancer.Ingress, before) {
				t.Errorf("the status changed during the rollout: %v, was %v", s.Status.LoadBalancer.Ingress, before)
			}
			continue
		default:
		}
		break
	}
	t.Logf("rollout of 3 pods: the status stayed %q", externalIPs(t, "lbroll", "web"))
}

func rolledOut(d *appsv1.Deployment, generation int64) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// TestDeletionWaitsForRecords: a deleted Service stays in the API, held by
// skylb's finalizer, until its records are gone from etcd.
func TestDeletionWaitsForRecords(t *testing.T) {
	namespace(t, "lbdel")
	deploy(t, "lbdel", "web", 1, "")
	lbService(t, "lbdel", "web")
	follow(t, slow, "lbdel", "web", "web.lbdel.example.org", 1)
	path := stack.StoredPath("web.lbdel.example.org") + "/"
	root := etcdAs(t, "root")
	if err := st.Kube.CoreV1().Services("lbdel").Delete(ctxT(t), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var left int
	stack.Eventually(t, slow, "the Service is removed", func() (bool, string) {
		// etcd is read before the API: when the Service is gone, its
		// records were gone already.
		resp, err := root.Get(ctxT(t), path, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err.Error()
		}
		_, err = st.Kube.CoreV1().Services("lbdel").Get(ctxT(t), "web", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("the Service is still there (%v)", err)
		}
		left = int(resp.Count)
		return true, ""
	})
	if left != 0 {
		t.Errorf("the Service was removed while %d keys under %s were left", left, path)
	}
	within(t, quick, "web.lbdel.example.org")
}

// TestPortConflict: of two Services of the nodes source on one port, which
// kube-proxy would serve at the same node addresses, the younger is refused
// with a PortConflict Warning, and gets the port once the older is gone.
func TestPortConflict(t *testing.T) {
	namespace(t, "lbport")
	deploy(t, "lbport", "first", 1, "")
	deploy(t, "lbport", "second", 1, "")
	port := corev1.ServicePort{Name: "http", Port: 7070, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}
	lbService(t, "lbport", "first", ports(port))
	follow(t, slow, "lbport", "first", "first.lbport.example.org", 1)
	lbService(t, "lbport", "second", ports(port))
	stack.Eventually(t, slow, "PortConflict Warning", hasEvent(t, "lbport", "Service", "second", "PortConflict", "Service lbport/first"))
	// Refused: its endpoint is ready, yet no status and no record, once
	// skylb has synced past the EndpointSlice saying so (settle).
	stack.Eventually(t, slow, "second's endpoint ready", func() (bool, string) {
		pods, _ := endpointState(t, "lbport", "second")
		return len(pods) == 1, fmt.Sprintf("ready endpoints %q", pods)
	})
	settle(t)
	root := etcdAs(t, "root")
	const refused = "second.lbport.example.org"
	// The trees of the nodes' addresses; the view internal answers the
	// pods (--view=internal=pods), where kube-proxy's rules do not apply.
	paths := []string{treePath("/skydns/", refused), treePath("/skydns-zone-a/", refused), "/skylb/claims/" + refused + "/"}
	for _, path := range paths {
		resp, err := root.Get(ctxT(t), path, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 0 {
			t.Errorf("Got %d keys under %s for the refused Service, want none", resp.Count, path)
		}
	}
	within(t, quick, refused)
	if ext := externalIPs(t, "lbport", "second"); len(ext) != 0 {
		t.Errorf("Got EXTERNAL-IP %q for the refused Service, want none", ext)
	}
	if err := st.Kube.CoreV1().Services("lbport").Delete(ctxT(t), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	follow(t, slow, "lbport", "second", "second.lbport.example.org", 1)
}
