package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/skydns"
)

// TestRecordsOutput runs skylb records against a real etcd, its etcd settings
// from the environment, in each output format.
func TestRecordsOutput(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	put := func(key, value string) {
		t.Helper()
		if _, err := c.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		owner string
		rec   skydns.Record
	}{
		{"east", skydns.Record{Name: "web.example.org", Host: "192.0.2.1", TTL: 30}},
		{"west", skydns.Record{Name: "web.example.org", Host: "192.0.2.2", TTL: 30}},
		{"east", skydns.Record{Name: "_http._tcp.web.example.org", Host: "web.example.org", Port: 80, TTL: 30}},
	} {
		put(skydns.Key("/skydns", r.owner, r.rec), string(skydns.Encode(r.owner, r.rec)))
	}
	put("/skylb/claims/web.example.org/east", `{"owner":"east","shared":true,"policy":"failover","priority":10,"healthy":false,"since":"2025-01-02T03:04:05Z","serving":true}`)
	put("/skylb/claims/web.example.org/west", `{"owner":"west","shared":true,"policy":"failover","priority":20,"healthy":true,"since":"2025-01-02T03:00:00Z","serving":true}`)
	put("/skylb/claims/_http._tcp.web.example.org/east", `{"owner":"east","shared":true,"policy":"failover","priority":10,"healthy":false,"since":"2025-01-02T03:04:05Z","serving":true}`)
	put("/skylb/claims/db.example.org/west", `{"owner":"west"}`)
	settings := env(map[string]string{
		"SKYLB_ETCD_ENDPOINTS": srv.Endpoint, "SKYLB_ETCD_CA_FILE": srv.Client.CAFile,
		"SKYLB_ETCD_CERT_FILE": srv.Client.CertFile, "SKYLB_ETCD_KEY_FILE": srv.Client.KeyFile,
		"SKYLB_OWNER_ID": "west",
	})
	records := func(args ...string) string {
		t.Helper()
		var out, errs strings.Builder
		if code := Run(append([]string{"records"}, args...), &out, &errs, settings); code != 0 {
			t.Fatalf("skylb records %q = %d, stderr:\n%s", args, code, errs.String())
		}
		return out.String()
	}

	// The JSON and YAML field names are part of skylb's interface: a change
	// here breaks the scripts that read them.
	wantJSON := `{
  "records": [
    {"name": "_http._tcp.web.example.org", "type": "SRV", "host": "web.example.org", "port": 80, "ttl": 30,
     "owner": "east", "foreign": true, "claim": "shares", "expiresInSeconds": null},
    {"name": "db.example.org", "type": "-", "host": "", "port": 0, "ttl": 0,
     "owner": "west", "foreign": false, "claim": "holds", "expiresInSeconds": null},
    {"name": "web.example.org", "type": "A", "host": "192.0.2.1", "port": 0, "ttl": 30,
     "owner": "east", "foreign": true, "claim": "shares", "expiresInSeconds": null},
    {"name": "web.example.org", "type": "A", "host": "192.0.2.2", "port": 0, "ttl": 30,
     "owner": "west", "foreign": false, "claim": "shares", "expiresInSeconds": null}
  ],
  "shared": [
    {"name": "web.example.org", "policy": "failover", "disagree": false, "failOpen": false, "clusters": [
      {"owner": "east", "foreign": true, "priority": 10, "healthy": false, "healthySince": "2025-01-02T03:04:05Z", "answering": true},
      {"owner": "west", "foreign": false, "priority": 20, "healthy": true, "healthySince": "2025-01-02T03:00:00Z", "answering": true}
    ]}
  ],
  "claimPrefix": "/skylb/claims",
  "claimsDenied": false
}`
	var want any
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	decode := func(format string, b []byte) any {
		t.Helper()
		var got any
		if err := yaml.Unmarshal(b, &got); err != nil { // YAML is a superset of JSON
			t.Fatalf("-o %s: %v\n%s", format, err, b)
		}
		return got
	}
	jsonOut := records("-o", "json")
	if diff := cmp.Diff(want, decode("json", []byte(jsonOut))); diff != "" {
		t.Errorf("skylb records -o json mismatch (-want +got):\n%s", diff)
	}
	if !json.Valid([]byte(jsonOut)) {
		t.Errorf("skylb records -o json is not JSON:\n%s", jsonOut)
	}
	yamlOut := records("--output=yaml")
	if diff := cmp.Diff(want, decode("yaml", []byte(yamlOut))); diff != "" {
		t.Errorf("skylb records -o yaml mismatch (-want +got):\n%s", diff)
	}
	if strings.HasPrefix(strings.TrimSpace(yamlOut), "{") {
		t.Errorf("skylb records -o yaml printed JSON:\n%s", yamlOut)
	}

	// The table stays the default; --owner-id on the command line wins over
	// SKYLB_OWNER_ID.
	table := strings.Fields(strings.ReplaceAll(records("--owner-id=east"), "\n", " | "))
	wantTable := strings.Fields(`NAME TYPE HOST TTL OWNER CLAIM EXPIRES |
_http._tcp.web.example.org SRV web.example.org:80 30 east shares never |
db.example.org - - - west (foreign) holds never |
web.example.org A 192.0.2.1 30 east shares never |
web.example.org A 192.0.2.2 30 west (foreign) shares never | |
SHARED NAME POLICY OWNER PRIORITY HEALTH ANSWERS |
web.example.org failover east 10 unhealthy since 2025-01-02T03:04:05Z yes |
web.example.org failover west (foreign) 20 healthy since 2025-01-02T03:00:00Z yes |`)
	if diff := cmp.Diff(wantTable, table); diff != "" {
		t.Errorf("skylb records mismatch (-want +got):\n%s", diff)
	}
}

// TestRecordsViews checks that skylb records reads the tree of each view of
// --view (SKYLB_VIEW, as skylb run reads it) and tells each record's view.
func TestRecordsViews(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for prefix, host := range map[string]string{"/skydns": "192.0.2.1", "/skydns-internal": "10.244.1.5"} {
		r := skydns.Record{Name: "web.example.org", Host: host, TTL: 30}
		if _, err := c.Put(ctx, skydns.Key(prefix, "east", r), string(skydns.Encode("east", r))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, "/skylb/claims/web.example.org/east", `{"owner":"east"}`); err != nil {
		t.Fatal(err)
	}
	settings := env(map[string]string{
		"SKYLB_ETCD_ENDPOINTS": srv.Endpoint, "SKYLB_ETCD_CA_FILE": srv.Client.CAFile,
		"SKYLB_ETCD_CERT_FILE": srv.Client.CertFile, "SKYLB_ETCD_KEY_FILE": srv.Client.KeyFile,
		"SKYLB_OWNER_ID": "east", "SKYLB_VIEW": "internal=pods",
	})
	var out, errs strings.Builder
	if code := Run([]string{"records"}, &out, &errs, settings); code != 0 {
		t.Fatalf("skylb records = %d, stderr:\n%s", code, errs.String())
	}
	table := strings.Fields(strings.ReplaceAll(out.String(), "\n", " | "))
	want := strings.Fields(`NAME VIEW TYPE HOST TTL OWNER CLAIM EXPIRES |
web.example.org default A 192.0.2.1 30 east holds never |
web.example.org internal A 10.244.1.5 30 east holds never |`)
	if diff := cmp.Diff(want, table); diff != "" {
		t.Errorf("skylb records with a view mismatch (-want +got):\n%s", diff)
	}
	out.Reset()
	if code := Run([]string{"records", "--view=Bad=pods"}, &out, &errs, settings); code != 2 {
		t.Errorf("skylb records --view=Bad=pods = %d, want 2", code)
	}
	// --view-zone alone declares its view, as for skylb run.
	out.Reset()
	zoned := env(map[string]string{
		"SKYLB_ETCD_ENDPOINTS": srv.Endpoint, "SKYLB_ETCD_CA_FILE": srv.Client.CAFile,
		"SKYLB_ETCD_CERT_FILE": srv.Client.CertFile, "SKYLB_ETCD_KEY_FILE": srv.Client.KeyFile,
		"SKYLB_OWNER_ID": "east", "SKYLB_VIEW_ZONE": "internal=zone-a",
	})
	if code := Run([]string{"records"}, &out, &errs, zoned); code != 0 {
		t.Fatalf("skylb records with SKYLB_VIEW_ZONE = %d, stderr:\n%s", code, errs.String())
	}
	if diff := cmp.Diff(want, strings.Fields(strings.ReplaceAll(out.String(), "\n", " | "))); diff != "" {
		t.Errorf("skylb records with a zone's view mismatch (-want +got):\n%s", diff)
	}
}
