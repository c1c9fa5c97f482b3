package e2e

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/test/stack"
)

// A new Service is not warned about in the moment before its pods are ready;
// a Service that had endpoints and loses them is, at once; a Service whose
// every address is refused says so.
func TestEventsDoNotCryWolf(t *testing.T) {
	drained(t) // the Events asserted on are not behind older ones
	namespace(t, "calm")
	// The Service comes first, its pods after: skylb sees it without endpoints.
	lbService(t, "calm", "web")
	deploy(t, "calm", "web", 1, "")
	follow(t, slow, "calm", "web", "web.calm.example.org", 1)
	// Events are sent in the order they are made: once the Published Event
	// with an address is there, a NoEndpoints Warning made before it would be too.
	stack.Eventually(t, quick, "Published Event with an address", hasEvent(t, "calm", "Service", "web", "Published", "web.calm.example.org: 192.0.2."))
	for _, e := range eventsOf(t, "calm", "Service", "web") {
		if strings.HasPrefix(e, "NoEndpoints:") {
			t.Errorf("a new Service whose pods became ready within the grace period was warned: %s", e)
		}
	}

	// Its endpoints gone, it is warned about at once.
	scale(t, "calm", "web", 0)
	stack.Eventually(t, slow, "NoEndpoints Warning once the pods are gone", hasEvent(t, "calm", "Service", "web", "NoEndpoints", "no ready endpoints"))

	// Every address refused: Published says refused, not "no addresses yet".
	metallb(t, "calm", "loop", []corev1.LoadBalancerIngress{{IP: "127.0.0.1"}})
	expectEvent(t, "calm", "loop", "AddressRefused", "127.0.0.1")
	stack.Eventually(t, quick, "Published Event saying refused", hasEvent(t, "calm", "Service", "loop", "Published", "every address was refused"))
	evs := eventsOf(t, "calm", "Service", "loop")
	if slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "NoEndpoints:") }) {
		t.Errorf("a Service whose addresses are refused was told it has no endpoints: %q", evs)
	}
}
