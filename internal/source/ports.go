package source

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PortConflictDepth bounds how far PortConflict follows older Services
// that are refused themselves (see portHolder); past it an older Service
// counts as holding its ports, which refuses rather than shadows.
const PortConflictDepth = 8

// PortKeys returns the keys a Service is indexed under for port conflicts,
// "<protocol>/<port>" for each of its ports, when skylb implements it with
// the nodes source: kube-proxy serves each of those ports at every address
// of the Service's status, the nodes' own, which Services of the nodes
// source all share. Other Services have none.
func (b *Builder) PortKeys(svc *corev1.Service) []string {
	if !b.Implements(svc) || !b.nodesSource(svc) {
		return nil
	}
	keys := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		keys = append(keys, portKey(p))
	}
	return keys
}

func portKey(p corev1.ServicePort) string {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return string(proto) + "/" + strconv.Itoa(int(p.Port))
}

// nodesSource reports whether a Service skylb implements takes its addresses
// from the nodes, as Service's mode decides it.
func (b *Builder) nodesSource(svc *corev1.Service) bool {
	mode := b.cfg.AddressSource
	if v, ok := svc.Annotations[AnnotationAddressSource]; ok {
		if m, err := ParseMode(v); err == nil {
			mode = m
		}
	}
	return mode == ModeNodes || mode == ModeAuto
}

// portHolder returns the older Service that serves one of svc's ports at the
// nodes' addresses, and that port's key; nil when there is none. Older is by
// creationTimestamp, then namespace and name, so the choice depends on the
// objects alone. An older Service that is refused itself holds nothing.
func (b *Builder) portHolder(svc *corev1.Service) (*corev1.Service, string) {
	if b.listers.PortUsers == nil {
		return nil, ""
	}
	return b.holder(svc, 0, map[*corev1.Service]bool{})
}

// holder is portHolder at a depth of the chain of older Services; refused
// remembers, by Service, whether it is refused, so that each is decided once.
// The older Services are tried oldest first: the oldest of a port is refused
// only for another port, so one pass over them mostly decides.
func (b *Builder) holder(svc *corev1.Service, depth int, refused map[*corev1.Service]bool) (*corev1.Service, string) {
	type user struct {
		svc *corev1.Service
		key string
	}
	var users []user
	for _, key := range b.PortKeys(svc) {
		for _, o := range b.listers.PortUsers(key) {
			if older(o, svc) {
				users = append(users, user{o, key})
			}
		}
	}
	for len(users) > 0 {
		i := 0
		for j := range users {
			if older(users[j].svc, users[i].svc) {
				i = j
			}
		}
		u := users[i]
		if depth >= PortConflictDepth {
			return u.svc, u.key
		}
		r, ok := refused[u.svc]
		if !ok {
			held, _ := b.holder(u.svc, depth+1, refused)
			r = held != nil
			refused[u.svc] = r
		}
		if !r {
			return u.svc, u.key
		}
		users = slices.Delete(users, i, i+1)
	}
	return nil, ""
}

// older reports whether a was created before b, namespace and name telling
// apart those of the same second.
func older(a, b *corev1.Service) bool {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c < 0
	}
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name)) < 0
}
