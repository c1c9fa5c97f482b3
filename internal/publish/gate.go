package publish

import "sync"

// A view's Publisher writes a name's records only while the default view's
// Publisher answers the name (Config.Gate): the default view's claims hold
// the name in every view. Without it a view would write a name another
// cluster holds, or a shared name while another cluster answers it by the
// clusters' policy (failover), since a view's Publisher has no claims of its
// own. The default view's Publisher notes the names other clusters claim
// its answer on may have changed on, which its Group hands to the views.
//
// No Publisher takes another's lock while it holds its own: a view's
// Publisher asks the Gate about the names a flush will decide before it
// takes its table for them (askGate), and Answers takes the default view's
// alone. A change of the default view's answer afterwards reaches the view as
// a Recheck, which decides the name again at the next flush; the Group hands
// those names over holding no lock of either.

// Gate says whether this cluster answers a stored name in the default view.
type Gate interface {
	Answers(stored string) bool
}

// Answers reports whether this cluster answers stored, as far as the claims
// go: always without claims or while no other cluster claims the name (or
// a name nested with it); otherwise as last decided: its claim granted and,
// for a shared name, this cluster serving it. A name other clusters claim
// that is not decided yet is not answered.
func (p *Publisher) Answers(stored string) bool {
	if !p.codec.claiming() {
		return true
	}
	p.lock()
	defer p.mu.Unlock()
	n := p.view.names[stored]
	if n == nil || !p.contestedLocked(stored, n) {
		return true
	}
	if d, ok := p.verdictLocked(stored); !ok || !d.Granted {
		return false
	}
	s, ok := p.clusters.sharings[stored]
	return !ok || s.Serve
}

// contestedLocked reports whether another cluster claims stored or a name
// nested with it, or a decision on it refused it.
func (p *Publisher) contestedLocked(stored string, n *name) bool {
	if p.foreignIn(n.claims) || len(p.clusters.foreignBelow[stored]) > 0 {
		return true
	}
	d, ok := p.clusters.verdicts[stored]
	return ok && !d.Granted
}

// Recheck has the Publisher decide stored again at its next flush, as its
// Gate's answer on it may have changed.
func (p *Publisher) Recheck(stored string) { p.send(message{kind: msgRecheck, stored: stored}) }

// answeredLocked notes stored for the views after a decision on it, when
// Answers may have changed: the name is contested, or was.
func (p *Publisher) answeredLocked(stored string, was bool) {
	if p.answers == nil {
		return
	}
	if n := p.view.names[stored]; was || n != nil && p.contestedLocked(stored, n) {
		p.clusters.answered = append(p.clusters.answered, stored)
	}
}

// tellAnswered signals the names noted since the last call, if any.
func (p *Publisher) tellAnswered() {
	p.mu.Lock()
	noted := len(p.clusters.answered) > 0
	p.mu.Unlock()
	if noted {
		select {
		case p.answers <- struct{}{}:
		default:
		}
	}
}

// takeAnswered returns the names noted for the views, and forgets them.
func (p *Publisher) takeAnswered() []string { return takeLocked(&p.mu, &p.clusters.answered) }

// takeLocked empties a queue guarded by mu and returns what it held.
func takeLocked[T any](mu *sync.Mutex, queue *[]T) []T {
	mu.Lock()
	defer mu.Unlock()
	out := *queue
	*queue = nil
	return out
}

// askGate returns the names of marked its Gate does not answer, asked
// holding no lock of this Publisher.
func (p *Publisher) askGate(marked map[string]bool) map[string]bool {
	closed := make(map[string]bool)
	for stored := range marked {
		if !p.cfg.Gate.Answers(stored) {
			closed[stored] = true
		}
	}
	return closed
}

// gateOpen reports whether a view's Publisher may write stored: its Gate
// answered the name when the flush began (always without a Gate).
func (p *Publisher) gateOpen(stored string) bool {
	return p.cfg.Gate == nil || !p.work.closed[stored]
}
