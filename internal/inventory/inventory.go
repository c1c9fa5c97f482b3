// Package inventory lists what the clusters sharing an etcd publish: every
// record under the records prefix by name and owner, with the owners' claims
// and the time left on their leases. It backs the read-only "skylb records"
// command, a readable "etcdctl get --prefix".
package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/skydns"
)

// Record is one key under the records prefix.
type Record struct {
	View  string // the view whose tree holds it; empty for the default one
	Name  string // stored name
	Label string // last key segment
	Value skydns.Value
	Valid bool // the value decodes
	Lease int64
}

// Claim is one cluster's claim on a name.
type Claim struct {
	Name    string
	Owner   string
	Shared  bool
	Created int64
	Lease   int64
	// Share is the owner's part in answering a shared name: its policy,
	// priority, health verdict and whether it serves; nil when not shared.
	Share *arbitrate.Member
}

// Inventory is what an etcd holds under the prefixes skylb uses.
type Inventory struct {
	Records []Record
	Claims  []Claim
	// LeaseTTL is the time left on each lease found, 0 or less once expired.
	LeaseTTL map[int64]time.Duration
	// ClaimPrefix is where the claims were read from, and ClaimsDenied set
	// when the etcd user may not read them (CoreDNS's read-only user).
	ClaimPrefix  string
	ClaimsDenied bool
	// Views are the views read besides the default one.
	Views []string
}

// Read reads the records under prefix and under the prefix of each view
// (skydns.ViewPrefix), the claims under claimPrefix (none when empty), and
// the time left on their leases. Claims the etcd user may not read are told
// in the inventory, not as an error: the records are still worth reading.
// (etcd tells any user the time left on a lease when the lease's keys are
// not asked for.)
func Read(ctx context.Context, c *clientv3.Client, prefix, claimPrefix string, views ...string) (*Inventory, error) {
	inv := &Inventory{LeaseTTL: make(map[int64]time.Duration), ClaimPrefix: claimPrefix, Views: views}
	var resp *clientv3.GetResponse
	for _, view := range append([]string{""}, views...) {
		p := prefix
		if view != "" {
			p = skydns.ViewPrefix(prefix, view)
		}
		dir := strings.TrimSuffix(p, "/") + "/"
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if resp != nil {
			// Every tree as of the same revision.
			opts = append(opts, clientv3.WithRev(resp.Header.Revision))
		}
		r, err := c.Get(ctx, dir, opts...)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", dir, err)
		}
		if resp == nil {
			resp = r
		}
		for _, kv := range r.Kvs {
			name, label, ok := skydns.SplitKey(p, string(kv.Key))
			if !ok {
				continue
			}
			v, err := skydns.Decode(kv.Value)
			inv.Records = append(inv.Records, Record{View: view, Name: name, Label: label, Value: v, Valid: err == nil, Lease: kv.Lease})
			inv.LeaseTTL[kv.Lease] = 0
		}
	}
	if claimPrefix != "" {
		cdir := strings.TrimSuffix(claimPrefix, "/") + "/"
		resp, err := c.Get(ctx, cdir, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision))
		switch {
		case errors.Is(err, rpctypes.ErrPermissionDenied):
			inv.ClaimsDenied = true
			resp = &clientv3.GetResponse{}
		case err != nil:
			return nil, fmt.Errorf("list %s: %w", cdir, err)
		}
		for _, kv := range resp.Kvs {
			rest := strings.TrimPrefix(string(kv.Key), cdir)
			i := strings.LastIndexByte(rest, '/')
			if i <= 0 {
				continue
			}
			owner := rest[i+1:]
			shared, share := arbitrate.DecodeClaim(owner, kv.Value)
			inv.Claims = append(inv.Claims, Claim{Name: rest[:i], Owner: owner, Shared: shared, Share: share, Created: kv.CreateRevision, Lease: kv.Lease})
			inv.LeaseTTL[kv.Lease] = 0
		}
	}
	delete(inv.LeaseTTL, 0)
	for id := range inv.LeaseTTL {
		r, err := c.TimeToLive(ctx, clientv3.LeaseID(id))
		if err != nil {
			return nil, fmt.Errorf("lease %x: %w", id, err)
		}
		inv.LeaseTTL[id] = time.Duration(r.TTL) * time.Second
	}
	return inv, nil
}

// Entry is one line of the inventory: a record, or a claim on a name where its
// owner has no record. Its JSON field names are stable ("skylb records -o
// json").
type Entry struct {
	// Name is the name a client queries: a zone's apex records are under the zone.
	Name string `json:"name"`
	// View is the view the record is answered in; empty for the default
	// one, and for a claim, which holds the name in every view.
	View string `json:"view,omitempty"`
	// Type is the type CoreDNS serves the record as: A, AAAA, CNAME, SRV, PTR,
	// TXT, or none for the apex guard, which answers with no data; "-" for a
	// claim without a record, "?" for a value that does not decode.
	Type string `json:"type"`
	Host string `json:"host"`
	Port int    `json:"port"`
	Text string `json:"text,omitempty"` // a TXT record's
	TTL  uint32 `json:"ttl"`
	// Owner is the owner id of the record or claim, empty for a record that
	// is not skylb's; Foreign is set when it is not the reader's.
	Owner   string `json:"owner"`
	Foreign bool   `json:"foreign"`
	// Claim is the owner's claim on the name: holds, shares, "waits for
	// <owners>" ("<owners> (nested)" for a name above or beneath), "-" for
	// none, "?" when the claims could not be read.
	Claim string `json:"claim"`
	// ExpiresIn is the time left in seconds on the etcd lease of the
	// record, or of the claim that holds it, 0 once expired, and nil
	// without a lease.
	ExpiresIn *int64 `json:"expiresInSeconds"`
}

// Shared is a name clusters share: the policy they answer it by and each
// cluster's part. Its JSON field names are stable.
type Shared struct {
	Name string `json:"name"`
	// Policy is the policy in force; Disagree is set when the clusters name
	// different ones, and balanced is in force.
	Policy   arbitrate.Policy `json:"policy"`
	Disagree bool             `json:"disagree"`
	// FailOpen is set when no cluster has a healthy address, and every one
	// answers.
	FailOpen bool            `json:"failOpen"`
	Clusters []SharedCluster `json:"clusters"`
}

// SharedCluster is one cluster's part in answering a shared name.
type SharedCluster struct {
	Owner    string `json:"owner"`
	Foreign  bool   `json:"foreign"`
	Priority int    `json:"priority"`
	// Healthy is its verdict: at least one of its addresses passes its
	// health checks; HealthySince is when the verdict last changed (RFC 3339,
	// empty when not known).
	Healthy      bool   `json:"healthy"`
	HealthySince string `json:"healthySince"`
	// Answering says that its records are in etcd: CoreDNS answers with
	// them.
	Answering bool `json:"answering"`
}

// Report is the inventory as the reader sees it, by name.
type Report struct {
	Records []Entry `json:"records"`
	// Shared lists the names clusters share, with who answers them; the SRV
	// names beneath a shared name, which follow it, are left out.
	Shared []Shared `json:"shared"`
	// ClaimPrefix is where the claims were read from; ClaimsDenied is set
	// when the etcd user may not read them.
	ClaimPrefix  string `json:"claimPrefix"`
	ClaimsDenied bool   `json:"claimsDenied"`
	// Views are the views read besides the default one.
	Views []string `json:"views,omitempty"`
}

// Report returns the inventory's entries, one per record and per claim
// without records, sorted by name, owner and host. self is the reader's owner
// id: other owners are foreign.
func (inv *Inventory) Report(self string) Report {
	claims := make(map[string][]arbitrate.Claim)
	for _, c := range inv.Claims {
		claims[c.Name] = append(claims[c.Name], arbitrate.Claim{Owner: c.Owner, Shared: c.Shared, Created: c.Created})
	}
	below := make(map[string][]string) // name -> the claimed names beneath it
	for name := range claims {
		for a := range arbitrate.Ancestors(name) {
			below[a] = append(below[a], name)
		}
	}
	claimOf := func(name, owner string) string {
		cs := claims[name]
		if inv.ClaimsDenied {
			return "?"
		}
		i := slices.IndexFunc(cs, func(c arbitrate.Claim) bool { return c.Owner == owner })
		if i < 0 {
			return "-"
		}
		d := arbitrate.Decide(owner, cs[i].Shared, cs, nestedClaims(claims, below, name, owner))
		switch {
		case !d.Granted:
			var by []string
			if len(d.Holders) > 0 {
				by = append(by, strings.Join(d.Holders, ","))
			}
			if len(d.Nested) > 0 {
				by = append(by, strings.Join(d.Nested, ",")+" (nested)")
			}
			return "waits for " + strings.Join(by, "; ")
		case cs[i].Shared:
			return "shares"
		}
		return "holds"
	}
	expiresIn := func(lease int64) *int64 {
		if lease == 0 {
			return nil
		}
		secs := max(int64(inv.LeaseTTL[lease]/time.Second), 0)
		return &secs
	}

	// The records a claim holds expire with it (see publish/sweep.go).
	claimLease := make(map[[2]string]int64, len(inv.Claims))
	for _, c := range inv.Claims {
		claimLease[[2]string{c.Name, c.Owner}] = c.Lease
	}
	var lines []Entry
	seen := make(map[[2]string]bool)
	for _, r := range inv.Records {
		l := Entry{Name: skydns.Queried(r.Name), View: r.View, Type: "?", Claim: "-", ExpiresIn: expiresIn(r.Lease)}
		if r.Valid {
			rec := r.Value.Record(r.Name)
			l.Type, l.Host, l.Port, l.Text, l.TTL = string(rec.Type()), rec.Host, rec.Port, rec.Text, rec.TTL
			// An SRV record is held by the claim of the name it points to;
			// earlier versions claimed each SRV name on its own.
			claimed := r.Name
			if !slices.ContainsFunc(claims[r.Name], func(c arbitrate.Claim) bool { return c.Owner == r.Value.Owner }) {
				claimed = skydns.HeldBy(r.Name)
			}
			l.Owner, l.Foreign, l.Claim = r.Value.Owner, r.Value.Owner != "" && r.Value.Owner != self, claimOf(claimed, r.Value.Owner)
			if r.Lease == 0 {
				l.ExpiresIn = expiresIn(claimLease[[2]string{claimed, r.Value.Owner}])
			}
			seen[[2]string{claimed, r.Value.Owner}] = true
		}
		lines = append(lines, l)
	}
	for _, c := range inv.Claims {
		if !seen[[2]string{c.Name, c.Owner}] {
			lines = append(lines, Entry{Name: c.Name, Type: "-", Owner: c.Owner, Foreign: c.Owner != self, Claim: claimOf(c.Name, c.Owner), ExpiresIn: expiresIn(c.Lease)})
		}
	}
	slices.SortStableFunc(lines, func(a, b Entry) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.View, b.View), strings.Compare(a.Owner, b.Owner), strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port), strings.Compare(a.Text, b.Text))
	})
	return Report{Records: lines, Shared: inv.shared(self), ClaimPrefix: inv.ClaimPrefix, ClaimsDenied: inv.ClaimsDenied, Views: inv.Views}
}

// shared returns the names shared by at least one cluster's claim, sorted,
// but for SRV names (claimed on their own by earlier versions), which follow
// the name above them (skydns.HeldBy).
func (inv *Inventory) shared(self string) []Shared {
	members := make(map[string][]arbitrate.Member)
	for _, c := range inv.Claims {
		if c.Share != nil && skydns.HeldBy(c.Name) == c.Name {
			members[c.Name] = append(members[c.Name], *c.Share)
		}
	}
	var out []Shared
	for name, ms := range members {
		s := arbitrate.Share("", ms, time.Time{}, 0)
		sh := Shared{Name: skydns.Queried(name), Policy: s.Policy, Disagree: s.Disagree, FailOpen: s.FailOpen}
		for _, m := range ms {
			c := SharedCluster{Owner: m.Owner, Foreign: m.Owner != self, Priority: m.Priority, Healthy: m.Healthy, Answering: m.Serving}
			if !m.Since.IsZero() {
				c.HealthySince = m.Since.UTC().Format(time.RFC3339)
			}
			sh.Clusters = append(sh.Clusters, c)
		}
		slices.SortFunc(sh.Clusters, func(a, b SharedCluster) int {
			return cmp.Or(cmp.Compare(a.Priority, b.Priority), strings.Compare(a.Owner, b.Owner))
		})
		out = append(out, sh)
	}
	slices.SortFunc(out, func(a, b Shared) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Write prints the report as a table, one line per entry. Claims that could
// not be read show as "?", with a note after the table. With views, the
// column VIEW tells each record's ("default" for the default view's, "-"
// for a claim, which holds the name in every view).
func (r Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	viewCol := func(v string) string { return "" }
	if len(r.Views) > 0 {
		viewCol = func(v string) string { return cmp.Or(v, "default") + "\t" }
		fmt.Fprint(tw, "NAME\tVIEW\t")
	} else {
		fmt.Fprint(tw, "NAME\t")
	}
	fmt.Fprintln(tw, "TYPE\tHOST\tTTL\tOWNER\tCLAIM\tEXPIRES")
	for _, e := range r.Records {
		host, ttl, owner, expiry := e.Host, fmt.Sprint(e.TTL), e.Owner, "never"
		switch e.Type {
		case "-":
			host, ttl = "-", "-"
		case "?":
			host, ttl = "(invalid value)", "-"
		}
		if e.Port != 0 {
			host = fmt.Sprintf("%s:%d", e.Host, e.Port)
		}
		if e.Type == string(skydns.TXT) {
			host = strconv.Quote(e.Text)
		}
		switch {
		case owner == "":
			owner = "(not skylb's)"
		case e.Foreign:
			owner += " (foreign)"
		}
		switch {
		case e.ExpiresIn == nil:
		case *e.ExpiresIn > 0:
			expiry = "in " + (time.Duration(*e.ExpiresIn) * time.Second).String()
		default:
			expiry = "expired"
		}
		view := viewCol(e.View)
		if e.Type == "-" && view != "" {
			view = "-\t"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, view, e.Type, host, ttl, owner, e.Claim, expiry)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeShared(w); err != nil {
		return err
	}
	if r.ClaimsDenied {
		fmt.Fprintf(w, "\nclaims under %s/ could not be read (permission denied): CLAIM is unknown (?); skylb's own etcd user can read them\n", strings.TrimSuffix(r.ClaimPrefix, "/"))
	}
	return nil
}

// writeShared prints the shared names as a second table, one line per
// cluster, the preferred first; nothing when there are none.
func (r Report) writeShared(w io.Writer) error {
	if len(r.Shared) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARED NAME\tPOLICY\tOWNER\tPRIORITY\tHEALTH\tANSWERS")
	for _, s := range r.Shared {
		policy := string(s.Policy)
		switch {
		case s.Disagree:
			policy += " (clusters disagree)"
		case s.FailOpen:
			policy += " (fail open)"
		}
		for _, c := range s.Clusters {
			owner, health, answers := c.Owner, "unhealthy", "no"
			if c.Foreign {
				owner += " (foreign)"
			}
			if c.Healthy {
				health = "healthy"
			}
			if c.HealthySince != "" {
				health += " since " + c.HealthySince
			}
			if c.Answering {
				answers = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, policy, owner, c.Priority, health, answers)
		}
	}
	return tw.Flush()
}

// nestedClaims returns the claims of owners other than owner on the names
// above and beneath name, as the owner's skylb decides on them.
func nestedClaims(claims map[string][]arbitrate.Claim, below map[string][]string, name, owner string) []arbitrate.NestedClaim {
	sharedBy := func(name, owner string) bool {
		i := slices.IndexFunc(claims[name], func(c arbitrate.Claim) bool { return c.Owner == owner })
		return i >= 0 && claims[name][i].Shared
	}
	var out []arbitrate.NestedClaim
	for a := range arbitrate.Ancestors(name) {
		for _, c := range claims[a] {
			if c.Owner != owner {
				out = append(out, arbitrate.NestedClaim{Claim: c, Joint: c.Shared && sharedBy(a, owner)})
			}
		}
	}
	for _, d := range below[name] {
		for _, c := range claims[d] {
			if c.Owner != owner {
				out = append(out, arbitrate.NestedClaim{Claim: c, Joint: sharedBy(name, owner) && sharedBy(name, c.Owner)})
			}
		}
	}
	return out
}
