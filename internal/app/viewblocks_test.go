package app

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/source"
)

func TestBlockKeeper(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.New()
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "a"}},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}}}}
	k := &blockKeeper{
		cfg: ViewBlocks{Namespace: "skylb-coredns", Name: "coredns-views",
			Networks: map[string][]netip.Prefix{"internal": {netip.MustParsePrefix("10.0.0.0/8")}}},
		prefix: "/skydns",
		views:  []source.View{{Name: "internal", Source: source.ModePods}, {Name: "zone-a", Source: source.ModeAuto, Zone: "a"}},
		kube:   kube, nodes: func() []*corev1.Node { return nodes },
		log: logrus.New(),
	}
	if err := k.sync(ctx, true); !errors.Is(err, errNoViewConfigMap) {
		t.Fatalf("without the ConfigMap: %v, want errNoViewConfigMap", err)
	}
	// The ConfigMap as CoreDNS's manifests ship it, with a file of the
	// operator's beside.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "skylb-coredns", Name: "coredns-views"},
		Data: map[string]string{"lab.view": "# the operator's"}}
	if _, err := kube.CoreV1().ConfigMaps("skylb-coredns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := func() map[string]string {
		t.Helper()
		got, err := kube.CoreV1().ConfigMaps("skylb-coredns").Get(ctx, "coredns-views", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Data
	}
	if err := k.sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	got := data()
	for _, want := range []string{"view internal {", "incidr(client_ip(), '10.0.0.0/8')", "view zone-a {", "incidr(client_ip(), '10.244.1.0/24')"} {
		if !strings.Contains(got[ViewBlocksKey], want) {
			t.Errorf("no %q in %s:\n%s", want, ViewBlocksKey, got[ViewBlocksKey])
		}
	}
	if got["lab.view"] != "# the operator's" {
		t.Errorf("the operator's file became %q", got["lab.view"])
	}
	// onlyReads checks that a sync with the ConfigMap read reads it alone.
	onlyReads := func(what string) {
		t.Helper()
		kube.ClearActions()
		if err := k.sync(ctx, true); err != nil {
			t.Fatal(err)
		}
		for _, a := range kube.Actions() {
			if a.GetVerb() != "get" {
				t.Errorf("%s: %s, want only a read", what, a.GetVerb())
			}
		}
	}
	// Nothing changed: nothing written.
	onlyReads("unchanged blocks")
	// A change of the nodes that leaves the blocks as they were costs no
	// request.
	kube.ClearActions()
	if err := k.sync(ctx, false); err != nil || len(kube.Actions()) > 0 {
		t.Errorf("the blocks unchanged: %v, %d requests; want none", err, len(kube.Actions()))
	}
	// A node of the zone joins: its pod network joins the zone's block.
	nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{corev1.LabelTopologyZone: "a"}},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.2.0/24"}}})
	if err := k.sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := data()[ViewBlocksKey]; !strings.Contains(got, "incidr(client_ip(), '10.244.1.0/24') || incidr(client_ip(), '10.244.2.0/24')") {
		t.Errorf("after n2 joined zone a:\n%s", got)
	}

	// The views taken away: skylb's file goes, the operator's stays.
	k.views = nil
	if err := k.sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := data(); len(got) != 1 || got["lab.view"] != "# the operator's" {
		t.Errorf("without views: %v, want the operator's file alone", got)
	}
	// Without views from the start, the ConfigMap is read and left alone:
	// CoreDNS has nothing to reload for.
	onlyReads("no views")
}
