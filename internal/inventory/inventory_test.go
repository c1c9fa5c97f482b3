package inventory

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/skydns"
)

func TestReadAndWrite(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease, err := c.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, value string, opts ...clientv3.OpOption) {
		t.Helper()
		if _, err := c.Put(ctx, key, value, opts...); err != nil {
			t.Fatal(err)
		}
	}
	web := func(owner, host string) (string, string) {
		r := skydns.Record{Name: "web.example.org", Host: host, TTL: 30}
		return skydns.Key("/skydns", owner, r), string(skydns.Encode(owner, r))
	}
	// Shared claims as written before the clusters published their verdicts:
	// balanced, healthy and answering.
	put("/skylb/claims/web.example.org/east", `{"owner":"east","shared":true}`)
	put("/skylb/claims/web.example.org/west", `{"owner":"west","shared":true}`, clientv3.WithLease(lease.ID))
	put("/skylb/claims/web.example.org/north", `{"owner":"north"}`)
	// Beneath the name west shares with east, but north's older claim on it,
	// waiting as it is, is not shared.
	put("/skylb/claims/a.web.example.org/west", `{"owner":"west"}`)
	k, v := web("east", "192.0.2.1")
	put(k, v)
	k, v = web("west", "192.0.2.2")
	put(k, v, clientv3.WithLease(lease.ID))
	put("/skydns/org/example/hand/x1", `{"host":"192.0.2.9"}`)
	srvRec := skydns.Record{Name: "_http._tcp.web.example.org", Host: "web.example.org", Port: 80, TTL: 30}
	put(skydns.Key("/skydns", "east", srvRec), string(skydns.Encode("east", srvRec)))
	guard := skydns.Record{Name: skydns.ApexName("example.org"), Host: "example.org", TTL: 30, Source: "apex-guard"}
	put(skydns.Key("/skydns", "east", guard), string(skydns.Encode("east", guard)))
	put("/skydns/org/example/junk/x1", `not json`)
	ptr := skydns.Record{Name: "1.2.0.192.in-addr.arpa", Host: "web.example.org", TTL: 30}
	put(skydns.Key("/skydns", "east", ptr), string(skydns.Encode("east", ptr)))
	put("/skylb/claims/1.2.0.192.in-addr.arpa/east", `{"owner":"east"}`)
	cname := skydns.Record{Name: "db.example.org", Host: "db.example.net", TTL: 30}
	put(skydns.Key("/skydns", "east", cname), string(skydns.Encode("east", cname)))
	txt := skydns.Record{Name: "db.example.org", Text: `v=spf1 "a" -all`, TTL: 300}
	put(skydns.Key("/skydns", "east", txt), string(skydns.Encode("east", txt)))

	inv, err := Read(ctx, c, "/skydns", "/skylb/claims")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := inv.Report("east").Write(&out); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(strings.ReplaceAll(out.String(), "\n", " | "))
	want := strings.Fields(`NAME TYPE HOST TTL OWNER CLAIM EXPIRES |
1.2.0.192.in-addr.arpa PTR web.example.org 30 east holds never |
_http._tcp.web.example.org SRV web.example.org:80 30 east shares never |
a.web.example.org - - - west (foreign) waits for north (nested) never |
db.example.org TXT "v=spf1 \"a\" -all" 300 east - never |
db.example.org CNAME db.example.net 30 east - never |
example.org none example.org 30 east - never |
hand.example.org A 192.0.2.9 0 (not skylb's) - never |
junk.example.org ? (invalid value) - (not skylb's) - never |
web.example.org A 192.0.2.1 30 east shares never |
web.example.org - - - north (foreign) waits for east,west never |
web.example.org A 192.0.2.2 30 west (foreign) shares in 1m0s | |
SHARED NAME POLICY OWNER PRIORITY HEALTH ANSWERS |
web.example.org balanced east 100 healthy yes |
web.example.org balanced west (foreign) 100 healthy yes |`)
	// The lease's time left may have dropped a second.
	if i := slices.Index(got, "59s"); i >= 0 {
		got[i] = "1m0s"
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("table:\n%s\nwant (spacing aside):\n%s", out.String(), strings.Join(want, " "))
	}
	rep := inv.Report("east")
	if i := slices.IndexFunc(rep.Records, func(e Entry) bool { return e.Type == "TXT" }); i < 0 || rep.Records[i].Text != txt.Text || rep.Records[i].Host != "" {
		t.Errorf("Report(east).Records = %+v, want the TXT record with its text %q", rep.Records, txt.Text)
	}
}
