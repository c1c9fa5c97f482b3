package controller

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPortListsShare(t *testing.T) {
	l := newPortLists()
	list := func(port int32) []corev1.ServicePort {
		return []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "x", Port: port, Protocol: corev1.ProtocolTCP}}
	}
	a := l.share(list(443))
	b := l.share(list(443))
	c := l.share(list(8443))
	if &a[0] != &b[0] {
		t.Error("equal lists are not shared")
	}
	if &a[0] == &c[0] || c[1].Port != 8443 {
		t.Errorf("a different list is given the first: %+v", c)
	}
	if got := l.share(nil); got != nil {
		t.Errorf("share(nil) = %v", got)
	}
	if n := held(l); n != 2 {
		t.Errorf("%d lists held, want 2", n)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
}

func TestPortListsForgetCollectedLists(t *testing.T) {
	l := newPortLists()
	kept := l.share([]corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}})
	for p := range int32(100) {
		l.share([]corev1.ServicePort{{Name: "p", Port: 1000 + p, Protocol: corev1.ProtocolTCP}})
	}
	// The cleanups run after a collection, on a goroutine of their own.
	for deadline := time.Now().Add(10 * time.Second); held(l) > 1 && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := held(l); n != 1 {
		t.Fatalf("%d lists held once only one is in use, want 1", n)
	}
	again := l.share([]corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}})
	if &again[0] != &kept[0] {
		t.Error("the list in use is no longer shared")
	}
}

// held returns the number of lists l holds.
func held(l *portLists) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ws := range l.lists {
		n += len(ws)
	}
	return n
}
