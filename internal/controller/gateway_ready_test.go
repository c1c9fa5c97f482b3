package controller_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/controller"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/source"
)

// A cluster without the Gateway API: the controller becomes ready on the
// informers that run, without waiting for the Gateway API's.
func TestReadyWithoutGatewayAPI(t *testing.T) {
	srv := etcdtest.Start(t)
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	pub := publish.NewGroup(srv.NewClient(t), publish.Config{Prefix: "/skydns", Owner: owner, Log: quietLog()})
	ctrl := controller.New(controller.Config{
		Source:     source.Config{Zones: zones, TTL: 30, AddressSource: source.ModeStatus},
		GatewayAPI: true, GatewayPoll: time.Hour,
		Log: quietLog(),
	}, kubefake.New(), pub, &record.FakeRecorder{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { pub.Run(ctx); done <- struct{}{} }()
	go func() { _ = ctrl.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()

	deadline := time.Now().Add(10 * time.Second)
	for !ctrl.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the controller is not ready after 10 s in a cluster without the Gateway API")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
