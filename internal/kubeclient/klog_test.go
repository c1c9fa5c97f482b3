package kubeclient_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"k8s.io/klog/v2"

	"github.com/skylb/skylb/internal/kubeclient"
)

type logged struct {
	Level    logrus.Level
	Message  string
	Repeated any
}

func TestRouteKlogKeepsSeverity(t *testing.T) {
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	kubeclient.RouteKlog(log, 200*time.Millisecond)
	forbidden := errors.New(`services is forbidden: User "nobody" cannot list resource "services"`)

	klog.ErrorS(forbidden, "Failed to watch", "type", "*v1.Service")
	klog.Warning("server sent a warning")
	klog.Info("Caches populated")
	klog.Background().Info("Warning: watch ended with error", "type", "*v1.Node")
	// An outage repeats the same line: it is logged once per interval.
	for i := range 6 {
		if i == 5 {
			time.Sleep(250 * time.Millisecond)
		}
		klog.Errorf("dial tcp 127.0.0.1:%d: connect: connection refused", 6440+i)
	}
	klog.Flush()

	var got []logged
	for _, e := range hook.AllEntries() {
		got = append(got, logged{e.Level, e.Message, e.Data["repeated"]})
		if e.Data["component"] != "client-go" || e.Data["source"] == "" {
			t.Errorf("entry %q has fields %v, want component=client-go and its source", e.Message, e.Data)
		}
	}
	want := []logged{
		{logrus.ErrorLevel, `"Failed to watch" err="services is forbidden: User \"nobody\" cannot list resource \"services\"" type="*v1.Service"`, nil},
		{logrus.WarnLevel, "server sent a warning", nil},
		{logrus.DebugLevel, "Caches populated", nil},
		{logrus.WarnLevel, `"Warning: watch ended with error" type="*v1.Node"`, nil},
		{logrus.ErrorLevel, "dial tcp 127.0.0.1:6440: connect: connection refused", nil},
		{logrus.ErrorLevel, "dial tcp 127.0.0.1:6445: connect: connection refused", 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("logged lines (-want +got):\n%s", diff)
	}
}
