// Package conformance runs upstream's own definition of a LoadBalancer
// implementation against skylb: the `[Feature:LoadBalancer]` specs of
// k8s.io/kubernetes/test/e2e/network at the Kubernetes version skylb ships
// (e2e.test and the agnhost image built from test/tools/e2e by
// scripts/build-bins.sh, agnhost packed by test/images), in the real
// three-node cluster of test/cluster, with etcd, CoreDNS and skylb deployed
// from the repository's manifests as manifests/README.md's steps do.
//
// The specs run from the cluster's outside client (cluster.Client, a network
// of its own on the bridge), as a user beyond a router would reach the load
// balancers' addresses. Those a DNS load balancer that publishes node
// addresses cannot pass are listed in CannotPass with the reason; the rest
// must pass.
package conformance

import (
	"regexp"
	"strings"
)

// Spec is one of upstream's LoadBalancer specs, by its leaf text (the It).
type Spec struct {
	Text string
	// Quick specs run in scripts/test.sh (each took at most about a
	// minute); scripts/conformance.sh runs all. Not quick: the specs that
	// cannot pass, the rolling updates (about 16 minutes each) and the
	// changes of type and ports (about 85 s each).
	Quick bool
}

// Specs are the `[Feature:LoadBalancer]` specs of v1.34.10, in the order
// of test/e2e/network/loadbalancer.go.
var Specs = []Spec{
	{Text: "should be able to change the type and ports of a TCP service"},
	{Text: "should be able to change the type and ports of a UDP service"},
	{Text: "should only allow access from service loadbalancer source ranges", Quick: true},
	{Text: "should have session affinity work for LoadBalancer service with Local traffic policy", Quick: true},
	{Text: "should be able to switch session affinity for LoadBalancer service with Local traffic policy"},
	{Text: "should have session affinity work for LoadBalancer service with Cluster traffic policy", Quick: true},
	{Text: "should be able to switch session affinity for LoadBalancer service with Cluster traffic policy", Quick: true},
	{Text: "should handle load balancer cleanup finalizer for service", Quick: true},
	{Text: "should be able to create LoadBalancer Service without NodePort and change it", Quick: true},
	{Text: "should be able to preserve UDP traffic when server pod cycles for a LoadBalancer service on different nodes", Quick: true},
	{Text: "should be able to preserve UDP traffic when server pod cycles for a LoadBalancer service on the same nodes", Quick: true},
	{Text: "should not have connectivity disruption during rolling update with externalTrafficPolicy=Cluster"},
	{Text: "should not have connectivity disruption during rolling update with externalTrafficPolicy=Local"},
	// LoadBalancers ExternalTrafficPolicy: Local
	{Text: "should work for type=LoadBalancer", Quick: true},
	{Text: "should only target nodes with endpoints"},
	{Text: "should target all nodes with endpoints"},
	{Text: "should work from pods", Quick: true},
}

// CannotPass are the specs that no implementation publishing node addresses
// can pass, with the reason. With externalTrafficPolicy: Local, kube-proxy
// on a node serves only that node's pods, and drops what arrives for the
// others; a client that uses one address of the status (the specs take
// ingress[0], once) reaches one node's pods. A cloud load balancer or
// cloud-provider-kind's proxy has one address in front of every node, and
// steers by the health check node port; DNS answers with several, and
// skylb's answer holds only the nodes with ready pods, but the specs do
// not resolve a name.
var CannotPass = map[string]string{
	"should be able to switch session affinity for LoadBalancer service with Local traffic policy": "" +
		"ETP Local: the spec expects ingress[0] to reach more than one of the 3 pods once affinity is off; " +
		"behind one node's address it reaches that node's one pod",
	"should only target nodes with endpoints": "" +
		"ETP Local: the spec reads ingress[0] once, then moves the only pod to each node in turn and expects " +
		"ingress[0] to reach it on every node; a node address serves its own node's pods only",
	"should target all nodes with endpoints": "" +
		"ETP Local: the spec expects ingress[0] to reach both pods (on two nodes); a node address reaches its own node's",
}

// focus returns a ginkgo focus expression that matches the specs.
func focus(specs []Spec) string {
	var alts []string
	for _, s := range specs {
		alts = append(alts, regexp.QuoteMeta(s.Text))
	}
	return `\[Feature:LoadBalancer\].* (` + strings.Join(alts, "|") + `)( \[|$)`
}
