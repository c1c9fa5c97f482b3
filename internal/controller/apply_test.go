package controller

import (
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/kubeclient/kubefake"
	"github.com/skylb/skylb/internal/publish"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// TestApply checks that an outcome reaches the publisher, the recorder and
// the queues, and that Events and status wait for leadership and are never
// made in a dry run.
func TestApply(t *testing.T) {
	web := &source.Publication{Key: skydns.ObjectKey{Kind: "service", Namespace: "shop", Name: "web"}, Source: "service/shop/web"}
	out := outcome{
		records: []wanted{{stored: "www.example.org", want: publish.Want{Records: []skydns.Record{
			{Name: "www.example.org", Host: "192.0.2.1", TTL: 30, Source: "service/shop/web"},
		}}}},
		events:  []event{{pub: web, kind: corev1.EventTypeWarning, reason: source.ReasonNoEndpoints, message: "no endpoints"}},
		status:  []status{{key: skydns.ObjectKey{Kind: source.KindService, Namespace: "shop", Name: "web"}}},
		requeue: []requeue{{key: skydns.ObjectKey{Kind: source.KindService, Namespace: "shop", Name: "other"}}},
	}
	tests := []struct {
		name       string
		leading    bool
		dryRun     bool
		wantEvents []string
		wantStatus int
	}{
		{name: "leading", leading: true, wantEvents: []string{"Warning NoEndpoints no endpoints"}, wantStatus: 1},
		{name: "following", leading: false},
		{name: "dry run", leading: true, dryRun: true, wantStatus: 1},
	}
	zones, err := dnsname.ParseZones([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := logrus.New()
			log.SetOutput(io.Discard)
			pub := publish.NewGroup(nil, publish.Config{Prefix: "/skydns", Owner: "cluster1", Log: log})
			recorder := record.NewFakeRecorder(10)
			c := New(Config{
				Source: source.Config{Zones: zones, TTL: 30}, DryRun: tt.dryRun,
				Leading: func() bool { return tt.leading }, Log: log,
			}, kubefake.New(), pub, recorder)
			c.phase.started.Store(true)
			o := out
			o.seq = c.order.begin()
			c.apply(o)

			var names []string
			pub.CountRecords(func(stored string, _ skydns.Type) { names = append(names, stored) })
			if want := []string{"www.example.org"}; !slices.Equal(names, want) {
				t.Errorf("names wanted from the publisher = %q, want %q", names, want)
			}
			var events []string
			for len(recorder.Events) > 0 {
				events = append(events, <-recorder.Events)
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
			// The status queue writes only while leading; a dry run logs
			// what it would write.
			if got := c.statuses.queue.Len(); got != tt.wantStatus {
				t.Errorf("status queued = %d, want %d", got, tt.wantStatus)
			}
			if got := c.queue.Len(); got != 1 {
				t.Errorf("keys queued = %d, want 1", got)
			}
		})
	}
}
