package controller_test

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/source"
)

// The caches hold Services without what skylb never reads (labels, kubectl's
// last-applied copy, most of the spec); writing the status must leave all of
// that as it is on the Service.
func TestStatusWriteKeepsWhatTheCacheStrips(t *testing.T) {
	srv := etcdtest.Start(t)
	svc := lbService("shop", "web", t0)
	svc.Labels = map[string]string{"app.kubernetes.io/name": "web", "team": "shop"}
	svc.Annotations = map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"kind":"Service"}`,
		"example.com/note":                 "kept",
	}
	svc.Spec.Selector = map[string]string{"app": "web"}
	svc.Spec.ClusterIP = "10.96.0.10"
	want := svc.DeepCopy()
	e := runWith(t, srv, source.Config{},
		node("n1", true, internalIP("10.0.0.1")),
		svc,
		slice("shop", "web", ep{ip: "10.244.1.5", node: "n1", ready: true}),
	)
	e.expect("web.shop.example.org 10.0.0.1")
	e.status("shop", "web", "10.0.0.1")
	got, err := e.kube.CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Labels, want.Labels) || !maps.Equal(got.Annotations, want.Annotations) ||
		!maps.Equal(got.Spec.Selector, want.Spec.Selector) || got.Spec.ClusterIP != want.Spec.ClusterIP {
		t.Errorf("after the status write: labels %v, annotations %v, selector %v, cluster IP %q; want them unchanged: %v, %v, %v, %q",
			got.Labels, got.Annotations, got.Spec.Selector, got.Spec.ClusterIP,
			want.Labels, want.Annotations, want.Spec.Selector, want.Spec.ClusterIP)
	}
}
