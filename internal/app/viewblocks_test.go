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

func TestServiceOf(t *testing.T) {
	for addr, want := range map[string]string{
		"coredns.skylb-coredns.svc:53":               "skylb-coredns/coredns",
		"coredns.skylb-coredns.svc.cluster.local:53": "skylb-coredns/coredns",
		"127.0.0.1:53": "", "dns.example.org:53": "", "coredns.skylb-coredns.svc": "",
	} {
		if got := serviceOf(addr); got != want {
			t.Errorf("serviceOf(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestWarnHiddenClients: views chosen by the client's address warn when
// CoreDNS's Service hands CoreDNS node addresses, and only then.
func TestWarnHiddenClients(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		svc      *corev1.ServiceSpec // nil: no Service
		networks bool
		warn     bool
	}{
		{name: "NodePort, Cluster", svc: &corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}, networks: true, warn: true},
		{name: "LoadBalancer, Cluster", svc: &corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster}, networks: true, warn: true},
		{name: "NodePort, Local", svc: &corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}, networks: true},
		{name: "headless (host network)", svc: &corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone}, networks: true},
		{name: "no Service", networks: true},
		{name: "a view without networks", svc: &corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.New()
			if tt.svc != nil {
				svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "skylb-coredns", Name: "coredns"}, Spec: *tt.svc}
				if _, err := kube.CoreV1().Services("skylb-coredns").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			log, hook := logrus.New(), &countHook{}
			log.AddHook(hook)
			k := &blockKeeper{prefix: "/skydns", zones: []string{"example.org"}, coredns: "skylb-coredns/coredns",
				views: []source.View{{Name: "internal", Source: source.ModePods}}, kube: kube, log: log}
			if tt.networks {
				k.cfg.Networks = map[string][]netip.Prefix{"internal": {netip.MustParsePrefix("10.0.0.0/8")}}
			}
			k.warnHiddenClients(ctx)
			if got := hook.warnings > 0; got != tt.warn {
				t.Errorf("warned: %v, want %v", got, tt.warn)
			}
		})
	}
}

// countHook counts the warnings logged.
type countHook struct{ warnings int }

func (h *countHook) Levels() []logrus.Level   { return []logrus.Level{logrus.WarnLevel} }
func (h *countHook) Fire(*logrus.Entry) error { h.warnings++; return nil }
