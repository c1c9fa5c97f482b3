package publish

import (
	"time"

	"github.com/sirupsen/logrus"
)

// logChanges logs the changes of a committed batch, without the lock held.
// A name an observed change in Kubernetes brought is logged at info, with the
// hosts added and removed, and so is every name of a dry run; the others (the
// first publication, a full reconciliation, the repair of a key edited in
// etcd) at debug, and flush sums them up at info (logUnobserved). A cold start
// writes every name, and a line each took a tenth of its CPU time.
func (p *Publisher) logChanges(batch []change, rev int64) {
	debug := debugEnabled(p.cfg.Log)
	for _, c := range batch {
		if c.observed.IsZero() && !p.cfg.DryRun && !debug {
			continue
		}
		var added []string
		for _, w := range c.puts {
			if w.added {
				added = append(added, w.host)
			}
		}
		switch {
		case p.cfg.DryRun:
			p.cfg.Log.WithFields(logrus.Fields{"name": c.name, "added": added, "removed": c.removed}).
				Info("dry run: records would change")
		case !c.observed.IsZero():
			p.cfg.Log.WithFields(logrus.Fields{"name": c.name, "added": added, "removed": c.removed, "revision": rev}).
				Info("records changed")
		default:
			p.cfg.Log.WithFields(logrus.Fields{"name": c.name, "added": added, "removed": c.removed, "revision": rev}).
				Debug("records changed")
		}
	}
}

// debugEnabled reports whether log writes debug lines.
func debugEnabled(log logrus.FieldLogger) bool {
	switch l := log.(type) {
	case *logrus.Entry:
		return l.Logger.IsLevelEnabled(logrus.DebugLevel)
	case *logrus.Logger:
		return l.IsLevelEnabled(logrus.DebugLevel)
	}
	return true
}

// unobserved sums up the changes a flush wrote that no observed change in
// Kubernetes brought (see logChanges).
type unobserved struct {
	names, puts, deletes, txns int
	first                      []string // the first names, for the log
}

// maxFirst is how many names the summary of unobserved changes names.
const maxFirst = 10

// add counts the unobserved changes of a committed batch.
func (u *unobserved) add(batch []change) {
	counted := false
	for _, c := range batch {
		if !c.observed.IsZero() {
			continue
		}
		counted = true
		u.names++
		u.puts += len(c.puts)
		u.deletes += len(c.dels)
		if len(u.first) < maxFirst {
			u.first = append(u.first, c.name)
		}
	}
	if counted {
		u.txns++
	}
}

// logUnobserved logs, in one line, the unobserved changes a flush wrote in
// took.
func (p *Publisher) logUnobserved(u unobserved, took time.Duration) {
	if u.names == 0 || p.cfg.DryRun {
		return
	}
	p.cfg.Log.WithFields(logrus.Fields{
		"names": u.names, "puts": u.puts, "deletes": u.deletes, "transactions": u.txns,
		"took": took.Round(time.Millisecond), "first": u.first,
	}).Info("records written")
}
