package app

import (
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

func TestEventGate(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	fake := record.NewFakeRecorder(2 * eventQueue)
	g := newEventGate(fake, 10, log)
	var mu sync.Mutex // the clock is read by the log line's timer too
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	g.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"}}
	send := func(n int, kind string) (sent int) {
		before := len(fake.Events)
		for range n {
			g.Eventf(svc, kind, "Published", "published web.demo.example.org: 192.0.2.%d", n)
		}
		return len(fake.Events) - before
	}

	// A burst of Normal Events takes half the queue, no more.
	if got := send(2000, corev1.EventTypeNormal); got != 450 {
		t.Errorf("Normal Events sent of a burst of 2000: %d, want 450", got)
	}
	// Warnings still find the other half.
	if got := send(500, corev1.EventTypeWarning); got != 450 {
		t.Errorf("Warnings sent of 500 after the burst: %d, want 450", got)
	}
	if n, w := g.Dropped(); n != 1550 || w != 50 {
		t.Errorf("Dropped() = %d Normal, %d Warning; want 1550, 50", n, w)
	}
	// A second later, the 10 Events sent meanwhile have made room for 10
	// Warnings, not for Normal Events, which wait for half the queue.
	advance(time.Second)
	if got := send(5, corev1.EventTypeNormal); got != 0 {
		t.Errorf("Normal Events sent a second later: %d, want 0", got)
	}
	if got := send(20, corev1.EventTypeWarning); got != 10 {
		t.Errorf("Warnings sent a second later: %d, want 10", got)
	}
	// Once the queue has drained, Normal Events go again.
	advance(2 * time.Minute)
	if got := send(100, corev1.EventTypeNormal); got != 100 {
		t.Errorf("Normal Events sent once drained: %d, want 100", got)
	}
	g.AnnotatedEventf(svc, map[string]string{"a": "b"}, corev1.EventTypeNormal, "Published", "published %s", "x")
	g.Event(svc, corev1.EventTypeNormal, "Published", "published y")
	if got, want := len(fake.Events), 450+450+10+100+2; got != want {
		t.Errorf("Events recorded: %d, want %d", got, want)
	}

	// The first drop is logged at once, with the count so far; the rest
	// wait for the next line, a minute after it.
	deadline := time.Now().Add(5 * time.Second)
	for len(hook.AllEntries()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	entries := hook.AllEntries()
	if len(entries) != 1 {
		t.Fatalf("log lines: %d, want 1", len(entries))
	}
	e := entries[0]
	if e.Level != logrus.WarnLevel || e.Message == "" || e.Data["normal"] == nil || e.Data["warning"] == nil {
		t.Errorf("log line: %v %q %v", e.Level, e.Message, e.Data)
	}
	if n, _ := e.Data["normal"].(int64); n < 1 || n > 1555 {
		t.Errorf("log line counts %v Normal Events dropped", e.Data["normal"])
	}
}
