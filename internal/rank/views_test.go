package rank

import (
	"net/netip"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/skylb/skylb/internal/skydns"
	"github.com/skylb/skylb/internal/source"
)

// viewAddrs sets the addresses of a publication in one view.
func viewAddrs(view string, as ...string) pubOpt {
	return func(p *source.Publication) {
		v := source.ViewAddrs{View: view, Addrs: []netip.Addr{}}
		for _, a := range as {
			v.Addrs = append(v.Addrs, netip.MustParseAddr(a))
		}
		p.Views = append(p.Views, v)
	}
}

// viewPorts gives a publication's entry of a view (viewAddrs first) SRV
// ports of its own.
func viewPorts(view string, ps ...source.Port) pubOpt {
	return func(p *source.Publication) {
		for i := range p.Views {
			if p.Views[i].View == view {
				p.Views[i].OwnPorts, p.Views[i].Ports = true, ps
			}
		}
	}
}

// TestResolveViews checks that a view gets the names and owners of the
// default view with the addresses of its own, its SRV records too (with
// the view's own ports), none
// when it has no addresses, and the default view's records where no object
// has addresses of its own in the view.
func TestResolveViews(t *testing.T) {
	x := NewIndex(0, "internal")
	// Its pods listen on 8080 where its nodes answer 80.
	web := pub("service/shop/web", 1, names("web.example.org"), addrs("192.0.2.10"), viewAddrs("internal", "10.244.0.5", "10.244.1.5"),
		ports(source.Port{Name: "http", Protocol: "tcp", Number: 80}), viewPorts("internal", source.Port{Name: "http", Protocol: "tcp", Number: 8080}))
	// Its name is taken: the view does not give it the name.
	late := pub("service/other/web", 2, names("web.example.org"), addrs("192.0.2.99"), viewAddrs("internal", "10.244.9.9"))
	api := pub("service/shop/api", 1, names("api.example.org"), addrs("192.0.2.11"))
	db := pub("service/shop/db", 1, names("db.example.org"), addrs("192.0.2.12"), viewAddrs("internal"))
	for _, p := range []*source.Publication{web, late, api, db} {
		x.Update(p.Source, p)
	}
	got := map[string][]skydns.Record{}
	for _, g := range x.Groups() {
		res := x.Resolve(g)
		for name, recs := range res.Views["internal"] {
			got[name] = recs
		}
		if len(res.Views) != 1 {
			t.Errorf("group %s: views %v, want internal only", g, res.Views)
		}
	}
	want := map[string][]skydns.Record{
		"web.example.org": {
			rec("web.example.org", "10.244.0.5", 300, web.Source), rec("web.example.org", "10.244.1.5", 300, web.Source),
			srv("_http._tcp.web.example.org", "web.example.org", 8080, 300, web.Source),
		},
		"api.example.org": {rec("api.example.org", "192.0.2.11", 300, api.Source)},
		"db.example.org":  nil,
	}
	if diff := gocmp.Diff(want, got, resultOpts); diff != "" {
		t.Errorf("records of the view internal (-want +got):\n%s", diff)
	}
	// The default view is unchanged by the views.
	def := resolveAll(x).Records
	if diff := gocmp.Diff([]skydns.Record{rec("web.example.org", "192.0.2.10", 300, web.Source), srv("_http._tcp.web.example.org", "web.example.org", 80, 300, web.Source)}, def["web.example.org"]); diff != "" {
		t.Errorf("default view of web (-want +got):\n%s", diff)
	}
	// A name no longer published maps to nil in the views too.
	x.Update(api.Source, nil)
	res := x.Resolve(GroupOf(api.Names[0].Placed))
	if recs, ok := res.Views["internal"]["api.example.org"]; !ok || recs != nil {
		t.Errorf("a name withdrawn: view internal has %v (present %v), want nil", recs, ok)
	}
}

// TestResolveViewsTexts: a name's TXT records are the same in every view,
// beside the view's own addresses, and stay where the view has none.
func TestResolveViewsTexts(t *testing.T) {
	x := NewIndex(0, "internal")
	web := pub("service/shop/web", 1, names("web.example.org"), addrs("192.0.2.10"), viewAddrs("internal", "10.244.0.5"),
		ports(source.Port{Name: "http", Protocol: "tcp", Number: 80}))
	db := pub("service/shop/db", 1, names("db.example.org"), addrs("192.0.2.12"), viewAddrs("internal"))
	records := pub("dnsendpoint/shop/records", 2, names("web.example.org", "db.example.org"),
		texts("web.example.org", 300, "v=spf1 -all"), texts("db.example.org", 300, "owner=db"))
	for _, p := range []*source.Publication{web, db, records} {
		x.Update(p.Source, p)
	}
	got := map[string][]skydns.Record{}
	for _, g := range x.Groups() {
		for name, recs := range x.Resolve(g).Views["internal"] {
			got[name] = recs
		}
	}
	want := map[string][]skydns.Record{
		"web.example.org": {
			rec("web.example.org", "10.244.0.5", 300, web.Source), txt("web.example.org", "v=spf1 -all", 300, records.Source),
			srv("_http._tcp.web.example.org", "web.example.org", 80, 300, web.Source),
		},
		"db.example.org": {txt("db.example.org", "owner=db", 300, records.Source)},
	}
	if diff := gocmp.Diff(want, got, resultOpts); diff != "" {
		t.Errorf("records of the view internal (-want +got):\n%s", diff)
	}
}
