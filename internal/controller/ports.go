package controller

import (
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
)

// portLists shares the stripped port lists of cached Services. Most Services
// have one of a few (http and https, say), and each would otherwise keep a
// copy of its own: at ten thousand Services with two ports, 1.9 MB. A list is
// held weakly, so it goes once no cached Service has it.
type portLists struct {
	seed  maphash.Seed
	mu    sync.Mutex
	lists map[uint64][]weakPorts // by the hash of the ports
}

// weakPorts is a shared list: its first element, held weakly, and its length.
type weakPorts struct {
	first weak.Pointer[corev1.ServicePort]
	n     int
}

// slice returns the list, or nil once it has been collected.
func (w weakPorts) slice() []corev1.ServicePort {
	p := w.first.Value()
	if p == nil {
		return nil
	}
	// p is the first of the n elements of the list's array, alive while p
	// is held.
	return unsafe.Slice(p, w.n)
}

func newPortLists() *portLists {
	return &portLists{seed: maphash.MakeSeed(), lists: make(map[uint64][]weakPorts)}
}

// share returns the list equal to ports that an earlier Service has, or
// ports, then shared with later ones. ports must be an array of its own,
// never changed afterwards, as cached objects are not.
func (l *portLists) share(ports []corev1.ServicePort) []corev1.ServicePort {
	if len(ports) == 0 {
		return ports
	}
	var h uint64
	for _, p := range ports {
		h = h*31 + maphash.Comparable(l.seed, p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.lists[h] {
		if s := w.slice(); s != nil && slices.Equal(s, ports) {
			return s
		}
	}
	l.lists[h] = append(l.lists[h], weakPorts{first: weak.Make(&ports[0]), n: len(ports)})
	runtime.AddCleanup(&ports[0], l.forget, h)
	return ports
}

// forget drops the collected lists of hash h.
func (l *portLists) forget(h uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := slices.DeleteFunc(l.lists[h], func(w weakPorts) bool { return w.first.Value() == nil })
	if len(kept) == 0 {
		delete(l.lists, h)
		return
	}
	l.lists[h] = kept
}
