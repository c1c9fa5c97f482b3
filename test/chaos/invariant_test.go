package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skylb/skylb/test/stack"
)

// value is the JSON of a record as CoreDNS's etcd plugin reads it, with the
// fields skylb adds.
type value struct {
	Host   string `json:"host"`
	Port   int    `json:"port,omitempty"`
	TTL    int    `json:"ttl"`
	Owner  string `json:"owner"`
	Source string `json:"source"`
}

// foreign are keys of another owner and written by hand, which skylb must
// leave as they are whatever happens.
var foreign = map[string]string{
	"/skydns/org/example/partner/other-cluster-1a2b3c4d5e6f": `{"host":"198.51.100.250","ttl":60,"owner":"other-cluster"}`,
	"/skydns/org/example/chaos/manual/x":                     `{"host":"198.51.100.251"}`,
}

func writeForeign(ctx context.Context) error {
	c, err := st.EtcdClient("root")
	if err != nil {
		return err
	}
	defer c.Close()
	for k, v := range foreign {
		if _, err := c.Put(ctx, k, v); err != nil {
			return fmt.Errorf("write foreign key %s: %w", k, err)
		}
	}
	return nil
}

// recordKey returns the key of a record of name with host: skylb names it
// after its owner id and the first 12 hex digits of the SHA-256 of the host,
// so that keys are stable and owners never collide (etcd/README.md, "Records
// in etcd").
func recordKey(name, host string) string {
	sum := sha256.Sum256([]byte(host))
	return stack.StoredPath(name) + "/" + owner + "-" + hex.EncodeToString(sum[:])[:12]
}

// srvKey returns the key of the SRV record of a port beneath name: the hash
// covers the target (the name itself) and the port.
func srvKey(srvName, target string, port int) string {
	sum := sha256.Sum256([]byte(target + "\x00" + strconv.Itoa(port)))
	return stack.StoredPath(srvName) + "/" + owner + "-" + hex.EncodeToString(sum[:])[:12]
}

// desiredState is what etcd must hold for the objects in the API server.
type desiredState struct {
	records map[string]value    // key under /skydns/ -> value
	names   map[string][]string // DNS name -> sorted addresses
	claimed map[string]bool     // stored names skylb claims under /skylb/claims/
}

// desired lists the test's Services and computes their records: each
// LoadBalancer Service is published as <service>.<namespace>.<zone> with one A
// record per distinct IPv4 address of its status, and the zone's apex holds
// skylb's apex guard since nothing publishes the apex.
func desired(ctx context.Context) (desiredState, error) {
	list, err := st.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return desiredState{}, err
	}
	d := desiredState{records: map[string]value{}, names: map[string][]string{}, claimed: map[string]bool{}}
	guard := stack.StoredPath("apex.dns." + zone)
	sum := sha256.Sum256([]byte(zone))
	d.records[guard+"/"+owner+"-"+hex.EncodeToString(sum[:])[:12]] = value{Host: zone, TTL: ttl, Owner: owner, Source: "apex-guard"}
	for _, svc := range list.Items {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil {
			continue
		}
		name := svc.Name + "." + svc.Namespace + "." + zone
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP == "" || strings.Contains(ing.IP, ":") {
				continue
			}
			d.records[recordKey(name, ing.IP)] = value{Host: ing.IP, TTL: ttl, Owner: owner, Source: "service/" + svc.Namespace + "/" + svc.Name}
			if !slices.Contains(d.names[name], ing.IP) {
				d.names[name] = append(d.names[name], ing.IP)
			}
		}
		slices.Sort(d.names[name])
		if len(d.names[name]) == 0 {
			continue
		}
		d.claimed[name] = true
		// Each named port has an SRV record beneath the name, targeting it,
		// held by the name's claim.
		for _, p := range svc.Spec.Ports {
			if p.Name == "" {
				continue
			}
			srv := "_" + p.Name + "._" + strings.ToLower(string(p.Protocol)) + "." + name
			d.records[srvKey(srv, name, int(p.Port))] = value{Host: name, Port: int(p.Port), TTL: ttl, Owner: owner, Source: "service/" + svc.Namespace + "/" + svc.Name}
		}
	}
	return d, nil
}

// dump returns every key under prefix with its value.
func dump(ctx context.Context, c *clientv3.Client, prefix string) (map[string]string, error) {
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out, nil
}

// compare checks the keys under /skydns/ and /skylb/ against d and returns
// what differs, at most a few lines of each kind; nil when they agree.
func compare(d desiredState, skydns, skylb map[string]string) []string {
	var lost, orphans, dups, wrong, foreignChanged, other []string
	hostsByPath := map[string]map[string]bool{}
	for k, v := range d.records {
		dir := k[:strings.LastIndexByte(k, '/')]
		if hostsByPath[dir] == nil {
			hostsByPath[dir] = map[string]bool{}
		}
		hostsByPath[dir][v.Host] = true
	}
	for k, want := range foreign {
		if got, ok := skydns[k]; !ok || got != want {
			foreignChanged = append(foreignChanged, fmt.Sprintf("%s = %q", k, got))
		}
	}
	for k, raw := range skydns {
		if _, ok := foreign[k]; ok {
			continue
		}
		want, ok := d.records[k]
		var got value
		err := json.Unmarshal([]byte(raw), &got)
		switch {
		case !ok && err == nil && hostsByPath[k[:strings.LastIndexByte(k, '/')]][got.Host]:
			dups = append(dups, k+" "+raw)
		case !ok:
			orphans = append(orphans, k+" "+raw)
		case err != nil || got != want:
			wrong = append(wrong, fmt.Sprintf("%s = %s, want %+v", k, raw, want))
		}
	}
	for k, v := range d.records {
		if _, ok := skydns[k]; !ok {
			lost = append(lost, k+" "+v.Host)
		}
	}
	other = checkSkylbPrefix(d, skylb)
	var out []string
	for _, kind := range []struct {
		what string
		keys []string
	}{{"lost", lost}, {"orphan", orphans}, {"duplicate", dups}, {"wrong value", wrong}, {"foreign key changed", foreignChanged}, {"not skylb's under /skylb/", other}} {
		if len(kind.keys) == 0 {
			continue
		}
		sort.Strings(kind.keys)
		shown := kind.keys[:min(3, len(kind.keys))]
		out = append(out, fmt.Sprintf("%d %s: %s", len(kind.keys), kind.what, strings.Join(shown, "; ")))
	}
	return out
}

// checkSkylbPrefix accepts under /skylb/ only what belongs to this skylb: its
// leader election keys (/skylb/leader/<owner>/...) and exactly one claim per
// published name (/skylb/claims/<name>/<owner>, a JSON value naming the owner).
func checkSkylbPrefix(d desiredState, keys map[string]string) []string {
	var bad []string
	claims := 0
	for k, v := range keys {
		switch {
		case strings.HasPrefix(k, "/skylb/leader/"+owner+"/"):
		case strings.HasPrefix(k, "/skylb/claims/") && strings.HasSuffix(k, "/"+owner):
			var c struct {
				Owner string `json:"owner"`
			}
			stored := strings.TrimSuffix(strings.TrimPrefix(k, "/skylb/claims/"), "/"+owner)
			if json.Unmarshal([]byte(v), &c) != nil || c.Owner != owner || !d.claimed[stored] {
				bad = append(bad, k+" "+v)
			}
			claims++
		default:
			bad = append(bad, k+" "+v)
		}
	}
	if claims != len(d.claimed) {
		bad = append(bad, fmt.Sprintf("%d claims for %d published names", claims, len(d.claimed)))
	}
	return bad
}

// converge waits until etcd holds exactly the desired records, up to limit
// after since (the end of a fault), and returns how long after since that
// was, or an error naming what still differs.
func converge(ctx context.Context, since time.Time, limit time.Duration) (time.Duration, error) {
	start := since
	c, err := st.EtcdClient("root")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var last []string
	for {
		last = checkOnce(ctx, c)
		if len(last) == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("etcd differs from the desired records after %v: %s", limit.Round(time.Second), strings.Join(last, " | "))
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkOnce compares etcd with the desired records once.
func checkOnce(ctx context.Context, c *clientv3.Client) []string {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := desired(cctx)
	if err != nil {
		return []string{"list Services: " + err.Error()}
	}
	sky, err := dump(cctx, c, "/skydns/")
	if err != nil {
		return []string{"read /skydns/: " + err.Error()}
	}
	own, err := dump(cctx, c, "/skylb/")
	if err != nil {
		return []string{"read /skylb/: " + err.Error()}
	}
	return compare(d, sky, own)
}

// dnsSample waits until CoreDNS answers a sample of names as desired (their
// addresses, NXDOMAIN for gone), up to limit after since, and returns how long
// after since that was.
func dnsSample(ctx context.Context, since time.Time, gone []string, limit time.Duration) (time.Duration, error) {
	start := since
	d, err := desired(ctx)
	if err != nil {
		return 0, err
	}
	want := map[string][]string{}
	names := make([]string, 0, len(d.names))
	for n := range d.names {
		names = append(names, n)
	}
	sort.Strings(names)
	for i := 0; i < len(names); i += max(1, len(names)/8) {
		want[names[i]] = d.names[names[i]]
	}
	for _, g := range gone {
		if _, ok := d.names[g]; !ok {
			want[g] = nil
		}
	}
	for {
		bad := ""
		for name, addrs := range want {
			rcode, got, err := stack.Query(st.DNSAddr, name, dns.TypeA)
			switch {
			case err != nil:
				bad = fmt.Sprintf("%s: %v", name, err)
			case len(addrs) == 0 && rcode != dns.RcodeNameError:
				bad = fmt.Sprintf("%s: %s %q, want NXDOMAIN", name, dns.RcodeToString[rcode], got)
			case len(addrs) > 0 && !slices.Equal(got, addrs):
				bad = fmt.Sprintf("%s: %s %q, want %q", name, dns.RcodeToString[rcode], got, addrs)
			}
			if bad != "" {
				break
			}
		}
		if bad == "" {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("CoreDNS after %v: %s", limit, bad)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
