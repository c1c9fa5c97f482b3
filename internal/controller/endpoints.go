package controller

import (
	"slices"
	"time"

	"github.com/skylb/skylb/internal/source"
)

// endpointWatch is what the controller remembers of an object's addresses, so
// that a missing endpoint is told only when it means something: not in the
// moment between a Service's creation and its pods being ready.
type endpointWatch struct {
	had   bool      // the object has had addresses since skylb first saw it
	since time.Time // when it was first seen without any; zero while it has some
}

// next returns the watch after a sync of the object at now, whether its
// NoEndpoints problem is told, and, when it is held back, how long until it
// is due. An object that had addresses and lost them is told at once; one
// that has had none since skylb first saw it, once grace has passed without
// any arriving.
func (w endpointWatch) next(hasAddresses, noEndpoints bool, now time.Time, grace time.Duration) (endpointWatch, bool, time.Duration) {
	switch {
	case hasAddresses:
		return endpointWatch{had: true}, false, 0
	case !noEndpoints:
		return w, false, 0
	}
	if w.since.IsZero() {
		w.since = now
	}
	if w.had {
		return w, true, 0
	}
	if left := w.since.Add(grace).Sub(now); left > 0 {
		return w, false, left
	}
	return w, true, 0
}

// holdNoEndpointsLocked returns the problems of src to tell now: without its
// NoEndpoints problem while that is held back, and then out syncs src again
// when it falls due.
func (c *Controller) holdNoEndpointsLocked(out *outcome, src string, pub *source.Publication, problems []source.Problem) []source.Problem {
	noEndpoints := slices.ContainsFunc(problems, isNoEndpoints)
	w, tell, wait := c.book.endpoints[src].next(len(pub.Addresses) > 0 || len(pub.Targets) > 0, noEndpoints, time.Now(), c.cfg.NoEndpointsGrace)
	if w == (endpointWatch{}) {
		delete(c.book.endpoints, src)
	} else {
		c.book.endpoints[src] = w
	}
	if !noEndpoints || tell {
		return problems
	}
	out.requeue = append(out.requeue, requeue{key: pub.Key, after: wait})
	return slices.DeleteFunc(problems, isNoEndpoints)
}

func isNoEndpoints(p source.Problem) bool { return p.Reason == source.ReasonNoEndpoints }
