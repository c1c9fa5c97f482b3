package rank

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// Index holds the publications of all objects, grouped for resolution.
type Index struct {
	maxAddrs int                            // addresses per name
	views    []string                       // the views besides the default one (see source.View)
	pubs     map[string]*source.Publication // by source
	members  map[string]map[string]struct{} // group -> sources with a name in it
	// published holds, by group, the stored names of its last resolution: a
	// slice rather than a set, 16 bytes a name rather than about 70.
	published map[string][]string
	rev       reverse // the published addresses in reverse zones (see reverse.go)
	scratch   scratch // what Resolve works with
}

// scratch is what Resolve works with while it resolves a group, kept from one
// call to the next: cleared, its maps and slices keep their room, so that
// resolving allocates little more than what it returns. Each change resolves
// its group again, so these were most of what a change allocated. An Index is
// used by one goroutine at a time.
type scratch struct {
	claims  []claim
	holder  map[string]string   // name -> namespace holding it
	beneath map[string][]string // name -> namespaces holding names beneath it
	granted map[string][]claim  // stored name -> granted claims, best first
	order   []string            // stored names in order of their first grant
	names   map[string]struct{} // the stored names published, SRV names included
}

// reset clears sc, so that it holds nothing of the group it was used for.
func (sc *scratch) reset() {
	clear(sc.claims)
	clear(sc.order)
	sc.claims, sc.order = sc.claims[:0], sc.order[:0]
	clear(sc.holder)
	clear(sc.beneath)
	clear(sc.granted)
	clear(sc.names)
}

// Result is the outcome of resolving one group.
type Result struct {
	// Records maps every stored name of the group to its records; a name that is
	// no longer published maps to nil.
	Records map[string][]skydns.Record
	// Problems lists, by source, the claims refused and the targets ignored.
	Problems map[string][]source.Problem
	// Granted lists, by source, the names of the group it publishes, in the
	// order of its claims.
	Granted map[string][]string
	// Shared holds the stored names every object publishing them marks
	// shared with other clusters.
	Shared map[string]bool
	// Clusters holds, for each shared stored name, how this cluster takes
	// part in answering it (see arbitrate.Share).
	Clusters map[string]Cluster
	// Views holds, for each view of the Index, the records of every stored
	// name of Records in that view: the same owners and names, with the
	// addresses of the view (source.Publication.ViewAddresses). A name's
	// records that are the same in a view are the same slice.
	Views map[string]map[string][]skydns.Record
}

// Cluster is how this cluster takes part in answering a shared name.
type Cluster struct {
	// Policy is the one the name's objects name; Balanced when they name
	// different ones. Priority is the most preferred (lowest) of theirs.
	Policy   arbitrate.Policy
	Priority int
	// Healthy says that at least one of the name's objects has an address
	// that passes its health checks: not every one fails open.
	Healthy bool
}

// clusterOf returns how this cluster answers a shared name granted to
// claims, and adds a problem to each of them when they name different
// policies.
func clusterOf(claims []claim, problems map[string][]source.Problem) Cluster {
	c := Cluster{Policy: claims[0].pub.ClusterPolicy, Priority: int(claims[0].pub.ClusterPriority)}
	disagree := false
	for _, cl := range claims {
		c.Priority = min(c.Priority, int(cl.pub.ClusterPriority))
		c.Healthy = c.Healthy || !cl.pub.Unhealthy
		disagree = disagree || cl.pub.ClusterPolicy != c.Policy
	}
	if !disagree {
		return c
	}
	var named []string
	for _, cl := range claims {
		named = append(named, cl.pub.Source+" "+string(cl.pub.ClusterPolicy))
	}
	for _, cl := range claims {
		addProblem(problems, cl.pub.Source, source.Problem{
			Reason: source.ReasonClusterPolicyConflict,
			Message: fmt.Sprintf("hostname %s: the objects publishing it name different %s (%s); using %s",
				cl.name.Name, source.AnnotationClusterPolicy, strings.Join(named, ", "), arbitrate.Balanced),
		})
	}
	c.Policy = arbitrate.Balanced
	return c
}

// NewIndex returns an empty Index that publishes at most maxAddrs addresses per
// name (source.DefaultMaxAddresses when 0), in the default view and in the
// views named.
func NewIndex(maxAddrs int, views ...string) *Index {
	if maxAddrs <= 0 {
		maxAddrs = source.DefaultMaxAddresses
	}
	return &Index{
		maxAddrs:  maxAddrs,
		views:     views,
		pubs:      make(map[string]*source.Publication),
		members:   make(map[string]map[string]struct{}),
		published: make(map[string][]string),
		scratch: scratch{
			holder: make(map[string]string), beneath: make(map[string][]string),
			granted: make(map[string][]claim), names: make(map[string]struct{}),
		},
		rev: reverse{
			byName: make(map[string][]netip.Addr), byAddr: make(map[netip.Addr]*publishers),
			touched: make(map[netip.Addr]was),
		},
	}
}

// GroupOf returns the resolution group of a placed name.
func GroupOf(n dnsname.Placed) string {
	if n.Apex() {
		return n.Zone
	}
	end := len(n.Name) - len(n.Zone) - 1
	if end <= 0 || n.Name[end] != '.' || n.Name[end+1:] != n.Zone {
		// Not a name of the zone: its last label before the zone's.
		rest := strings.TrimSuffix(n.Name, "."+n.Zone)
		return rest[strings.LastIndexByte(rest, '.')+1:] + "." + n.Zone
	}
	// A suffix of the name, which allocates nothing.
	return n.Name[strings.LastIndexByte(n.Name[:end], '.')+1:]
}

// StoredName returns the name under which the records of n are stored.
func StoredName(n dnsname.Placed) string {
	if n.Apex() {
		return skydns.ApexName(n.Zone)
	}
	return n.Name
}

// Update replaces the publication of src (nil removes it) and returns the groups
// whose records may have changed, sorted. An unchanged publication changes nothing.
func (x *Index) Update(src string, pub *source.Publication) []string {
	old := x.pubs[src]
	if old.Equal(pub) {
		return nil
	}
	groups := make(map[string]struct{})
	for _, g := range groupsOf(old) {
		groups[g] = struct{}{}
		delete(x.members[g], src)
		if len(x.members[g]) == 0 {
			delete(x.members, g)
		}
	}
	if pub == nil {
		delete(x.pubs, src)
	} else {
		x.pubs[src] = pub
		for _, g := range groupsOf(pub) {
			groups[g] = struct{}{}
			if x.members[g] == nil {
				x.members[g] = make(map[string]struct{})
			}
			x.members[g][src] = struct{}{}
		}
	}
	out := make([]string, 0, len(groups))
	for g := range groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// Groups returns every group that has members or published names, sorted.
func (x *Index) Groups() []string {
	out := make([]string, 0, len(x.members))
	for g := range x.members {
		out = append(out, g)
	}
	for g := range x.published {
		if _, ok := x.members[g]; !ok {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

func groupsOf(p *source.Publication) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, n := range p.Names {
		if g := GroupOf(n.Placed); !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// claim is one object's claim on one name.
type claim struct {
	name source.Name
	pub  *source.Publication
}

// compareClaims orders claims first come, first served: the older object,
// then namespace and name, so that ties of creationTimestamp (whole seconds)
// are decided the same way every time.
func compareClaims(a, b claim) int {
	return cmp.Or(
		a.pub.Created.Compare(b.pub.Created),
		cmp.Compare(a.pub.Key.Namespace, b.pub.Key.Namespace),
		cmp.Compare(a.pub.Key.Name, b.pub.Key.Name),
		cmp.Compare(a.pub.Source, b.pub.Source),
		cmp.Compare(a.name.Name, b.name.Name),
	)
}

// Resolve grants the claims of a group and computes the records of its
// names; the PTR records of their addresses come from Reverse.
func (x *Index) Resolve(group string) Result {
	members := x.members[group]
	// The names of the group: those published before, or at most each
	// claim's name with the SRV names of its object's ports, whichever is
	// more. Sized once, the map does not grow table by table, which at a
	// first pass, with nothing published before, made a fifth of what
	// resolving allocated.
	size, count := 0, 0
	for src := range members {
		pub := x.pubs[src]
		size += len(pub.Names)
		count += len(pub.Names)
	}
	res := Result{
		Records: make(map[string][]skydns.Record, max(count, len(x.published[group]))), Problems: make(map[string][]source.Problem),
		Granted: make(map[string][]string, len(members)), Shared: make(map[string]bool), Clusters: make(map[string]Cluster),
	}
	for _, name := range x.published[group] {
		res.Records[name] = nil
	}
	if len(x.views) > 0 {
		res.Views = make(map[string]map[string][]skydns.Record, len(x.views))
		for _, v := range x.views {
			res.Views[v] = make(map[string][]skydns.Record, len(res.Records))
			for _, name := range x.published[group] {
				res.Views[v][name] = nil
			}
		}
	}

	sc := &x.scratch
	defer sc.reset()
	claims := slices.Grow(sc.claims[:0], size)
	for src := range members {
		pub := x.pubs[src]
		for _, n := range pub.Names {
			if GroupOf(n.Placed) == group {
				claims = append(claims, claim{name: n, pub: pub})
			}
		}
	}
	slices.SortFunc(claims, compareClaims)
	sc.claims = claims

	holder, beneath, granted, order := sc.holder, sc.beneath, sc.granted, sc.order
	for _, c := range claims {
		if other, related := conflict(c, holder, beneath); other != "" {
			res.Problems[c.pub.Source] = append(res.Problems[c.pub.Source], source.Problem{
				Reason: source.ReasonHostnameConflict,
				Message: fmt.Sprintf("hostname %s is not published: %s is already published from namespace %s",
					c.name.Name, related, other),
			})
			continue
		}
		holder[c.name.Name] = c.pub.Key.Namespace
		for _, anc := range ancestors(c.name.Placed) {
			if !slices.Contains(beneath[anc], c.pub.Key.Namespace) {
				beneath[anc] = append(beneath[anc], c.pub.Key.Namespace)
			}
		}
		res.Granted[c.pub.Source] = append(res.Granted[c.pub.Source], c.name.Name)
		stored := StoredName(c.name.Placed)
		if _, ok := granted[stored]; !ok {
			order = append(order, stored)
		}
		granted[stored] = append(granted[stored], c)
	}
	sc.order = order

	names := sc.names
	for _, stored := range order {
		names[stored] = struct{}{}
		// The name's SRV records are kept with its records, under its
		// claim: a cluster that shares the name decides on them as on it.
		recs := records(stored, granted[stored], x.maxAddrs, res.Problems, defaultView)
		res.Records[stored] = appendSRV(recs, stored, granted[stored], nil, defaultPorts)
		for _, v := range x.views {
			res.Views[v][stored] = x.viewRecords(v, stored, granted[stored], res.Records[stored])
		}
		if !slices.ContainsFunc(granted[stored], func(c claim) bool { return !c.pub.Shared }) {
			res.Shared[stored] = true
			res.Clusters[stored] = clusterOf(granted[stored], res.Problems)
		}
	}
	if len(names) == 0 {
		delete(x.published, group)
	} else {
		published := make([]string, 0, len(names))
		for name := range names {
			published = append(published, name)
		}
		x.published[group] = published
	}
	x.updateReverse(&res)
	return res
}

// conflict returns the namespace and name of a granted claim of another namespace
// related to c, or empty strings.
func conflict(c claim, holder map[string]string, beneath map[string][]string) (string, string) {
	ns := c.pub.Key.Namespace
	if h, ok := holder[c.name.Name]; ok && h != ns {
		return h, c.name.Name
	}
	for _, anc := range ancestors(c.name.Placed) {
		if h, ok := holder[anc]; ok && h != ns {
			return h, anc
		}
	}
	for _, h := range beneath[c.name.Name] {
		if h != ns {
			return h, "a name beneath it"
		}
	}
	return "", ""
}

// ancestors returns the names strictly between n and its zone. The apex is not
// among them: its records are stored apart and answer only the apex itself.
func ancestors(n dnsname.Placed) []string {
	if n.Apex() {
		return nil
	}
	var out []string
	for name := n.Name; ; {
		i := strings.IndexByte(name, '.')
		name = name[i+1:]
		if name == n.Zone {
			return out
		}
		out = append(out, name)
	}
}

// records merges the granted claims of one name into its records. Addresses win
// over CNAME targets, and so do texts: a CNAME is alone at its name, and a
// name has at most one, never to itself or a name beneath it. All records of
// a name get the smallest TTL among its claims, since an RRset has one TTL.
// A name's addresses and texts together are at most maxAddrs, the lowest
// addresses first: a name's keys change in one transaction.
func records(stored string, claims []claim, maxAddrs int, problems map[string][]source.Problem, addresses func(claim) []netip.Addr) []skydns.Record {
	ttl := claims[0].answer().TTL
	// The addresses of one claim are its publication's, sorted and unique
	// already; those of several are merged, each from its first claim.
	addrs := addresses(claims[0])
	var sources map[netip.Addr]string
	if len(claims) > 1 {
		sources = make(map[netip.Addr]string)
		addrs = nil
		for _, c := range claims {
			ttl = min(ttl, c.answer().TTL)
			for _, a := range addresses(c) {
				if _, ok := sources[a]; !ok {
					sources[a] = c.pub.Source
					addrs = append(addrs, a)
				}
			}
		}
		slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	}
	texts := textsOf(stored, claims, ttl)
	if len(addrs) > 0 || len(texts) > 0 {
		if n := len(addrs) + len(texts); n > maxAddrs {
			msg := "hostname %s has %d addresses from its objects, more than the %d allowed: only the lowest %d are published"
			if len(texts) > 0 {
				msg = "hostname %s has %d addresses and TXT records from its objects, more than the %d allowed: only the first %d are published, addresses first"
			}
			for _, c := range claims {
				addProblem(problems, c.pub.Source, source.Problem{
					Reason:  source.ReasonTooManyAddresses,
					Message: fmt.Sprintf(msg, c.name.Name, n, maxAddrs, maxAddrs),
				})
			}
			addrs = addrs[:min(len(addrs), maxAddrs)]
			texts = texts[:maxAddrs-len(addrs)]
		}
		// Room for the SRV records too (see appendSRV).
		ports := 0
		for _, c := range claims {
			ports += len(c.pub.Ports)
		}
		out := make([]skydns.Record, len(addrs), len(addrs)+len(texts)+ports)
		for i, a := range addrs {
			src := claims[0].pub.Source
			if sources != nil {
				src = sources[a]
			}
			out[i] = skydns.Record{Name: stored, Host: a.String(), TTL: ttl, Source: src}
		}
		out = append(out, texts...)
		has := "addresses"
		if len(addrs) == 0 {
			has = "TXT records"
		}
		for _, c := range claims {
			if targets := c.answer().Targets; len(targets) > 0 {
				addProblem(problems, c.pub.Source, source.Problem{
					Reason:  source.ReasonCNAMEIgnored,
					Message: fmt.Sprintf("hostname %s has %s, so the CNAME to %s is not published", c.name.Name, has, targets[0]),
				})
			}
		}
		return out
	}
	var out []skydns.Record
	for _, c := range claims {
		for _, t := range c.answer().Targets {
			if dnsname.IsWithin(t, c.name.Name) {
				// CoreDNS skips a CNAME to the name itself or beneath it
				// as a loop: the name would answer nothing.
				addProblem(problems, c.pub.Source, source.Problem{
					Reason:  source.ReasonCNAMELoop,
					Message: fmt.Sprintf("hostname %s is not published as a CNAME to %s: the target is the name itself or lies beneath it, a loop", c.name.Name, t),
				})
				continue
			}
			if out == nil {
				out = []skydns.Record{{Name: stored, Host: t, TTL: ttl, Source: c.pub.Source}}
				continue
			}
			if t != out[0].Host {
				addProblem(problems, c.pub.Source, source.Problem{
					Reason:  source.ReasonCNAMEIgnored,
					Message: fmt.Sprintf("hostname %s already has a CNAME to %s, so the CNAME to %s is not published", c.name.Name, out[0].Host, t),
				})
			}
		}
	}
	return out
}

// textsOf returns the TXT records of a stored name from the texts its
// claims answer, sorted by text, each from its first claim.
func textsOf(stored string, claims []claim, ttl uint32) []skydns.Record {
	var out []skydns.Record
	var seen map[string]bool // with several claims; most names have no texts
	for _, c := range claims {
		for _, t := range c.answer().Texts {
			if len(claims) > 1 {
				if seen == nil {
					seen = make(map[string]bool)
				}
				if seen[t] {
					continue
				}
				seen[t] = true
			}
			out = append(out, skydns.Record{Name: stored, Text: t, TTL: ttl, Source: c.pub.Source})
		}
	}
	if seen != nil {
		// The texts of one claim are sorted and unique already.
		slices.SortFunc(out, func(a, b skydns.Record) int { return strings.Compare(a.Text, b.Text) })
	}
	return out
}

// defaultPorts returns the SRV ports of a publication in the default view.
func defaultPorts(p *source.Publication) []source.Port { return p.Ports }

// defaultView returns the addresses of a claim in the default view.
func defaultView(c claim) []netip.Addr { return c.answer().Addresses }

// answer returns what the claimed name answers in the default view.
func (c claim) answer() source.Answer { return c.pub.AnswerOf(c.name.Name) }

// viewRecords returns the records of a stored name in view v, given the
// granted claims and its records in the default view: those records
// themselves when no claim has addresses of its own in v.
func (x *Index) viewRecords(v, stored string, claims []claim, def []skydns.Record) []skydns.Record {
	if !slices.ContainsFunc(claims, func(c claim) bool { _, ok := c.pub.ViewOf(v); return ok }) {
		return def
	}
	recs := records(stored, claims, x.maxAddrs, nil, func(c claim) []netip.Addr {
		if _, ok := c.pub.ViewOf(v); ok {
			return c.pub.ViewAddresses(v)
		}
		return c.answer().Addresses
	})
	return appendSRV(recs, stored, claims, def, func(p *source.Publication) []source.Port { return p.ViewPorts(v) })
}

// appendSRV appends to recs, the records of a name's granted claims, their
// SRV records: for each named port of each claim, _<port>._<protocol>.<name>
// with the name itself as the target, one per distinct port. They are stored
// beneath the name, where CoreDNS reads them for the name's own A and AAAA
// queries too, and skips them there: a record whose host is the queried name
// or lies beneath it is a loop to CoreDNS, never an answer. A name without
// addresses (a CNAME or nothing) gets none, since an SRV target must have
// addresses (RFC 2782), and neither does the apex, stored apart from the
// names beneath it. A view's SRV records take their names from the default
// view's records (def) where those have them, so that every view holds the
// same strings rather than a copy each. ports gives the SRV ports of each
// claim's publication in the view.
func appendSRV(recs []skydns.Record, stored string, claims []claim, def []skydns.Record, ports func(*source.Publication) []source.Port) []skydns.Record {
	if len(recs) == 0 || claims[0].name.Apex() {
		return recs
	}
	if t := recs[0].Type(); t != skydns.A && t != skydns.AAAA {
		return recs
	}
	addrs := len(recs)
	for _, c := range claims {
		for _, p := range ports(c.pub) {
			name := p.Label() + "." + stored
			if len(name) > dnsname.MaxNameLength {
				continue
			}
			if i := slices.IndexFunc(def, func(o skydns.Record) bool { return o.Name == name }); i >= 0 {
				name = def[i].Name
			}
			r := skydns.Record{Name: name, Host: stored, Port: p.Number, TTL: recs[0].TTL, Source: c.pub.Source}
			if !slices.ContainsFunc(recs[addrs:], func(o skydns.Record) bool { return o.Name == r.Name && o.Port == r.Port }) {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

// addProblem adds p to the problems of src, unless it is there already or
// problems is nil (a view's records, whose problems are the default view's).
func addProblem(problems map[string][]source.Problem, src string, p source.Problem) {
	if problems != nil && !slices.Contains(problems[src], p) {
		problems[src] = append(problems[src], p)
	}
}

// Publication returns the stored publication of src, or nil.
func (x *Index) Publication(src string) *source.Publication { return x.pubs[src] }

// GroupsOf returns the groups the names of src fall in.
func (x *Index) GroupsOf(src string) []string { return groupsOf(x.pubs[src]) }

// Keys returns the objects of every stored publication.
func (x *Index) Keys() []skydns.ObjectKey {
	out := make([]skydns.ObjectKey, 0, len(x.pubs))
	for _, p := range x.pubs {
		out = append(out, p.Key)
	}
	return out
}
