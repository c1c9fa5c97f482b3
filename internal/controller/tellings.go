package controller

import (
	"hash/maphash"
	"slices"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// tellings is what the resolution of each group says to each object, and
// what the controller has told each object as Events already: from these it
// tells an object only what changed. Controller.mu guards it.
type tellings struct {
	conflict map[string]map[string][]source.Problem // by group, then source: problems of resolution
	granted  map[string]map[string][]string         // by group, then source: names published
	reported map[string][]source.Problem            // by source: problems already told as Events
	// told holds, by source, a hash of the Published Event last sent: one
	// message per object would be a megabyte at ten thousand objects.
	told     map[string]uint64
	toldSeed maphash.Seed
}

func newTellings() tellings {
	return tellings{
		conflict: make(map[string]map[string][]source.Problem),
		granted:  make(map[string]map[string][]string),
		reported: make(map[string][]source.Problem),
		told:     make(map[string]uint64),
		toldSeed: maphash.MakeSeed(),
	}
}

// sizeFor sizes what is told for n objects at once, if nothing was told
// yet: a first pass holds an entry for nearly every object, and growing the
// table as it goes would copy it again and again.
func (t *tellings) sizeFor(n int) {
	if len(t.told) == 0 {
		t.told = make(map[string]uint64, n)
	}
}

// resolved records what group g's resolution found: problems and granted
// names by source. It adds to touched the sources whose problems or names
// may have changed, those of before and those of now.
func (t *tellings) resolved(g string, problems map[string][]source.Problem, granted map[string][]string, touched map[string]bool) {
	replaceGroup(t.conflict, g, problems, touched)
	replaceGroup(t.granted, g, granted, touched)
}

// replaceGroup sets group g's entries by source to now, and adds to
// touched the sources of before and of now.
func replaceGroup[V any](byGroup map[string]map[string]V, g string, now map[string]V, touched map[string]bool) {
	for s := range byGroup[g] {
		touched[s] = true
	}
	for s := range now {
		touched[s] = true
	}
	if len(now) == 0 {
		delete(byGroup, g)
	} else {
		byGroup[g] = now
	}
}

// names returns the names src is granted in groups.
func (t *tellings) names(src string, groups []string) []string {
	var names []string
	for _, g := range groups {
		names = append(names, t.granted[g][src]...)
	}
	return names
}

// problems returns the problems of resolution src has in groups.
func (t *tellings) problems(src string, groups []string) []source.Problem {
	var out []source.Problem
	for _, g := range groups {
		out = append(out, t.conflict[g][src]...)
	}
	return out
}

// published reports whether msg is news for src, the Published Event to
// tell it, and remembers it as told.
func (t *tellings) published(src, msg string) bool {
	h := maphash.String(t.toldSeed, msg)
	if told, ok := t.told[src]; ok && told == h {
		return false
	}
	t.told[src] = h
	return true
}

// report returns the problems of current that src has not been told, and
// remembers current as told.
func (t *tellings) report(src string, current []source.Problem) []source.Problem {
	var news []source.Problem
	for _, p := range current {
		if !slices.Contains(t.reported[src], p) {
			news = append(news, p)
		}
	}
	if len(current) == 0 {
		delete(t.reported, src)
	} else {
		t.reported[src] = current
	}
	return news
}

// forget drops what was told src: it publishes nothing, or is gone.
func (t *tellings) forget(src string) {
	delete(t.reported, src)
	delete(t.told, src)
}

// forgetPublished drops the Published Event told src: it holds no name.
func (t *tellings) forgetPublished(src string) { delete(t.told, src) }

// hostnameConflicts returns the number of hostname claims refused.
func (t *tellings) hostnameConflicts() int {
	n := 0
	for _, bySource := range t.conflict {
		for _, problems := range bySource {
			for _, p := range problems {
				if p.Reason == source.ReasonHostnameConflict {
					n++
				}
			}
		}
	}
	return n
}

// publishers calls f with every source granted stored (as its own name, or
// the zone's for its apex records) and that name.
func (t *tellings) publishers(stored string, f func(src, name string)) {
	for _, bySource := range t.granted {
		for src, names := range bySource {
			if i := slices.IndexFunc(names, func(n string) bool { return n == stored || skydns.ApexName(n) == stored }); i >= 0 {
				f(src, names[i])
			}
		}
	}
}
