package deploy

import (
	"strings"
	"testing"
	"time"
)

// secondZone is the zone twoZones adds to SKYLB_ZONE.
const secondZone = "example.net"

// twoZones sets two zones as manifests/README.md ("1. Settings") and
// coredns/README.md tell: the same SKYLB_ZONE line, a list, in
// manifests/config.env and coredns/deploy/config.env, applied with kubectl
// apply -k. skylb and CoreDNS roll out with it (CoreDNS's init container
// writes both zones into its Corefile), web's hostname annotation puts it in
// the second zone, and CoreDNS answers the names of both.
func (e *env) twoZones(t *testing.T) {
	e.t = t
	ctx := ctxT(t, 8*time.Minute)
	files := []string{"manifests/config.env", "coredns/deploy/config.env"}
	was := map[string]string{}
	for _, f := range files {
		was[f] = e.readFile(f)
		if !strings.Contains(was[f], "\nSKYLB_ZONE="+zone+"\n") {
			t.Fatalf("%s has no line SKYLB_ZONE=%s", f, zone)
		}
		e.writeFile(f, strings.Replace(was[f], "\nSKYLB_ZONE="+zone+"\n", "\nSKYLB_ZONE="+zone+","+secondZone+"\n", 1))
	}
	const apply = "kubectl apply -k coredns && kubectl apply -k manifests && " +
		"kubectl -n skylb-coredns rollout status deployment/coredns --timeout=3m && kubectl -n skylb rollout status deployment/skylb --timeout=3m"
	t.Cleanup(func() {
		ctx := ctxT(t, 5*time.Minute)
		for _, f := range files {
			e.writeFile(f, was[f])
		}
		e.c.Kubectl(ctx, "annotate", "service", "web", "skylb.io/hostname-")
		if out, err := e.shell(ctx, apply, 0); err != nil {
			t.Errorf("back to one zone: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := e.shell(ctx, apply, 0); err != nil {
		t.Fatalf("two zones: %v\n%s", err, out)
	}
	rolled := time.Since(start)
	name := "web." + secondZone
	e.kubectl(ctx, "annotate", "service", "web", "skylb.io/hostname="+name, "--overwrite")
	want := e.webNodes(ctx, "app=web")
	took := e.waitAnswer(ctx, 2*time.Minute, name, want)
	e.waitAnswer(ctx, time.Minute, webName, want)
	t.Logf("measure: SKYLB_ZONE=%s,%s on both sides: skylb and CoreDNS rolled out in %v; %s answers %v %v after the annotation, and %s still does",
		zone, secondZone, rolled.Round(time.Second), name, want, took.Round(10*time.Millisecond), webName)
}
