package e2e

// Barriers: a test that must know skylb is done with what came before it
// (it wrote nothing more, or it sent its Events) creates a Service after
// everything else and waits for skylb to publish it.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// marks counts the Services settle and controllersBack created.
var marks atomic.Int32

// settle creates a Service of another implementation, with one address and
// no named port, and waits until skylb has written its one record in every
// tree: skylb syncs objects in the order they change and commits in that
// order, so what it was given before is in etcd too.
func settle(t *testing.T) {
	t.Helper()
	mark(t)
}

// drained waits until skylb has written everything it was given before, to
// etcd (settle) and to the API server's Events: it sends Events in the order
// it makes them, within the Kubernetes client's rate limit, and a skylb that
// has just started, or an API server back from an outage, leaves a backlog
// that would hold back a test's first Event for seconds. A test that asserts
// on Events within a bound calls it first.
func drained(t *testing.T) {
	t.Helper()
	name := mark(t)
	stack.Eventually(t, time.Minute, "skylb's Events sent up to settle/"+name,
		hasEvent(t, "settle", "Service", name, "Published", "203.0.113.250"))
}

// controllersBack restarts kube-controller-manager after the API server came
// back, and waits until a Service of pods is published. Its watches reconnect
// with client-go's backoff (0.8 s doubling to 30 s, each wait up to twice
// that with its jitter, reset only after 2 minutes without a failure), each
// informer on its own: one Deployment getting its pods proved nothing of the
// next change (a scale-down right after waited over a minute for one
// informer still backing off, failing the test that made it). Restarted, it
// lists and watches everything afresh. (The simulated kubelet's client waits for the
// API server instead: stack.RunKubelet.) It runs one pod behind a Service in
// namespace settle and waits until CoreDNS answers with its node's address.
func controllersBack(t *testing.T) {
	t.Helper()
	if err := st.Proc("kube-controller-manager").Restart(ctxT(t)); err != nil {
		t.Fatalf("restart kube-controller-manager: %v", err)
	}
	settleNamespace(t)
	name := fmt.Sprintf("pods-%d", marks.Add(1))
	deploy(t, "settle", name, 1, "")
	lbService(t, "settle", name)
	follow(t, 3*time.Minute, "settle", name, name+".settle.example.org", 1)
}

// settleNamespace creates the namespace of the barriers' objects, once.
func settleNamespace(t *testing.T) {
	t.Helper()
	_, err := st.Kube.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "settle"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace settle: %v", err)
	}
}

// mark creates the Service of settle and waits for its record in every tree;
// it returns the Service's name.
func mark(t *testing.T) string {
	t.Helper()
	settleNamespace(t)
	name := fmt.Sprintf("mark-%d", marks.Add(1))
	// Its status address in every view too: each view's publisher writes
	// in the order it is given, on its own, so the mark must reach them all.
	metallb(t, "settle", name, []corev1.LoadBalancerIngress{{IP: "203.0.113.250"}}, func(s *corev1.Service) {
		s.Spec.Ports[0].Name = ""
		s.Annotations = map[string]string{"skylb.io/address-source.internal": "status"}
	})
	root := etcdAs(t, "root")
	for _, tree := range append([]string{"/skydns/"}, viewTrees()...) {
		p := markPath(tree, name)
		stack.Eventually(t, quick, "skylb writes the record of settle/"+name+" under "+tree, func() (bool, string) {
			resp, err := root.Get(ctxT(t), p, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return false, err.Error()
			}
			return resp.Count > 0, "no key under " + p
		})
	}
	return name
}

// markPath returns the path of the records of the mark name in tree
// ("/skydns/" or a view's), with a trailing slash.
func markPath(tree, name string) string {
	return treePath(tree, name+".settle."+st.Zone)
}

// treePath returns the path of the records of a DNS name in tree, with a
// trailing slash.
func treePath(tree, name string) string {
	return tree + strings.TrimPrefix(stack.StoredPath(name), "/skydns/") + "/"
}

// write is a key written or deleted in etcd, at a revision.
type write struct {
	key     string
	deleted bool
	rev     int64
}

func (w write) String() string {
	op := "PUT"
	if w.deleted {
		op = "DELETE"
	}
	return fmt.Sprintf("%s %s at %d", op, w.key, w.rev)
}

// writesBetween returns the keys of the DNS etcd written or deleted in the
// revisions after from up to to, in order.
func writesBetween(t *testing.T, from, to int64) []write {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctxT(t), 10*time.Second)
	defer cancel()
	var out []write
	for resp := range etcdAs(t, "root").Watch(ctx, "", clientv3.WithFromKey(), clientv3.WithRev(from+1)) {
		if err := resp.Err(); err != nil {
			t.Fatalf("watch every key from revision %d: %v", from+1, err)
		}
		last := int64(0)
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision <= to {
				out = append(out, write{key: string(ev.Kv.Key), deleted: ev.Type == clientv3.EventTypeDelete, rev: ev.Kv.ModRevision})
			}
			last = ev.Kv.ModRevision
		}
		if last >= to {
			return out
		}
	}
	t.Fatalf("watch every key from revision %d ended before revision %d: %v", from+1, to, ctx.Err())
	return nil
}
