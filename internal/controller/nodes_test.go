package controller_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/source"
)

// NodesChanged is told of a node's place (its labels, pod networks,
// addresses), not of its status's heartbeats; Nodes gives the nodes.
func TestNodesChanged(t *testing.T) {
	n1 := node("node-1", true, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.11"})
	kube := fake.NewClientset(n1)
	pub := publish.NewGroup(etcdtest.Start(t).NewClient(t), publish.Config{Prefix: "/skydns", Owner: owner, Log: quietLog()})
	var told atomic.Int32
	changed := make(chan struct{}, 1)
	ctrl := controller.New(controller.Config{Source: source.Config{AddressSource: source.ModeStatus}, Log: quietLog(),
		NodesChanged: changed}, kubefake.For(kube), pub, record.NewFakeRecorder(10))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				told.Add(1)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the caches", ctrl.Ready)
	if got := ctrl.Nodes(); len(got) != 1 || got[0].Name != "node-1" {
		t.Fatalf("Nodes() = %v, want node-1", got)
	}
	told.Store(0)
	nodes := kube.CoreV1().Nodes()
	update := func(change func(*corev1.Node)) {
		t.Helper()
		n, err := nodes.Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(n)
		if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A heartbeat, then a label: one call, for the label.
	update(func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() })
	update(func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelTopologyZone: "zone-a"} })
	waitFor("the label's change", func() bool { return told.Load() > 0 })
	waitFor("the cache's label", func() bool { return ctrl.Nodes()[0].Labels[corev1.LabelTopologyZone] == "zone-a" })
	if got := told.Load(); got != 1 {
		t.Errorf("NodesChanged signalled %d times for a heartbeat and a label, want once", got)
	}
	update(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24"} })
	waitFor("the pod network's change", func() bool { return told.Load() == 2 })
}
