package manifests

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// access is one "kubectl auth can-i": verb on resource (group-qualified),
// optionally its subresource or one object's name, in namespace ns ("" means
// all namespaces).
type access struct {
	verb, resource, sub, name, ns string
	allowed                       bool
}

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.sub != "" {
		s += " --subresource=" + a.sub
	}
	if a.name != "" {
		s += "/" + a.name
	}
	if a.ns == "" {
		return s + " --all-namespaces"
	}
	return s + " -n " + a.ns
}

const (
	ing    = "ingresses.networking.k8s.io"
	eps    = "endpointslices.discovery.k8s.io"
	leases = "leases.coordination.k8s.io"
)

// applyRBAC applies the RBAC objects of rr.
func applyRBAC(ctx context.Context, t *testing.T, k kubectl, rr *rendering) {
	rbac := rr.filter(func(o *unstructured.Unstructured) bool {
		return slices.Contains([]string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind())
	})
	if _, _, err := k.run(ctx, encode(t, rbac), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// rbacChecks applies the RBAC objects of rr, whose skylb runs in namespace
// ns, and asks the API server what skylb's ServiceAccount may do.
func rbacChecks(ctx context.Context, t *testing.T, k kubectl, rr *rendering, ns string) {
	applyRBAC(ctx, t, k, rr)
	checks := []access{
		// What skylb does.
		{verb: "get", resource: "services", ns: "default", allowed: true},
		{verb: "list", resource: "services", allowed: true},
		{verb: "watch", resource: "services", allowed: true},
		{verb: "list", resource: ing, allowed: true},
		{verb: "watch", resource: ing, allowed: true},
		{verb: "list", resource: eps, allowed: true},
		{verb: "watch", resource: eps, allowed: true},
		{verb: "list", resource: "nodes", allowed: true},
		{verb: "watch", resource: "nodes", allowed: true},
		{verb: "list", resource: "gateways.gateway.networking.k8s.io", allowed: true},
		{verb: "watch", resource: "gateways.gateway.networking.k8s.io", allowed: true},
		{verb: "list", resource: "httproutes.gateway.networking.k8s.io", allowed: true},
		{verb: "watch", resource: "grpcroutes.gateway.networking.k8s.io", allowed: true},
		{verb: "watch", resource: "tlsroutes.gateway.networking.k8s.io", allowed: true},
		{verb: "list", resource: "dnsendpoints.externaldns.k8s.io", allowed: true},
		{verb: "watch", resource: "dnsendpoints.externaldns.k8s.io", allowed: true},
		{verb: "patch", resource: "dnsendpoints.externaldns.k8s.io", sub: "status", ns: "default", allowed: true},
		{verb: "list", resource: "customresourcedefinitions.apiextensions.k8s.io", allowed: true},
		{verb: "watch", resource: "customresourcedefinitions.apiextensions.k8s.io", allowed: true},
		{verb: "update", resource: "services", sub: "status", ns: "default", allowed: true},
		{verb: "patch", resource: "services", sub: "status", ns: "default", allowed: true},
		// The load-balancer cleanup finalizer, by a patch.
		{verb: "patch", resource: "services", ns: "default", allowed: true},
		{verb: "create", resource: "events", ns: "default", allowed: true},
		{verb: "patch", resource: "events", ns: "default", allowed: true},
		{verb: "create", resource: leases, ns: ns, allowed: true},
		{verb: "get", resource: leases, name: "skylb", ns: ns, allowed: true},
		{verb: "update", resource: leases, name: "skylb", ns: ns, allowed: true},
		{verb: "watch", resource: leases, name: "skylb", ns: ns, allowed: true},
		// What it must not.
		{verb: "get", resource: "secrets", ns: ns},
		{verb: "list", resource: "secrets"},
		{verb: "watch", resource: "secrets"},
		{verb: "delete", resource: "services", ns: "default"},
		{verb: "update", resource: "services", ns: "default"},
		{verb: "create", resource: "services", ns: "default"},
		{verb: "list", resource: "pods"},
		{verb: "get", resource: "pods", ns: "default"},
		{verb: "get", resource: "nodes", name: "node-1"},
		{verb: "update", resource: "nodes", name: "node-1"},
		{verb: "update", resource: ing, sub: "status", ns: "default"},
		{verb: "update", resource: "httproutes.gateway.networking.k8s.io", sub: "status", ns: "default"},
		{verb: "update", resource: "dnsendpoints.externaldns.k8s.io", ns: "default"},
		{verb: "get", resource: "dnsendpoints.externaldns.k8s.io", ns: "default"},
		{verb: "update", resource: "dnsendpoints.externaldns.k8s.io", sub: "status", ns: "default"},
		{verb: "update", resource: "gateways.gateway.networking.k8s.io", ns: "default"},
		{verb: "list", resource: "referencegrants.gateway.networking.k8s.io"},
		{verb: "update", resource: "customresourcedefinitions.apiextensions.k8s.io", name: "gateways.gateway.networking.k8s.io"},
		{verb: "delete", resource: "customresourcedefinitions.apiextensions.k8s.io", name: "gateways.gateway.networking.k8s.io"},
		{verb: "delete", resource: eps, ns: "default"},
		{verb: "delete", resource: "events", ns: "default"},
		{verb: "get", resource: leases, name: "other", ns: ns},
		{verb: "update", resource: leases, name: "other", ns: ns},
		{verb: "watch", resource: leases, name: "other", ns: ns},
		{verb: "watch", resource: leases, ns: ns},
		{verb: "list", resource: leases, ns: ns},
		{verb: "delete", resource: leases, name: "skylb", ns: ns},
		{verb: "create", resource: leases, ns: "kube-system"},
		{verb: "get", resource: "configmaps", ns: ns},
		{verb: "create", resource: "serviceaccounts", sub: "token", name: "skylb", ns: ns},
		{verb: "*", resource: "*"},
	}
	canI(ctx, t, k, "system:serviceaccount:"+ns+":skylb", checks)
}

// viewsRBACChecks applies the RBAC objects of coredns/ and asks the API
// server what skylb's ServiceAccount may do in CoreDNS's namespace: read and
// update the ConfigMap of the views' blocks (skylb --coredns-views), and
// nothing else there.
func viewsRBACChecks(ctx context.Context, t *testing.T, k kubectl, rr *rendering) {
	applyRBAC(ctx, t, k, rr)
	checks := []access{
		{verb: "get", resource: "configmaps", name: "coredns-views", ns: nsCoreDNS, allowed: true},
		{verb: "update", resource: "configmaps", name: "coredns-views", ns: nsCoreDNS, allowed: true},
		{verb: "delete", resource: "configmaps", name: "coredns-views", ns: nsCoreDNS},
		{verb: "get", resource: "configmaps", name: "coredns-corefile", ns: nsCoreDNS},
		{verb: "update", resource: "configmaps", name: "coredns-corefile", ns: nsCoreDNS},
		{verb: "list", resource: "configmaps", ns: nsCoreDNS},
		{verb: "watch", resource: "configmaps", ns: nsCoreDNS},
		{verb: "create", resource: "configmaps", ns: nsCoreDNS},
		{verb: "get", resource: "secrets", name: "coredns-etcd-client", ns: nsCoreDNS},
		{verb: "update", resource: "configmaps", name: "coredns-views", ns: "default"},
		{verb: "*", resource: "*", ns: nsCoreDNS},
	}
	canI(ctx, t, k, "system:serviceaccount:"+nsSkylb+":skylb", checks)
}

// namespacedRBACChecks applies the RBAC objects of the overlay of a skylb
// watching teamNamespaces (manifests/namespaced) and asks the API server what
// skylb's ServiceAccount may do: in those namespaces what it does in any, and
// nothing elsewhere but list and watch Nodes and CRDs.
func namespacedRBACChecks(ctx context.Context, t *testing.T, k kubectl, rr *rendering) {
	applyRBAC(ctx, t, k, rr)
	var checks []access
	for _, ns := range append(slices.Clone(teamNamespaces), "default", "") {
		watched := ns != "" && slices.Contains(teamNamespaces, ns)
		for _, c := range []access{
			{verb: "get", resource: "services"}, {verb: "list", resource: "services"}, {verb: "watch", resource: "services"},
			{verb: "list", resource: ing}, {verb: "watch", resource: ing},
			{verb: "list", resource: eps}, {verb: "watch", resource: eps},
			{verb: "list", resource: "httproutes.gateway.networking.k8s.io"}, {verb: "watch", resource: "gateways.gateway.networking.k8s.io"},
			{verb: "list", resource: "dnsendpoints.externaldns.k8s.io"}, {verb: "patch", resource: "dnsendpoints.externaldns.k8s.io", sub: "status"},
			{verb: "update", resource: "services", sub: "status"}, {verb: "patch", resource: "services", sub: "status"},
			{verb: "patch", resource: "services"},
			{verb: "create", resource: "events"}, {verb: "patch", resource: "events"},
		} {
			c.ns, c.allowed = ns, watched
			checks = append(checks, c)
		}
		for _, c := range []access{
			{verb: "update", resource: "services"}, {verb: "delete", resource: eps}, {verb: "get", resource: "secrets"},
			{verb: "list", resource: "pods"}, {verb: "delete", resource: "events"},
		} {
			c.ns = ns
			checks = append(checks, c)
		}
	}
	checks = append(checks,
		access{verb: "list", resource: "nodes", allowed: true},
		access{verb: "watch", resource: "nodes", allowed: true},
		access{verb: "list", resource: "customresourcedefinitions.apiextensions.k8s.io", allowed: true},
		access{verb: "watch", resource: "customresourcedefinitions.apiextensions.k8s.io", allowed: true},
		access{verb: "update", resource: "nodes", name: "node-1"},
		access{verb: "create", resource: leases, ns: nsSkylb, allowed: true},
		access{verb: "update", resource: leases, name: "skylb", ns: nsSkylb, allowed: true},
		access{verb: "*", resource: "*"},
	)
	canI(ctx, t, k, "system:serviceaccount:"+nsSkylb+":skylb", checks)
}

// canI asks the API server each check as saUser, "kubectl auth can-i".
func canI(ctx context.Context, t *testing.T, k kubectl, saUser string, checks []access) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			target := c.resource
			if c.name != "" {
				target += "/" + c.name
			}
			args := []string{"auth", "can-i", c.verb, target, "--as=" + saUser}
			if c.sub != "" {
				args = append(args, "--subresource="+c.sub)
			}
			if c.ns == "" {
				args = append(args, "--all-namespaces")
			} else {
				args = append(args, "--namespace="+c.ns)
			}
			out, stderr, err := k.run(ctx, nil, args...)
			answer := strings.TrimSpace(out)
			var ee *exec.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1 && answer == "no") {
				t.Errorf("%v", err)
				return
			}
			if stderr != "" {
				t.Errorf("can-i %s: %s", c, stderr)
			}
			if (answer == "yes") != c.allowed {
				t.Errorf("%s: can-i %s: %s, want allowed=%v", saUser, c, answer, c.allowed)
			}
		}()
	}
	wg.Wait()
}
