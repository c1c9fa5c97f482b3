package controller

import (
	"context"
	"io"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/externaldns"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// TestDNSEndpointStatusWrite: the leader patches status.observedGeneration
// to the generation published, with the DNSEndpoint's uid; a follower and a
// dry run write nothing.
func TestDNSEndpointStatusWrite(t *testing.T) {
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	d := &externaldns.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "records", UID: "uid-records", Generation: 4},
		Spec: externaldns.DNSEndpointSpec{Endpoints: []externaldns.Endpoint{
			{DNSName: "www.example.org", RecordType: "A", Targets: []string{"192.0.2.1"}},
		}},
		Status: externaldns.DNSEndpointStatus{ObservedGeneration: 3},
	}
	key := skydns.ObjectKey{Kind: source.KindDNSEndpoint, Namespace: "shop", Name: "records"}
	tests := []struct {
		name            string
		leading, dryRun bool
		want            string // the patch sent; "" none
	}{
		{name: "leading", leading: true, want: `{"metadata":{"uid":"uid-records"},"status":{"observedGeneration":4}}`},
		{name: "following"},
		{name: "dry run", leading: true, dryRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := logrus.New()
			log.SetOutput(io.Discard)
			kube := kubefake.New()
			c := New(Config{
				Source: source.Config{Zones: zones, TTL: 30}, DNSEndpoint: true, DryRun: tt.dryRun,
				Leading: func() bool { return tt.leading }, Log: log,
			}, kube, nil, nil)
			if err := c.kindOf(source.KindDNSEndpoint).informers.list[0].GetIndexer().Add(d); err != nil {
				t.Fatal(err)
			}
			out, err := c.sync(context.Background(), key)
			if err != nil || len(out.status) != 1 || out.status[0].key != key {
				t.Fatalf("sync(%v) = status %v, %v; want the DNSEndpoint's", key, out.status, err)
			}
			if err := c.syncStatus(context.Background(), key); err != nil {
				t.Fatalf("syncStatus(%v) = %v", key, err)
			}
			var got string
			for _, a := range kube.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok && p.GetResource().Resource == "dnsendpoints" && p.GetSubresource() == "status" {
					got = string(p.GetPatch())
				}
			}
			if got != tt.want {
				t.Errorf("status patch = %q, want %q", got, tt.want)
			}
		})
	}
}
