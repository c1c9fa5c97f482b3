package rank

import (
	"cmp"
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skylb/skylb/internal/arbitrate"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

var (
	testZones = dnsname.Zones{"example.org", "dev.example.org", "example.com"}
	t0        = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
)

type pubOpt func(*source.Publication)

// pub returns the publication of src ("kind/namespace/name") created the given
// number of minutes after t0, with a TTL of 300 unless an option says otherwise.
func pub(src string, created int, opts ...pubOpt) *source.Publication {
	parts := strings.Split(src, "/")
	p := &source.Publication{
		Key:     skydns.ObjectKey{Kind: parts[0], Namespace: parts[1], Name: parts[2]},
		Source:  src,
		Created: t0.Add(time.Duration(created) * time.Minute),
		TTL:     300,
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func placeAll(names []string, generated bool) []source.Name {
	var out []source.Name
	for _, n := range names {
		placed, err := testZones.Place(n)
		if err != nil {
			panic(fmt.Sprintf("test name %q: %v", n, err))
		}
		out = append(out, source.Name{Placed: placed, Generated: generated})
	}
	return out
}

// names adds annotation (not generated) names.
func names(ns ...string) pubOpt {
	return func(p *source.Publication) { p.Names = append(p.Names, placeAll(ns, false)...) }
}

// generated adds generated names.
func generated(ns ...string) pubOpt {
	return func(p *source.Publication) { p.Names = append(p.Names, placeAll(ns, true)...) }
}

func addrs(as ...string) pubOpt {
	return func(p *source.Publication) {
		for _, a := range as {
			p.Addresses = append(p.Addresses, netip.MustParseAddr(a))
		}
		slices.SortFunc(p.Addresses, netip.Addr.Compare)
	}
}

func targets(ts ...string) pubOpt {
	return func(p *source.Publication) {
		p.Targets = append(p.Targets, ts...)
		slices.Sort(p.Targets)
	}
}

func ports(ps ...source.Port) pubOpt {
	return func(p *source.Publication) { p.Ports = append(p.Ports, ps...) }
}

func srv(name, host string, port int, ttl uint32, src string) skydns.Record {
	return skydns.Record{Name: name, Host: host, Port: port, TTL: ttl, Source: src}
}

// answer gives a name of the publication its own answer: addresses, or a
// CNAME target when the first is not an address.
func answer(name string, ttl uint32, hosts ...string) pubOpt {
	return func(p *source.Publication) {
		if p.Answers == nil {
			p.Answers = map[string]source.Answer{}
		}
		a := source.Answer{TTL: ttl}
		for _, h := range hosts {
			if addr, err := netip.ParseAddr(h); err == nil {
				a.Addresses = append(a.Addresses, addr)
			} else {
				a.Targets = append(a.Targets, h)
			}
		}
		p.Answers[name] = a
	}
}

// texts gives a name of the publication the texts of TXT records, beside
// the addresses or target answer gave it, or with ttl.
func texts(name string, ttl uint32, ts ...string) pubOpt {
	return func(p *source.Publication) {
		if p.Answers == nil {
			p.Answers = map[string]source.Answer{}
		}
		a, ok := p.Answers[name]
		if !ok {
			a.TTL = ttl
		}
		a.Texts = append(a.Texts, ts...)
		slices.Sort(a.Texts)
		p.Answers[name] = a
	}
}

func txt(name, text string, ttl uint32, src string) skydns.Record {
	return skydns.Record{Name: name, Text: text, TTL: ttl, Source: src}
}

func ttl(s uint32) pubOpt {
	return func(p *source.Publication) { p.TTL = s }
}

func rec(name, host string, ttl uint32, src string) skydns.Record {
	return skydns.Record{Name: name, Host: host, TTL: ttl, Source: src}
}

func conflictProblem(mentions string) source.Problem {
	return source.Problem{Reason: source.ReasonHostnameConflict, Message: mentions}
}

func loopProblem(mentions string) source.Problem {
	return source.Problem{Reason: source.ReasonCNAMELoop, Message: mentions}
}

func cnameProblem(mentions string) source.Problem {
	return source.Problem{Reason: source.ReasonCNAMEIgnored, Message: mentions}
}

// resolveAll resolves every group of x and merges the results.
func resolveAll(x *Index) Result {
	all := Result{Records: make(map[string][]skydns.Record), Problems: make(map[string][]source.Problem)}
	for _, g := range x.Groups() {
		res := x.Resolve(g)
		for name, rs := range res.Records {
			all.Records[name] = rs
		}
		for src, ps := range res.Problems {
			all.Problems[src] = append(all.Problems[src], ps...)
		}
	}
	return all
}

// resultOpts compare results; problem messages are checked by checkMessages.
var resultOpts = gocmp.Options{
	cmpopts.IgnoreFields(source.Problem{}, "Message"),
	cmpopts.IgnoreFields(Result{}, "Granted"), // checked by TestGranted
	cmpopts.EquateEmpty(),
}

// checkMessages checks that every problem message contains every
// space-separated word of the wanted message.
func checkMessages(t *testing.T, want, got map[string][]source.Problem) {
	t.Helper()
	for src, ps := range want {
		if len(got[src]) != len(ps) {
			continue // the diff reports it
		}
		for i, p := range ps {
			msg := got[src][i].Message
			for _, word := range strings.Fields(p.Message) {
				if !strings.Contains(msg, word) {
					t.Errorf("Problems[%q][%d].Message = %q, want it to mention %q", src, i, msg, word)
				}
			}
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name         string
		pubs         []*source.Publication
		wantRecords  map[string][]skydns.Record
		wantProblems map[string][]source.Problem
	}{
		{
			name: "single service",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), names("shop.example.com"), addrs("192.0.2.10", "2001:db8::1")),
			},
			wantRecords: map[string][]skydns.Record{
				"web.shop.example.org": {rec("web.shop.example.org", "192.0.2.10", 300, "service/shop/web"), rec("web.shop.example.org", "2001:db8::1", 300, "service/shop/web")},
				"shop.example.com":     {rec("shop.example.com", "192.0.2.10", 300, "service/shop/web"), rec("shop.example.com", "2001:db8::1", 300, "service/shop/web")},
			},
		},
		{
			name: "named ports give SRV records beneath every name, targeting the name, kept with its records",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), names("shop.example.com"), addrs("192.0.2.10"),
					ports(source.Port{Name: "http", Protocol: "tcp", Number: 80}, source.Port{Name: "sip", Protocol: "udp", Number: 5060})),
			},
			wantRecords: map[string][]skydns.Record{
				"web.shop.example.org": {
					rec("web.shop.example.org", "192.0.2.10", 300, "service/shop/web"),
					srv("_http._tcp.web.shop.example.org", "web.shop.example.org", 80, 300, "service/shop/web"),
					srv("_sip._udp.web.shop.example.org", "web.shop.example.org", 5060, 300, "service/shop/web"),
				},
				"shop.example.com": {
					rec("shop.example.com", "192.0.2.10", 300, "service/shop/web"),
					srv("_http._tcp.shop.example.com", "shop.example.com", 80, 300, "service/shop/web"),
					srv("_sip._udp.shop.example.com", "shop.example.com", 5060, 300, "service/shop/web"),
				},
			},
		},
		{
			name: "shared name: one SRV record per distinct port, with the name's TTL",
			pubs: []*source.Publication{
				pub("service/shop/a", 0, names("shop.example.com"), addrs("192.0.2.10"), ports(source.Port{Name: "http", Protocol: "tcp", Number: 80})),
				pub("service/shop/b", 1, names("shop.example.com"), addrs("192.0.2.11"), ttl(60),
					ports(source.Port{Name: "http", Protocol: "tcp", Number: 80}, source.Port{Name: "http", Protocol: "tcp", Number: 8080})),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {
					rec("shop.example.com", "192.0.2.10", 60, "service/shop/a"), rec("shop.example.com", "192.0.2.11", 60, "service/shop/b"),
					srv("_http._tcp.shop.example.com", "shop.example.com", 80, 60, "service/shop/a"),
					srv("_http._tcp.shop.example.com", "shop.example.com", 8080, 60, "service/shop/b"),
				},
			},
		},
		{
			name: "no SRV records without addresses, for a CNAME or at the apex",
			pubs: []*source.Publication{
				pub("service/shop/none", 0, generated("none.shop.example.org"), ports(source.Port{Name: "http", Protocol: "tcp", Number: 80})),
				pub("service/shop/alias", 0, generated("alias.shop.example.org"), targets("lb.example.net"), ports(source.Port{Name: "http", Protocol: "tcp", Number: 80})),
				pub("service/shop/apex", 0, names("example.com"), addrs("192.0.2.1"), ports(source.Port{Name: "http", Protocol: "tcp", Number: 80})),
			},
			wantRecords: map[string][]skydns.Record{
				"none.shop.example.org":  nil,
				"alias.shop.example.org": {rec("alias.shop.example.org", "lb.example.net", 300, "service/shop/alias")},
				"apex.dns.example.com":   {rec("apex.dns.example.com", "192.0.2.1", 300, "service/shop/apex")},
			},
		},
		{
			name: "publication without addresses publishes an empty name",
			pubs: []*source.Publication{pub("service/shop/web", 0, generated("web.shop.example.org"))},
			wantRecords: map[string][]skydns.Record{
				"web.shop.example.org": nil,
			},
		},
		{
			name: "same namespace shares a name: addresses merged, smallest TTL, first claimant's source",
			pubs: []*source.Publication{
				pub("service/shop/b", 1, names("shop.example.com"), addrs("192.0.2.12", "192.0.2.11"), ttl(60)),
				pub("service/shop/a", 0, names("shop.example.com"), addrs("192.0.2.11", "192.0.2.10")),
				pub("ingress/shop/c", 2, names("shop.example.com"), addrs("192.0.2.9"), ttl(3600)),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {
					rec("shop.example.com", "192.0.2.9", 60, "ingress/shop/c"),
					rec("shop.example.com", "192.0.2.10", 60, "service/shop/a"),
					rec("shop.example.com", "192.0.2.11", 60, "service/shop/a"),
					rec("shop.example.com", "192.0.2.12", 60, "service/shop/b"),
				},
			},
		},
		{
			name: "same namespace, nested names both granted",
			pubs: []*source.Publication{
				pub("service/shop/a", 1, names("api.shop.example.com"), addrs("192.0.2.1")),
				pub("service/shop/b", 0, names("shop.example.com"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"api.shop.example.com": {rec("api.shop.example.com", "192.0.2.1", 300, "service/shop/a")},
				"shop.example.com":     {rec("shop.example.com", "192.0.2.2", 300, "service/shop/b")},
			},
		},
		{
			name: "same name in two namespaces: the older wins",
			pubs: []*source.Publication{
				pub("service/a/web", 5, names("shop.example.com"), addrs("192.0.2.1")),
				pub("service/b/web", 1, names("shop.example.com"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {rec("shop.example.com", "192.0.2.2", 300, "service/b/web")},
			},
			wantProblems: map[string][]source.Problem{
				"service/a/web": {conflictProblem("shop.example.com namespace b")},
			},
		},
		{
			name: "same age: namespace decides",
			pubs: []*source.Publication{
				pub("service/b/web", 0, names("shop.example.com"), addrs("192.0.2.2")),
				pub("service/a/web", 0, names("shop.example.com"), addrs("192.0.2.1")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {rec("shop.example.com", "192.0.2.1", 300, "service/a/web")},
			},
			wantProblems: map[string][]source.Problem{
				"service/b/web": {conflictProblem("shop.example.com namespace a")},
			},
		},
		{
			name: "three namespaces: only the oldest publishes",
			pubs: []*source.Publication{
				pub("service/a/web", 3, names("shop.example.com"), addrs("192.0.2.1")),
				pub("service/b/web", 2, names("shop.example.com"), addrs("192.0.2.2")),
				pub("service/c/web", 1, names("shop.example.com"), addrs("192.0.2.3")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {rec("shop.example.com", "192.0.2.3", 300, "service/c/web")},
			},
			wantProblems: map[string][]source.Problem{
				"service/a/web": {conflictProblem("shop.example.com namespace c")},
				"service/b/web": {conflictProblem("shop.example.com namespace c")},
			},
		},
		{
			name: "name beneath another namespace's name is refused",
			pubs: []*source.Publication{
				pub("service/a/web", 0, names("shop.example.com"), addrs("192.0.2.1")),
				pub("service/b/api", 1, names("api.shop.example.com", "x.y.shop.example.com", "other.example.com"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com":  {rec("shop.example.com", "192.0.2.1", 300, "service/a/web")},
				"other.example.com": {rec("other.example.com", "192.0.2.2", 300, "service/b/api")},
			},
			wantProblems: map[string][]source.Problem{
				"service/b/api": {
					conflictProblem("api.shop.example.com shop.example.com namespace a"),
					conflictProblem("x.y.shop.example.com shop.example.com namespace a"),
				},
			},
		},
		{
			name: "name above another namespace's name is refused",
			pubs: []*source.Publication{
				pub("service/a/api", 0, names("x.y.shop.example.com"), addrs("192.0.2.1")),
				pub("service/b/web", 1, names("shop.example.com", "y.shop.example.com"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"x.y.shop.example.com": {rec("x.y.shop.example.com", "192.0.2.1", 300, "service/a/api")},
			},
			wantProblems: map[string][]source.Problem{
				"service/b/web": {
					conflictProblem("shop.example.com namespace a"),
					conflictProblem("y.shop.example.com namespace a"),
				},
			},
		},
		{
			name: "siblings in two namespaces are both granted",
			pubs: []*source.Publication{
				pub("service/a/web", 0, names("a.shop.example.com"), addrs("192.0.2.1")),
				pub("service/b/web", 1, names("b.shop.example.com", "ashop.example.com"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"a.shop.example.com": {rec("a.shop.example.com", "192.0.2.1", 300, "service/a/web")},
				"b.shop.example.com": {rec("b.shop.example.com", "192.0.2.2", 300, "service/b/web")},
				"ashop.example.com":  {rec("ashop.example.com", "192.0.2.2", 300, "service/b/web")},
			},
		},
		{
			name: "refused claim does not block others",
			pubs: []*source.Publication{
				pub("service/a/web", 0, names("x.shop.example.com"), addrs("192.0.2.1")),
				// b's parent name is refused because of a; c may then hold a sibling of a's name.
				pub("service/b/web", 1, names("shop.example.com"), addrs("192.0.2.2")),
				pub("service/c/web", 2, names("y.shop.example.com"), addrs("192.0.2.3")),
			},
			wantRecords: map[string][]skydns.Record{
				"x.shop.example.com": {rec("x.shop.example.com", "192.0.2.1", 300, "service/a/web")},
				"y.shop.example.com": {rec("y.shop.example.com", "192.0.2.3", 300, "service/c/web")},
			},
			wantProblems: map[string][]source.Problem{
				"service/b/web": {conflictProblem("shop.example.com namespace a")},
			},
		},
		{
			name: "an older annotation claim beats a later generated name",
			pubs: []*source.Publication{
				pub("ingress/a/front", 0, names("web.b.example.org", "api.web.b.example.org"), addrs("192.0.2.1")),
				pub("service/b/web", 10, generated("web.b.example.org"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"web.b.example.org":     {rec("web.b.example.org", "192.0.2.1", 300, "ingress/a/front")},
				"api.web.b.example.org": {rec("api.web.b.example.org", "192.0.2.1", 300, "ingress/a/front")},
			},
			wantProblems: map[string][]source.Problem{
				"service/b/web": {conflictProblem("web.b.example.org namespace a")},
			},
		},
		{
			// An Ingress of namespace demo publishes shop.example.org; a
			// later Service api of a new namespace shop generates
			// api.shop.example.org beneath it, and is refused.
			name: "a later generated name beneath an older name is refused",
			pubs: []*source.Publication{
				pub("ingress/demo/shop", 0, names("shop.example.org"), addrs("192.0.2.1")),
				pub("service/shop/api", 10, generated("api.shop.example.org"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.org": {rec("shop.example.org", "192.0.2.1", 300, "ingress/demo/shop")},
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/api": {conflictProblem("api.shop.example.org shop.example.org namespace demo")},
			},
		},
		{
			name: "an older generated name keeps a later annotation claim above it out",
			pubs: []*source.Publication{
				pub("service/shop/api", 0, generated("api.shop.example.org"), addrs("192.0.2.2")),
				pub("ingress/demo/shop", 10, names("shop.example.org"), addrs("192.0.2.1")),
			},
			wantRecords: map[string][]skydns.Record{
				"api.shop.example.org": {rec("api.shop.example.org", "192.0.2.2", 300, "service/shop/api")},
			},
			wantProblems: map[string][]source.Problem{
				"ingress/demo/shop": {conflictProblem("shop.example.org a name beneath it namespace shop")},
			},
		},
		{
			name: "same age: namespace, then name, decide",
			pubs: []*source.Publication{
				pub("service/shop/api", 0, generated("api.shop.example.org"), addrs("192.0.2.2")),
				pub("ingress/demo/shop", 0, names("shop.example.org"), addrs("192.0.2.1")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.org": {rec("shop.example.org", "192.0.2.1", 300, "ingress/demo/shop")},
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/api": {conflictProblem("api.shop.example.org shop.example.org namespace demo")},
			},
		},
		{
			name: "generated names: the older wins",
			pubs: []*source.Publication{
				// A Service named "b" in the default namespace gets b.example.org, above
				// every generated name of namespace b.
				pub("service/default/b", 0, generated("b.default.example.org", "b.example.org"), addrs("192.0.2.1")),
				pub("service/b/web", 10, generated("web.b.example.org"), addrs("192.0.2.2")),
			},
			wantRecords: map[string][]skydns.Record{
				"b.default.example.org": {rec("b.default.example.org", "192.0.2.1", 300, "service/default/b")},
				"b.example.org":         {rec("b.example.org", "192.0.2.1", 300, "service/default/b")},
			},
			wantProblems: map[string][]source.Problem{
				"service/b/web": {conflictProblem("web.b.example.org b.example.org namespace default")},
			},
		},
		{
			name: "apex stored apart, conflicting only with apex claims",
			pubs: []*source.Publication{
				pub("ingress/a/root", 1, names("example.org"), addrs("192.0.2.1")),
				pub("ingress/b/www", 0, names("www.example.org"), addrs("192.0.2.2")),
				pub("ingress/c/root", 2, names("example.org"), addrs("192.0.2.3")),
				pub("ingress/a/root2", 3, names("example.org"), addrs("192.0.2.4"), ttl(30)),
			},
			wantRecords: map[string][]skydns.Record{
				"apex.dns.example.org": {rec("apex.dns.example.org", "192.0.2.1", 30, "ingress/a/root"), rec("apex.dns.example.org", "192.0.2.4", 30, "ingress/a/root2")},
				"www.example.org":      {rec("www.example.org", "192.0.2.2", 300, "ingress/b/www")},
			},
			wantProblems: map[string][]source.Problem{
				"ingress/c/root": {conflictProblem("example.org namespace a")},
			},
		},
		{
			name: "nested zone apex is apart from the parent zone and from its own names",
			pubs: []*source.Publication{
				pub("ingress/a/dev", 0, names("dev.example.org"), addrs("192.0.2.1")),
				pub("ingress/b/api", 1, names("api.dev.example.org"), addrs("192.0.2.2")),
				pub("ingress/c/dev", 2, names("devx.example.org"), addrs("192.0.2.3")),
			},
			wantRecords: map[string][]skydns.Record{
				"apex.dns.dev.example.org": {rec("apex.dns.dev.example.org", "192.0.2.1", 300, "ingress/a/dev")},
				"api.dev.example.org":      {rec("api.dev.example.org", "192.0.2.2", 300, "ingress/b/api")},
				"devx.example.org":         {rec("devx.example.org", "192.0.2.3", 300, "ingress/c/dev")},
			},
		},
		{
			name: "CNAME only",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), targets("lb-1.elb.example.net"), ttl(60)),
			},
			wantRecords: map[string][]skydns.Record{
				"web.shop.example.org": {rec("web.shop.example.org", "lb-1.elb.example.net", 60, "service/shop/web")},
			},
		},
		{
			name: "CNAME and addresses of one object: addresses win",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), addrs("192.0.2.1"), targets("lb.example.net")),
			},
			wantRecords: map[string][]skydns.Record{
				"web.shop.example.org": {rec("web.shop.example.org", "192.0.2.1", 300, "service/shop/web")},
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/web": {cnameProblem("web.shop.example.org lb.example.net")},
			},
		},
		{
			name: "CNAME and addresses of two objects sharing a name: addresses win",
			pubs: []*source.Publication{
				pub("service/shop/cname", 0, names("shop.example.com"), targets("lb.example.net")),
				pub("service/shop/ip", 1, names("shop.example.com"), addrs("192.0.2.1")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {rec("shop.example.com", "192.0.2.1", 300, "service/shop/ip")},
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/cname": {cnameProblem("shop.example.com lb.example.net")},
			},
		},
		{
			name: "two CNAME targets: the first claim's wins",
			pubs: []*source.Publication{
				pub("service/shop/b", 1, names("shop.example.com"), targets("a.lb.example.net")),
				pub("service/shop/a", 0, names("shop.example.com"), targets("z.lb.example.net")),
				pub("service/shop/c", 2, names("shop.example.com"), targets("z.lb.example.net"), ttl(5)),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {rec("shop.example.com", "z.lb.example.net", 5, "service/shop/a")},
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/b": {cnameProblem("shop.example.com z.lb.example.net a.lb.example.net")},
			},
		},
		{
			name: "CNAME to the name itself or beneath it: refused as a loop, the next target taken",
			pubs: []*source.Publication{
				pub("service/shop/self", 0, names("self.example.com"), targets("self.example.com")),
				pub("service/shop/below", 1, names("below.example.com"), targets("a.below.example.com", "z.example.net")),
				pub("service/shop/beside", 2, names("beside.example.com"), targets("xbeside.example.com")),
				pub("ingress/shop/apex", 3, names("example.com"), targets("www.example.com")),
			},
			wantRecords: map[string][]skydns.Record{
				"below.example.com":  {rec("below.example.com", "z.example.net", 300, "service/shop/below")},
				"beside.example.com": {rec("beside.example.com", "xbeside.example.com", 300, "service/shop/beside")},
				// Granted, with nothing to publish.
				"self.example.com":     nil,
				"apex.dns.example.com": nil,
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/self":  {loopProblem("self.example.com self.example.com loop")},
				"service/shop/below": {loopProblem("below.example.com a.below.example.com loop")},
				"ingress/shop/apex":  {loopProblem("example.com www.example.com loop")},
			},
		},
		{
			name: "each name of a DNSEndpoint answers its own addresses, target and TTL",
			pubs: []*source.Publication{
				pub("dnsendpoint/shop/records", 0, names("www.example.com", "api.example.com", "alias.example.com"),
					answer("www.example.com", 60, "192.0.2.1", "2001:db8::1"), answer("api.example.com", 300, "192.0.2.9"),
					answer("alias.example.com", 300, "lb.example.net")),
			},
			wantRecords: map[string][]skydns.Record{
				"www.example.com":   {rec("www.example.com", "192.0.2.1", 60, "dnsendpoint/shop/records"), rec("www.example.com", "2001:db8::1", 60, "dnsendpoint/shop/records")},
				"api.example.com":   {rec("api.example.com", "192.0.2.9", 300, "dnsendpoint/shop/records")},
				"alias.example.com": {rec("alias.example.com", "lb.example.net", 300, "dnsendpoint/shop/records")},
			},
		},
		{
			name: "a DNSEndpoint's name sharing a group with a Service's: each claim answers its own",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, names("shop.example.com"), addrs("192.0.2.10")),
				pub("dnsendpoint/shop/records", 1, names("shop.example.com", "other.example.com"),
					answer("shop.example.com", 30, "192.0.2.20"), answer("other.example.com", 300, "192.0.2.30")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com":  {rec("shop.example.com", "192.0.2.10", 30, "service/shop/web"), rec("shop.example.com", "192.0.2.20", 30, "dnsendpoint/shop/records")},
				"other.example.com": {rec("other.example.com", "192.0.2.30", 300, "dnsendpoint/shop/records")},
			},
		},
		{
			name: "a DNSEndpoint's texts are TXT records beside the name's addresses, or alone",
			pubs: []*source.Publication{
				pub("dnsendpoint/shop/records", 0, names("www.example.com", "verify.example.com"),
					answer("www.example.com", 60, "192.0.2.1"), texts("www.example.com", 0, "v=spf1 -all", "a=1"),
					texts("verify.example.com", 3600, "google-site-verification=abc")),
			},
			wantRecords: map[string][]skydns.Record{
				"www.example.com": {
					rec("www.example.com", "192.0.2.1", 60, "dnsendpoint/shop/records"),
					txt("www.example.com", "a=1", 60, "dnsendpoint/shop/records"),
					txt("www.example.com", "v=spf1 -all", 60, "dnsendpoint/shop/records"),
				},
				"verify.example.com": {txt("verify.example.com", "google-site-verification=abc", 3600, "dnsendpoint/shop/records")},
			},
		},
		{
			name: "texts win over a CNAME target, as addresses do: a CNAME is alone at its name",
			pubs: []*source.Publication{
				pub("dnsendpoint/shop/records", 0, names("alias.example.com"),
					answer("alias.example.com", 300, "lb.example.net"), texts("alias.example.com", 0, "v=spf1 -all")),
				pub("service/shop/alias", 1, names("alias.example.com"), targets("other.example.net")),
			},
			wantRecords: map[string][]skydns.Record{
				"alias.example.com": {txt("alias.example.com", "v=spf1 -all", 300, "dnsendpoint/shop/records")},
			},
			wantProblems: map[string][]source.Problem{
				"dnsendpoint/shop/records": {cnameProblem("alias.example.com has TXT records, so the CNAME to lb.example.net is not published")},
				"service/shop/alias":       {cnameProblem("alias.example.com has TXT records, so the CNAME to other.example.net")},
			},
		},
		{
			name: "the texts of a namespace's objects at one name merge, each from its oldest object, after the addresses and before the SRV records",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, names("shop.example.com"), addrs("192.0.2.10"), ttl(30),
					ports(source.Port{Name: "http", Protocol: "tcp", Number: 80})),
				pub("dnsendpoint/shop/b", 2, names("shop.example.com"), texts("shop.example.com", 300, "v=spf1 -all", "b=2")),
				pub("dnsendpoint/shop/a", 1, names("shop.example.com"), texts("shop.example.com", 600, "v=spf1 -all")),
			},
			wantRecords: map[string][]skydns.Record{
				"shop.example.com": {
					rec("shop.example.com", "192.0.2.10", 30, "service/shop/web"),
					txt("shop.example.com", "b=2", 30, "dnsendpoint/shop/b"),
					txt("shop.example.com", "v=spf1 -all", 30, "dnsendpoint/shop/a"),
					srv("_http._tcp.shop.example.com", "shop.example.com", 80, 30, "service/shop/web"),
				},
			},
		},
		{
			name: "a name's texts follow the rules of its names: another namespace's older claim keeps it",
			pubs: []*source.Publication{
				pub("service/web/site", 0, names("site.example.com"), addrs("192.0.2.10")),
				pub("dnsendpoint/shop/records", 1, names("site.example.com"), texts("site.example.com", 300, "v=spf1 -all")),
			},
			wantRecords: map[string][]skydns.Record{
				"site.example.com": {rec("site.example.com", "192.0.2.10", 300, "service/web/site")},
			},
			wantProblems: map[string][]source.Problem{
				"dnsendpoint/shop/records": {conflictProblem("site.example.com namespace web")},
			},
		},
		{
			name: "two CNAME targets of one object: the first in order wins",
			pubs: []*source.Publication{
				pub("service/shop/web", 0, generated("web.shop.example.org"), targets("b.lb.example.net", "a.lb.example.net")),
			},
			wantRecords: map[string][]skydns.Record{
				"web.shop.example.org": {rec("web.shop.example.org", "a.lb.example.net", 300, "service/shop/web")},
			},
			wantProblems: map[string][]source.Problem{
				"service/shop/web": {cnameProblem("web.shop.example.org a.lb.example.net b.lb.example.net")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(0)
			for _, p := range tt.pubs {
				x.Update(p.Source, p)
			}
			got := resolveAll(x)
			want := Result{Records: tt.wantRecords, Problems: tt.wantProblems}
			if diff := gocmp.Diff(want, got, resultOpts); diff != "" {
				t.Errorf("Resolve() of every group mismatch (-want +got):\n%s", diff)
			}
			checkMessages(t, tt.wantProblems, got.Problems)
		})
	}
}

// TestRecordsCapped: a name's addresses and texts together are at most the
// index's maxAddrs, addresses first, for a name's keys change in one
// transaction.
func TestRecordsCapped(t *testing.T) {
	const src = "dnsendpoint/shop/records"
	tests := []struct {
		name        string
		pub         *source.Publication
		wantRecords []skydns.Record
		wantProblem string
	}{
		{
			name: "addresses alone, the lowest kept",
			pub:  pub(src, 0, names("www.example.com"), answer("www.example.com", 60, "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4")),
			wantRecords: []skydns.Record{
				rec("www.example.com", "192.0.2.1", 60, src), rec("www.example.com", "192.0.2.2", 60, src), rec("www.example.com", "192.0.2.3", 60, src),
			},
			wantProblem: "hostname www.example.com has 4 addresses from its objects, more than the 3 allowed: only the lowest 3 are published",
		},
		{
			name: "addresses and texts, the addresses first",
			pub: pub(src, 0, names("www.example.com"), answer("www.example.com", 60, "192.0.2.1", "192.0.2.2"),
				texts("www.example.com", 0, "c", "b", "a")),
			wantRecords: []skydns.Record{
				rec("www.example.com", "192.0.2.1", 60, src), rec("www.example.com", "192.0.2.2", 60, src), txt("www.example.com", "a", 60, src),
			},
			wantProblem: "hostname www.example.com has 5 addresses and TXT records from its objects, more than the 3 allowed: only the first 3 are published, addresses first",
		},
		{
			name:        "texts alone",
			pub:         pub(src, 0, names("www.example.com"), texts("www.example.com", 60, "d", "c", "b", "a")),
			wantRecords: []skydns.Record{txt("www.example.com", "a", 60, src), txt("www.example.com", "b", 60, src), txt("www.example.com", "c", 60, src)},
			wantProblem: "has 4 addresses and TXT records",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(3)
			x.Update(src, tt.pub)
			got := resolveAll(x)
			if diff := gocmp.Diff(tt.wantRecords, got.Records["www.example.com"]); diff != "" {
				t.Errorf("Resolve() records of www.example.com mismatch (-want +got):\n%s", diff)
			}
			if ps := got.Problems[src]; len(ps) != 1 || ps[0].Reason != source.ReasonTooManyAddresses || !strings.Contains(ps[0].Message, tt.wantProblem) {
				t.Errorf("Resolve() problems of %s = %+v, want one %s saying %q", src, ps, source.ReasonTooManyAddresses, tt.wantProblem)
			}
		})
	}
}

func TestGroupOf(t *testing.T) {
	tests := []struct {
		name       string
		want       string
		wantStored string
	}{
		{name: "example.org", want: "example.org", wantStored: "apex.dns.example.org"},
		{name: "web.example.org", want: "web.example.org", wantStored: "web.example.org"},
		{name: "web.default.example.org", want: "default.example.org", wantStored: "web.default.example.org"},
		{name: "a.b.c.default.example.org", want: "default.example.org", wantStored: "a.b.c.default.example.org"},
		{name: "dev.example.org", want: "dev.example.org", wantStored: "apex.dns.dev.example.org"},
		{name: "api.dev.example.org", want: "api.dev.example.org", wantStored: "api.dev.example.org"},
		{name: "v1.api.dev.example.org", want: "api.dev.example.org", wantStored: "v1.api.dev.example.org"},
		{name: "example.com", want: "example.com", wantStored: "apex.dns.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed, err := testZones.Place(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := GroupOf(placed); got != tt.want {
				t.Errorf("GroupOf(%+v) = %q, want %q", placed, got, tt.want)
			}
			if got := StoredName(placed); got != tt.wantStored {
				t.Errorf("StoredName(%+v) = %q, want %q", placed, got, tt.wantStored)
			}
		})
	}
}

func TestUpdateGroups(t *testing.T) {
	x := NewIndex(0)
	web := func(opts ...pubOpt) *source.Publication {
		return pub("service/shop/web", 0, append([]pubOpt{generated("web.shop.example.org"), addrs("192.0.2.1")}, opts...)...)
	}

	steps := []struct {
		name string
		src  string
		pub  *source.Publication
		want []string
	}{
		{name: "new publication", src: "service/shop/web", pub: web(names("a.example.com", "x.a.example.com", "example.org")),
			want: []string{"a.example.com", "example.org", "shop.example.org"}},
		{name: "unchanged publication", src: "service/shop/web", pub: web(names("a.example.com", "x.a.example.com", "example.org")), want: nil},
		{name: "name moves", src: "service/shop/web", pub: web(names("b.example.com", "x.a.example.com", "example.org")),
			want: []string{"a.example.com", "b.example.com", "example.org", "shop.example.org"}},
		{name: "addresses change", src: "service/shop/web", pub: pub("service/shop/web", 0, generated("web.shop.example.org"), names("b.example.com"), addrs("192.0.2.2")),
			want: []string{"a.example.com", "b.example.com", "example.org", "shop.example.org"}},
		{name: "other object", src: "ingress/shop/front", pub: pub("ingress/shop/front", 0, names("front.example.com")),
			want: []string{"front.example.com"}},
		{name: "object without names", src: "service/other/nameless", pub: pub("service/other/nameless", 0, addrs("192.0.2.9")), want: []string{}},
		{name: "removed", src: "service/shop/web", pub: nil, want: []string{"b.example.com", "shop.example.org"}},
		{name: "removed again", src: "service/shop/web", pub: nil, want: nil},
		{name: "unknown removed", src: "service/none/none", pub: nil, want: nil},
	}
	for _, s := range steps {
		got := x.Update(s.src, s.pub)
		if diff := gocmp.Diff(s.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %q: Update(%q) mismatch (-want +got):\n%s", s.name, s.src, diff)
		}
		if s.want == nil && got != nil && len(got) != 0 {
			t.Errorf("step %q: Update(%q) = %q, want nothing", s.name, s.src, got)
		}
	}
	if got, want := x.Groups(), []string{"front.example.com"}; !slices.Equal(got, want) {
		t.Errorf("Groups() = %q, want %q", got, want)
	}
	if got := x.Publication("ingress/shop/front"); got == nil || got.Source != "ingress/shop/front" {
		t.Errorf("Publication(%q) = %+v, want the stored publication", "ingress/shop/front", got)
	}
	if got := x.Publication("service/shop/web"); got != nil {
		t.Errorf("Publication(%q) = %+v, want nil after removal", "service/shop/web", got)
	}
	if got, want := x.GroupsOf("ingress/shop/front"), []string{"front.example.com"}; !slices.Equal(got, want) {
		t.Errorf("GroupsOf(%q) = %q, want %q", "ingress/shop/front", got, want)
	}
	keys := x.Keys()
	slices.SortFunc(keys, func(a, b skydns.ObjectKey) int { return strings.Compare(a.String(), b.String()) })
	want := []skydns.ObjectKey{{Kind: "ingress", Namespace: "shop", Name: "front"}, {Kind: "service", Namespace: "other", Name: "nameless"}}
	if !slices.Equal(keys, want) {
		t.Errorf("Keys() = %v, want %v", keys, want)
	}
}

func TestUnclaimedNameMapsToNil(t *testing.T) {
	x := NewIndex(0)
	a := pub("service/shop/web", 0, names("a.example.com", "x.a.example.com"), addrs("192.0.2.1"))
	x.Update(a.Source, a)
	first := x.Resolve("a.example.com")
	wantFirst := Result{Records: map[string][]skydns.Record{
		"a.example.com":   {rec("a.example.com", "192.0.2.1", 300, "service/shop/web")},
		"x.a.example.com": {rec("x.a.example.com", "192.0.2.1", 300, "service/shop/web")},
	}}
	if diff := gocmp.Diff(wantFirst, first, resultOpts); diff != "" {
		t.Fatalf("Resolve(a.example.com) mismatch (-want +got):\n%s", diff)
	}

	// x.a.example.com is no longer claimed.
	a2 := pub("service/shop/web", 0, names("a.example.com"), addrs("192.0.2.1"))
	if got, want := x.Update(a2.Source, a2), []string{"a.example.com"}; !slices.Equal(got, want) {
		t.Errorf("Update() = %q, want %q", got, want)
	}
	second := x.Resolve("a.example.com")
	wantSecond := Result{Records: map[string][]skydns.Record{
		"a.example.com":   {rec("a.example.com", "192.0.2.1", 300, "service/shop/web")},
		"x.a.example.com": nil,
	}}
	if diff := gocmp.Diff(wantSecond, second, resultOpts); diff != "" {
		t.Errorf("Resolve(a.example.com) after a name is dropped mismatch (-want +got):\n%s", diff)
	}
	if rs, ok := second.Records["x.a.example.com"]; !ok || rs != nil {
		t.Errorf("Resolve(a.example.com).Records[%q] = %v, %v; want nil, true", "x.a.example.com", rs, ok)
	}

	// The whole group goes away: the group stays listed until it is resolved.
	x.Update(a2.Source, nil)
	if got, want := x.Groups(), []string{"a.example.com"}; !slices.Equal(got, want) {
		t.Errorf("Groups() after removal = %q, want %q", got, want)
	}
	third := x.Resolve("a.example.com")
	wantThird := Result{Records: map[string][]skydns.Record{"a.example.com": nil}}
	if diff := gocmp.Diff(wantThird, third, resultOpts); diff != "" {
		t.Errorf("Resolve(a.example.com) after removal mismatch (-want +got):\n%s", diff)
	}
	if rs, ok := third.Records["a.example.com"]; !ok || rs != nil {
		t.Errorf("Resolve(a.example.com).Records[%q] = %v, %v; want nil, true", "a.example.com", rs, ok)
	}
	if got := x.Groups(); len(got) != 0 {
		t.Errorf("Groups() after the last resolution = %q, want none", got)
	}
	if fourth := x.Resolve("a.example.com"); len(fourth.Records) != 0 || len(fourth.Problems) != 0 {
		t.Errorf("Resolve(a.example.com) once forgotten = %+v, want an empty result", fourth)
	}
}

func TestConflictLoserTakesOverWhenWinnerLeaves(t *testing.T) {
	x := NewIndex(0)
	older := pub("service/a/web", 0, names("shop.example.com"), addrs("192.0.2.1"))
	newer := pub("service/b/web", 1, names("api.shop.example.com"), addrs("192.0.2.2"))
	x.Update(older.Source, older)
	x.Update(newer.Source, newer)
	got := x.Resolve("shop.example.com")
	want := Result{
		Records:  map[string][]skydns.Record{"shop.example.com": {rec("shop.example.com", "192.0.2.1", 300, "service/a/web")}},
		Problems: map[string][]source.Problem{"service/b/web": {conflictProblem("api.shop.example.com")}},
	}
	if diff := gocmp.Diff(want, got, resultOpts); diff != "" {
		t.Errorf("Resolve(shop.example.com) mismatch (-want +got):\n%s", diff)
	}

	x.Update(older.Source, nil)
	got = x.Resolve("shop.example.com")
	want = Result{Records: map[string][]skydns.Record{
		"shop.example.com":     nil,
		"api.shop.example.com": {rec("api.shop.example.com", "192.0.2.2", 300, "service/b/web")},
	}}
	if diff := gocmp.Diff(want, got, resultOpts); diff != "" {
		t.Errorf("Resolve(shop.example.com) after the winner left mismatch (-want +got):\n%s", diff)
	}
}

// Property test.

var (
	propNamespaces = []string{"a", "b", "c"}
	// propNames lie under two zones, the second nested in the first, with many
	// names related to each other.
	propNames = []string{
		"example.org", "www.example.org", "s.example.org", "x.s.example.org", "y.s.example.org",
		"z.x.s.example.org", "t.example.org", "x.t.example.org",
		"dev.example.org", "api.dev.example.org", "v1.api.dev.example.org", "web.dev.example.org",
	}
	propZones = dnsname.Zones{"example.org", "dev.example.org"}
)

// propClaim is one claim of a generated publication, for checking results.
type propClaim struct {
	pub    *source.Publication
	name   source.Name
	stored string
	own    netip.Addr // an address only this publication has
}

// better reports whether claim a ranks before claim b by the documented rules:
// older objects first, then namespace and object name, whatever the kind of name.
func better(a, b propClaim) bool {
	return cmp.Or(
		a.pub.Created.Compare(b.pub.Created),
		cmp.Compare(a.pub.Key.Namespace, b.pub.Key.Namespace),
		cmp.Compare(a.pub.Key.Name, b.pub.Key.Name),
		cmp.Compare(a.pub.Source, b.pub.Source),
	) < 0
}

func randomPublications(r *rand.Rand) ([]*source.Publication, map[string]netip.Addr) {
	n := 2 + r.Intn(7)
	pubs := make([]*source.Publication, 0, n)
	own := make(map[string]netip.Addr)
	kinds := []string{"service", "ingress"}
	for i := range n {
		ns := propNamespaces[r.Intn(len(propNamespaces))]
		key := skydns.ObjectKey{Kind: kinds[r.Intn(2)], Namespace: ns, Name: fmt.Sprintf("o%d", r.Intn(3)*10+i)}
		p := &source.Publication{
			Key:     key,
			Source:  key.String(),
			Created: t0.Add(time.Duration(r.Intn(3)) * time.Minute),
			TTL:     []uint32{30, 60, 300}[r.Intn(3)],
		}
		for _, name := range propNames {
			if r.Intn(4) != 0 {
				continue
			}
			placed, err := propZones.Place(name)
			if err != nil {
				panic(err)
			}
			p.Names = append(p.Names, source.Name{Placed: placed, Generated: r.Intn(5) == 0})
		}
		own[p.Source] = netip.AddrFrom4([4]byte{10, 0, byte(i), 1})
		p.Addresses = []netip.Addr{own[p.Source]}
		if r.Intn(2) == 0 {
			p.Addresses = append(p.Addresses, netip.MustParseAddr("192.0.2.1"))
		}
		if r.Intn(4) == 0 {
			p.Targets = []string{"lb.example.net"}
		}
		slices.SortFunc(p.Addresses, netip.Addr.Compare)
		pubs = append(pubs, p)
	}
	return pubs, own
}

func TestResolveProperties(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var nClaims, nRefused int
	defer func() { t.Logf("%d claims, %d refused", nClaims, nRefused) }()
	for iter := range 200 {
		pubs, own := randomPublications(r)
		x := NewIndex(0)
		for _, p := range pubs {
			x.Update(p.Source, p)
		}
		res := resolveAll(x)
		describe := func() string {
			var b strings.Builder
			for _, p := range pubs {
				fmt.Fprintf(&b, "\n  %s created %s generated/names:", p.Source, p.Created.Format("15:04"))
				for _, n := range p.Names {
					fmt.Fprintf(&b, " %v/%s", n.Generated, n.Name)
				}
			}
			return b.String()
		}

		var claims, granted, refused []propClaim
		for _, p := range pubs {
			for _, n := range p.Names {
				c := propClaim{pub: p, name: n, stored: StoredName(n.Placed), own: own[p.Source]}
				claims = append(claims, c)
				if slices.Contains(res.Records[c.stored], rec(c.stored, c.own.String(), recordTTL(res, c.stored), p.Source)) {
					granted = append(granted, c)
				} else {
					refused = append(refused, c)
				}
			}
		}

		nClaims += len(claims)
		nRefused += len(refused)

		// Every claim is granted or refused with a HostnameConflict problem.
		for _, p := range pubs {
			nRefused := 0
			for _, c := range refused {
				if c.pub == p {
					nRefused++
					found := false
					for _, pr := range res.Problems[p.Source] {
						found = found || pr.Reason == source.ReasonHostnameConflict && strings.Contains(pr.Message, "hostname "+c.name.Name+" ")
					}
					if !found {
						t.Errorf("iteration %d: claim of %s on %s is neither granted nor refused with a HostnameConflict problem; problems %+v%s",
							iter, p.Source, c.name.Name, res.Problems[p.Source], describe())
					}
				}
			}
			nConflicts := 0
			for _, pr := range res.Problems[p.Source] {
				if pr.Reason == source.ReasonHostnameConflict {
					nConflicts++
				}
			}
			if nConflicts != nRefused {
				t.Errorf("iteration %d: %s has %d HostnameConflict problems for %d refused claims: %+v%s",
					iter, p.Source, nConflicts, nRefused, res.Problems[p.Source], describe())
			}
		}

		// No two granted names of different namespaces are related.
		for i, a := range granted {
			for _, b := range granted[i+1:] {
				if a.pub.Key.Namespace != b.pub.Key.Namespace && dnsname.Related(a.stored, b.stored) {
					t.Errorf("iteration %d: %s (namespace %s) and %s (namespace %s) are both granted and related%s",
						iter, a.stored, a.pub.Key.Namespace, b.stored, b.pub.Key.Namespace, describe())
				}
			}
		}

		// A claim is refused only because of a better-ranked granted claim of
		// another namespace on a related name.
		for _, c := range refused {
			blocked := false
			for _, g := range granted {
				blocked = blocked || g.pub.Key.Namespace != c.pub.Key.Namespace && dnsname.Related(g.stored, c.stored) && better(g, c)
			}
			if !blocked {
				t.Errorf("iteration %d: claim of %s on %s is refused, but no better-ranked related claim of another namespace is granted%s",
					iter, c.pub.Source, c.name.Name, describe())
			}
		}

		// The records of a name hold the addresses of its granted claims, with their smallest TTL.
		wantRecords := make(map[string][]skydns.Record)
		byStored := make(map[string][]propClaim)
		for _, g := range granted {
			byStored[g.stored] = append(byStored[g.stored], g)
		}
		for stored, gs := range byStored {
			slices.SortFunc(gs, func(a, b propClaim) int {
				if better(a, b) {
					return -1
				}
				return 1
			})
			minTTL := gs[0].pub.TTL
			for _, g := range gs {
				minTTL = min(minTTL, g.pub.TTL)
			}
			sources := make(map[netip.Addr]string)
			for _, g := range gs {
				for _, a := range g.pub.Addresses {
					if _, ok := sources[a]; !ok {
						sources[a] = g.pub.Source
					}
				}
			}
			for a, src := range sources {
				wantRecords[stored] = append(wantRecords[stored], rec(stored, a.String(), minTTL, src))
			}
			slices.SortFunc(wantRecords[stored], func(a, b skydns.Record) int {
				return netip.MustParseAddr(a.Host).Compare(netip.MustParseAddr(b.Host))
			})
		}
		if diff := gocmp.Diff(wantRecords, res.Records, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("iteration %d: records mismatch (-want +got):\n%s%s", iter, diff, describe())
		}

		// The result does not depend on the order of the updates, nor on earlier
		// versions of the publications.
		y := NewIndex(0)
		for _, i := range r.Perm(len(pubs)) {
			p := pubs[i]
			if r.Intn(3) == 0 {
				decoy := *p
				decoy.Names = []source.Name{{Placed: dnsname.Placed{Name: "s.example.org", Zone: "example.org"}, Generated: true}}
				y.Update(p.Source, &decoy)
			}
			if r.Intn(4) == 0 {
				y.Update("service/gone/x", &source.Publication{Key: skydns.ObjectKey{Kind: "service", Namespace: "gone", Name: "x"}, Source: "service/gone/x", Created: t0.Add(-time.Hour), Names: p.Names})
				y.Update("service/gone/x", nil)
			}
			y.Update(p.Source, p)
		}
		if diff := gocmp.Diff(res, resolveAll(y), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("iteration %d: result depends on the order of updates (-in order +shuffled):\n%s%s", iter, diff, describe())
		}
		if t.Failed() {
			return
		}
	}
}

// recordTTL returns the TTL of the records of a stored name.
func recordTTL(r Result, stored string) uint32 {
	if rs := r.Records[stored]; len(rs) > 0 {
		return rs[0].TTL
	}
	return 0
}

func TestGranted(t *testing.T) {
	x := NewIndex(0)
	older := &source.Publication{Key: skydns.ObjectKey{Kind: "service", Namespace: "a", Name: "web"}, Source: "service/a/web", Created: time.Unix(1, 0),
		Names: []source.Name{{Placed: dnsname.Placed{Name: "shop.example.com", Zone: "example.com"}}}}
	newer := &source.Publication{Key: skydns.ObjectKey{Kind: "service", Namespace: "b", Name: "web"}, Source: "service/b/web", Created: time.Unix(2, 0),
		Names: []source.Name{
			{Placed: dnsname.Placed{Name: "shop.example.com", Zone: "example.com"}},
			{Placed: dnsname.Placed{Name: "web.shop2.example.com", Zone: "example.com"}},
		}}
	x.Update(older.Source, older)
	x.Update(newer.Source, newer)
	got := x.Resolve("shop.example.com").Granted
	want := map[string][]string{"service/a/web": {"shop.example.com"}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("Granted (-want +got):\n%s", diff)
	}
	if got := x.Resolve("shop2.example.com").Granted; !gocmp.Equal(got, map[string][]string{"service/b/web": {"web.shop2.example.com"}}) {
		t.Errorf("Granted of shop2.example.com = %v", got)
	}
}

func TestSharedOnlyWhenEveryObjectShares(t *testing.T) {
	shared := func(p *source.Publication) { p.Shared = true }
	x := NewIndex(0)
	a := pub("service/shop/a", 1, names("www.shop.example.org"), shared)
	b := pub("ingress/shop/b", 2, names("www.shop.example.org"))
	x.Update(a.Source, a)
	if got := x.Resolve("shop.example.org").Shared; !got["www.shop.example.org"] {
		t.Errorf("Shared = %v with its one object shared", got)
	}
	x.Update(b.Source, b)
	if got := x.Resolve("shop.example.org").Shared; got["www.shop.example.org"] {
		t.Errorf("Shared = %v with one of two objects not shared", got)
	}
}

func TestClusters(t *testing.T) {
	type obj struct {
		src       string
		policy    arbitrate.Policy
		priority  int
		unhealthy bool
	}
	tests := []struct {
		name     string
		objs     []obj
		want     Cluster
		problems []string // sources told of a policy conflict
	}{
		{
			name: "one object",
			objs: []obj{{src: "service/shop/a", policy: arbitrate.Failover, priority: 10}},
			want: Cluster{Policy: arbitrate.Failover, Priority: 10, Healthy: true},
		},
		{
			name: "one object failing open",
			objs: []obj{{src: "service/shop/a", policy: arbitrate.Balanced, priority: 100, unhealthy: true}},
			want: Cluster{Policy: arbitrate.Balanced, Priority: 100},
		},
		{
			name: "healthy while one object has a healthy address",
			objs: []obj{
				{src: "service/shop/a", policy: arbitrate.Failover, priority: 20, unhealthy: true},
				{src: "ingress/shop/b", policy: arbitrate.Failover, priority: 10},
			},
			want: Cluster{Policy: arbitrate.Failover, Priority: 10, Healthy: true},
		},
		{
			name: "objects naming different policies: balanced, and both told",
			objs: []obj{
				{src: "service/shop/a", policy: arbitrate.Failover, priority: 10},
				{src: "ingress/shop/b", policy: arbitrate.Balanced, priority: 100},
			},
			want:     Cluster{Policy: arbitrate.Balanced, Priority: 10, Healthy: true},
			problems: []string{"ingress/shop/b", "service/shop/a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(0)
			for i, o := range tt.objs {
				p := pub(o.src, i, names("www.shop.example.org"), addrs(fmt.Sprintf("192.0.2.%d", i+1)), func(p *source.Publication) {
					p.Shared, p.ClusterPolicy, p.ClusterPriority, p.Unhealthy = true, o.policy, int32(o.priority), o.unhealthy
					p.Ports = []source.Port{{Name: "http", Protocol: "tcp", Number: 80}}
				})
				x.Update(p.Source, p)
			}
			res := x.Resolve("shop.example.org")
			if diff := gocmp.Diff(tt.want, res.Clusters["www.shop.example.org"]); diff != "" {
				t.Errorf("Clusters mismatch (-want +got):\n%s", diff)
			}
			if got := res.Records["www.shop.example.org"]; !slices.ContainsFunc(got, func(r skydns.Record) bool { return r.Name == "_http._tcp.www.shop.example.org" }) {
				t.Errorf("records of the name = %v, want its SRV record among them, which follows its cluster decision", got)
			}
			var told []string
			for src, ps := range res.Problems {
				if slices.ContainsFunc(ps, func(p source.Problem) bool { return p.Reason == source.ReasonClusterPolicyConflict }) {
					told = append(told, src)
				}
			}
			slices.Sort(told)
			if !slices.Equal(told, tt.problems) {
				t.Errorf("sources told of a policy conflict = %q, want %q", told, tt.problems)
			}
		})
	}

	// An unshared name has none.
	x := NewIndex(0)
	p := pub("service/shop/a", 1, names("www.shop.example.org"), addrs("192.0.2.1"))
	x.Update(p.Source, p)
	if got := x.Resolve("shop.example.org").Clusters; len(got) != 0 {
		t.Errorf("Clusters = %v for an unshared name, want none", got)
	}
}
