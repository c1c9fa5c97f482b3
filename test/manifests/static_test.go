package manifests

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/skylb/skylb/test/stack"
)

var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ClusterIssuer": true, "CustomResourceDefinition": true,
}

func staticChecks(t *testing.T, root string, r map[string]*rendering, certs *certSet) {
	t.Run("namespaces", func(t *testing.T) { checkNamespaces(t, r) })
	t.Run("ConfigMaps", func(t *testing.T) { checkConfigMaps(t, root, r) })
	t.Run("CoreDNS DaemonSet", func(t *testing.T) { checkDaemonSet(t, r) })
	t.Run("CoreDNS reloader", func(t *testing.T) { checkReloader(t, r) })
	t.Run("CoreDNS NodePort Service", func(t *testing.T) { checkNodePort(t, r["coredns"]) })
	// Services and PodDisruptionBudgets select pods, and target their ports.
	t.Run("selectors", func(t *testing.T) {
		for _, rr := range r {
			checkSelectors(t, rr)
		}
	})
	// skylb's RBAC is exactly what it uses.
	t.Run("skylb RBAC rules", func(t *testing.T) { checkRBACRules(t, r["skylb"]) })
	t.Run("images", func(t *testing.T) { checkImages(t, r) })
	t.Run("Secrets", func(t *testing.T) { checkSecrets(t, r, certs) })
	t.Run("etcd certificate names", func(t *testing.T) { checkEtcdNames(t, r, certs) })
	t.Run("Flux chain", func(t *testing.T) { checkFluxChain(t, root, r["flux"]) })
}

// checkNamespaces checks that nothing lands in whatever namespace kubectl
// happens to use.
func checkNamespaces(t *testing.T, r map[string]*rendering) {
	for _, rr := range r {
		for _, o := range rr.objs {
			if !clusterScoped[o.GetKind()] && o.GetNamespace() == "" {
				t.Errorf("%s: %s %s has no namespace", rr.name, o.GetKind(), o.GetName())
			}
		}
	}
}

// checkConfigMaps checks that the ConfigMaps hold the repository's files
// themselves.
func checkConfigMaps(t *testing.T, root string, r map[string]*rendering) {
	same := func(rr *rendering, ns, cmName, key, file string) {
		cm := as[corev1.ConfigMap](t, rr.get(t, "ConfigMap", ns, cmName))
		want, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[key] != string(want) {
			t.Errorf("%s: ConfigMap %s key %s differs from %s", rr.name, cmName, key, file)
		}
	}
	job := as[batchv1.Job](t, r["etcd"].get(t, "Job", nsEtcd, "etcd-rbac-bootstrap"))
	jc := job.Spec.Template.Spec.Containers[0]
	same(r["etcd"], nsEtcd, configMapMount(t, job.Spec.Template.Spec, jc, "/scripts"), "rbac-bootstrap.sh", "etcd/rbac-bootstrap.sh")
	dep := as[appsv1.Deployment](t, r["coredns"].get(t, "Deployment", nsCoreDNS, "coredns"))
	dc := dep.Spec.Template.Spec.Containers[0]
	same(r["coredns"], nsCoreDNS, configMapMount(t, dep.Spec.Template.Spec, dc, "/etc/coredns/conf"), "Corefile", "coredns/Corefile")
}

// checkDaemonSet checks that the DaemonSet variant runs the Deployment's
// container, with host ports, and that skylb's --nameserver-selector finds
// its pods and no others.
func checkDaemonSet(t *testing.T, r map[string]*rendering) {
	dep := as[appsv1.Deployment](t, r["coredns"].get(t, "Deployment", nsCoreDNS, "coredns"))
	dc := dep.Spec.Template.Spec.Containers[0]
	ds := as[appsv1.DaemonSet](t, r["coredns+hostnetwork"].get(t, "DaemonSet", nsCoreDNS, "coredns"))
	hc := ds.Spec.Template.Spec.Containers[0]
	for _, p := range hc.Ports {
		if p.Name == "dns" || p.Name == "dns-tcp" {
			if p.HostPort != 53 || p.ContainerPort != 1053 {
				t.Errorf("DaemonSet port %s: host %d → container %d, want 53 → 1053", p.Name, p.HostPort, p.ContainerPort)
			}
		}
	}
	a, b := dc.DeepCopy(), hc.DeepCopy()
	a.Ports, b.Ports = nil, nil
	if !equalJSON(a, b) {
		t.Error("the DaemonSet's container differs from the Deployment's in more than its ports")
	}
	if !equalJSON(dep.Spec.Template.Spec.Containers[1:], ds.Spec.Template.Spec.Containers[1:]) ||
		!equalJSON(dep.Spec.Template.Spec.ShareProcessNamespace, ds.Spec.Template.Spec.ShareProcessNamespace) {
		t.Error("the DaemonSet's reloader differs from the Deployment's")
	}
	if !equalJSON(dep.Spec.Template.Spec.Volumes, ds.Spec.Template.Spec.Volumes) ||
		!equalJSON(dep.Spec.Template.Spec.SecurityContext, ds.Spec.Template.Spec.SecurityContext) {
		t.Error("the DaemonSet's volumes or security context differ from the Deployment's")
	}
	if ds.Spec.Template.Spec.NodeSelector["skylb.io/dns"] != "true" {
		t.Error("the DaemonSet does not select nodes labelled skylb.io/dns=true")
	}
	hn := r["coredns+hostnetwork"]
	if len(hn.ofKind("Deployment")) > 0 || len(hn.filter(func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Service" && o.GetName() == "coredns"
	})) > 0 {
		t.Error("the hostnetwork variant keeps the Deployment or the NodePort Service")
	}
	// skylb's --nameserver-selector finds the DaemonSet's pods.
	nsSvc := as[corev1.Service](t, hn.get(t, "Service", nsCoreDNS, "coredns-nameservers"))
	skylbArgs := as[appsv1.Deployment](t, r["skylb"].get(t, "Deployment", nsSkylb, "skylb")).Spec.Template.Spec.Containers[0].Args
	selector, _ := flagValue(skylbArgs, "nameserver-selector")
	if sel, err := labels.Parse(selector); err != nil || selector == "" || !sel.Matches(labels.Set(nsSvc.Labels)) {
		t.Errorf("skylb --nameserver-selector=%q does not select the Service coredns-nameservers (labels %v)", selector, nsSvc.Labels)
	}
	if !labels.SelectorFromSet(nsSvc.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) || nsSvc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Error("the Service coredns-nameservers is not a headless Service of the DaemonSet's pods")
	}
	// Nor of the Deployment's, which kubectl apply leaves beside the DaemonSet:
	// their nodes do not serve port 53.
	if labels.SelectorFromSet(nsSvc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) ||
		labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Error("the Service coredns-nameservers or the DaemonSet selects the Deployment's pods too")
	}
	if sel, _ := labels.Parse(selector); sel != nil && sel.Matches(labels.Set(r["coredns"].get(t, "Service", nsCoreDNS, "coredns").GetLabels())) {
		t.Error("skylb --nameserver-selector selects the NodePort Service, whose nodes do not serve port 53")
	}
}

// checkNodePort checks that the NodePort Service reaches the container's port.
func checkNodePort(t *testing.T, rr *rendering) {
	svc := as[corev1.Service](t, rr.get(t, "Service", nsCoreDNS, "coredns"))
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 2 {
		t.Errorf("CoreDNS Service: type %s with %d ports, want NodePort with UDP and TCP", svc.Spec.Type, len(svc.Spec.Ports))
	}
	for _, p := range svc.Spec.Ports {
		if p.Port != 53 || p.NodePort == 0 {
			t.Errorf("CoreDNS Service port %s: %d (node port %d), want 53 and a fixed node port", p.Name, p.Port, p.NodePort)
		}
	}
}

// checkImages checks that the images are set through kustomize, each with a
// version tag.
func checkImages(t *testing.T, r map[string]*rendering) {
	images := map[string]string{}
	for _, rr := range r {
		for _, o := range rr.filter(func(o *unstructured.Unstructured) bool {
			return slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet", "Job"}, o.GetKind())
		}) {
			pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			for _, field := range []string{"initContainers", "containers"} {
				cs, _, _ := unstructured.NestedSlice(pod, field)
				for _, c := range cs {
					img := c.(map[string]any)["image"].(string)
					images[img] = rr.name
				}
			}
		}
	}
	for _, want := range []string{"ghcr.io/skylb/skylb:v0.1.0", "registry.k8s.io/etcd:3.6.8-0", "coredns/coredns:1.15.0", "debian:12-slim"} {
		if _, ok := images[want]; !ok {
			t.Errorf("no workload runs image %s (images: %v)", want, slices.Sorted(maps.Keys(images)))
		}
	}
	// A version tag on every image: "latest" (or none) is pulled every time,
	// which fails in an air-gapped cluster.
	for img := range images {
		if _, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":"); !ok || tag == "latest" {
			t.Errorf("image %s has no version tag", img)
		}
	}
}

// checkReloader checks that the reloader beside CoreDNS reads etcd as
// CoreDNS does (the same members, the same client files), finds CoreDNS's
// pid file, may signal it, and runs the skylb image of manifests/.
func checkReloader(t *testing.T, r map[string]*rendering) {
	pod := as[appsv1.Deployment](t, r["coredns"].get(t, "Deployment", nsCoreDNS, "coredns")).Spec.Template.Spec
	if len(pod.Containers) != 2 || pod.Containers[1].Name != "reloader" {
		t.Fatalf("CoreDNS's pod has no container reloader beside CoreDNS")
	}
	coredns, reloader := pod.Containers[0], pod.Containers[1]
	if pod.ShareProcessNamespace == nil || !*pod.ShareProcessNamespace {
		t.Error("CoreDNS's pod does not share its process namespace: the reloader cannot signal CoreDNS")
	}
	coreEnv, reloaderEnv := r["coredns"].env(t, nsCoreDNS, coredns), r["coredns"].env(t, nsCoreDNS, reloader)
	for coreVar, reloaderVar := range map[string]string{"SKYLB_ETCD_CA": "SKYLB_ETCD_CA_FILE",
		"SKYLB_ETCD_CERT": "SKYLB_ETCD_CERT_FILE", "SKYLB_ETCD_KEY": "SKYLB_ETCD_KEY_FILE"} {
		if a, b := coreEnv[coreVar], reloaderEnv[reloaderVar]; a == "" || a != b {
			t.Errorf("the reloader's %s is %q, CoreDNS's %s %q", reloaderVar, b, coreVar, a)
		}
	}
	members := strings.Join([]string{coreEnv["SKYLB_ETCD_ENDPOINT"], coreEnv["SKYLB_ETCD_ENDPOINT_2"], coreEnv["SKYLB_ETCD_ENDPOINT_3"]}, ",")
	if got := reloaderEnv["SKYLB_ETCD_ENDPOINTS"]; got != members {
		t.Errorf("the reloader reads etcd at %q, CoreDNS at %q", got, members)
	}
	pidFile := ""
	if i := slices.Index(coredns.Args, "-pidfile"); i >= 0 && i+1 < len(coredns.Args) {
		pidFile = coredns.Args[i+1]
	}
	if got, _ := flagValue(reloader.Args, "pid-file"); pidFile == "" || got != pidFile || reloader.Args[0] != "coredns-reloader" {
		t.Errorf("the reloader runs %q, CoreDNS writes its pid to %q", reloader.Args, pidFile)
	}
	mountOf := func(c corev1.Container) string {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(pidFile, m.MountPath+"/") {
				return m.Name
			}
		}
		return ""
	}
	if a, b := mountOf(coredns), mountOf(reloader); a == "" || a != b {
		t.Errorf("CoreDNS's pid file %s is in volume %q, the reloader's in %q", pidFile, a, b)
	}
	skylb := as[appsv1.Deployment](t, r["skylb"].get(t, "Deployment", nsSkylb, "skylb")).Spec.Template.Spec.Containers[0].Image
	if reloader.Image != skylb {
		t.Errorf("the reloader runs image %s, skylb %s", reloader.Image, skylb)
	}
}

// clientCNs are the client certificates' Secrets and their CN, the etcd user.
var clientCNs = map[string]string{
	nsEtcd + "/etcd-root-client": "root", nsSkylb + "/skylb-etcd-client": "skylb",
	nsCoreDNS + "/coredns-etcd-client": "coredns",
}

// checkSecrets checks that the Secrets the workloads mount are those
// gen-certs.sh writes and those the cert-manager components issue, with the
// same names.
func checkSecrets(t *testing.T, r map[string]*rendering, certs *certSet) {
	mounted := map[string]bool{}
	for _, name := range []string{"skylb", "etcd", "coredns", "coredns+hostnetwork"} {
		for _, o := range r[name].objs {
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				if s, ok := v.(map[string]any)["secret"].(map[string]any); ok {
					mounted[o.GetNamespace()+"/"+s["secretName"].(string)] = true
				}
			}
		}
	}
	issued := map[string]bool{}
	var certificates []*unstructured.Unstructured
	for _, name := range []string{"skylb+cert-manager", "etcd+cert-manager", "coredns+cert-manager"} {
		for _, o := range r[name].ofKind("Certificate") {
			if o.GetNamespace() == "cert-manager" { // the CA
				continue
			}
			sn, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
			issued[o.GetNamespace()+"/"+sn] = true
			certificates = append(certificates, o)
		}
	}
	written := map[string]bool{}
	for k := range certs.secrets {
		written[k] = true
	}
	if !maps.Equal(mounted, written) || !maps.Equal(mounted, issued) {
		t.Errorf("Secrets: mounted %v, written by gen-certs.sh %v, issued by cert-manager %v",
			slices.Sorted(maps.Keys(mounted)), slices.Sorted(maps.Keys(written)), slices.Sorted(maps.Keys(issued)))
	}
	want := clientCNs
	for _, o := range certificates {
		sn, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
		key := o.GetNamespace() + "/" + sn
		cn, _, _ := unstructured.NestedString(o.Object, "spec", "commonName")
		if want[key] != "" && cn != want[key] {
			t.Errorf("Certificate %s: CN %q, want %q (the etcd user)", key, cn, want[key])
		}
		if c := certs.x509[key]; c != nil && c.Subject.CommonName != cn {
			t.Errorf("Secret %s: CN %q from gen-certs.sh, %q from cert-manager", key, c.Subject.CommonName, cn)
		}
		if dns, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames"); len(dns) > 0 {
			if c := certs.x509[key]; c != nil && !equalSets(dns, c.DNSNames) {
				t.Errorf("Certificate %s: names %v, gen-certs.sh's %v", key, dns, c.DNSNames)
			}
		}
	}
}

// checkEtcdNames checks that every address a client dials is in etcd's
// certificates, and that the client certificates name their user.
func checkEtcdNames(t *testing.T, r map[string]*rendering, certs *certSet) {
	dc := as[appsv1.Deployment](t, r["coredns"].get(t, "Deployment", nsCoreDNS, "coredns")).Spec.Template.Spec.Containers[0]
	jc := as[batchv1.Job](t, r["etcd"].get(t, "Job", nsEtcd, "etcd-rbac-bootstrap")).Spec.Template.Spec.Containers[0]
	sts := as[appsv1.StatefulSet](t, r["etcd"].get(t, "StatefulSet", nsEtcd, "etcd"))
	hosts := map[string]bool{}
	addURL := func(u string) {
		u = strings.TrimPrefix(u, "https://")
		host, _, err := net.SplitHostPort(u)
		if err != nil {
			t.Errorf("URL %q: %v", u, err)
			return
		}
		hosts[host] = true
	}
	skylb := as[appsv1.Deployment](t, r["skylb"].get(t, "Deployment", nsSkylb, "skylb"))
	ep, _ := flagValue(skylb.Spec.Template.Spec.Containers[0].Args, "etcd-endpoints")
	addURL(ep)
	corednsEnv := r["coredns"].env(t, nsCoreDNS, dc)
	for _, name := range stack.EtcdEndpoints {
		addURL(corednsEnv[name])
	}
	addURL(r["etcd"].env(t, nsEtcd, jc)["ETCDCTL_ENDPOINTS"])
	for i := range *sts.Spec.Replicas {
		args := expand(sts.Spec.Template.Spec.Containers[0].Args, map[string]string{"POD_NAME": fmt.Sprintf("%s-%d", sts.Name, i)})
		adv, _ := flagValue(args, "advertise-client-urls")
		addURL(adv)
		hosts[fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", sts.Name, i, sts.Spec.ServiceName, sts.Namespace)] = true
	}
	for h := range hosts {
		certs.verify(t, nsEtcd+"/etcd-server", h, x509.ExtKeyUsageServerAuth)
		if strings.HasPrefix(h, sts.Name+"-") {
			certs.verify(t, nsEtcd+"/etcd-peer", h, x509.ExtKeyUsageServerAuth)
			certs.verify(t, nsEtcd+"/etcd-peer", h, x509.ExtKeyUsageClientAuth)
		}
	}
	for key, cn := range clientCNs {
		certs.verify(t, key, "", x509.ExtKeyUsageClientAuth)
		if c := certs.x509[key]; c != nil && c.Subject.CommonName != cn {
			t.Errorf("Secret %s: CN %q, want %q", key, c.Subject.CommonName, cn)
		}
	}
}

// checkFluxChain checks the chain etcd → CoreDNS → skylb of Flux's
// Kustomizations, each waiting for health, on paths and components that exist.
func checkFluxChain(t *testing.T, root string, flux *rendering) {
	paths := map[string]string{"skylb-etcd": "etcd", "skylb-coredns": "coredns", "skylb": "manifests"}
	deps := map[string]string{"skylb-coredns": "skylb-etcd", "skylb": "skylb-coredns"}
	comps := map[string][]string{"skylb-etcd": {"deploy/cert-manager"}, "skylb-coredns": {"deploy/cert-manager", "deploy/hostnetwork"}, "skylb": {"cert-manager"}}
	for name, path := range paths {
		k := flux.get(t, "Kustomization", "flux-system", name)
		p, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		if filepath.Clean(p) != path {
			t.Errorf("Flux Kustomization %s: path %q, want ./%s", name, p, path)
		}
		if w, _, _ := unstructured.NestedBool(k.Object, "spec", "wait"); !w {
			t.Errorf("Flux Kustomization %s does not wait for health", name)
		}
		d, _, _ := unstructured.NestedSlice(k.Object, "spec", "dependsOn")
		var got []string
		for _, x := range d {
			got = append(got, x.(map[string]any)["name"].(string))
		}
		if deps[name] != "" && !slices.Equal(got, []string{deps[name]}) || deps[name] == "" && len(got) > 0 {
			t.Errorf("Flux Kustomization %s depends on %v, want %q", name, got, deps[name])
		}
		src, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "name")
		flux.get(t, "GitRepository", "flux-system", src)
		for _, c := range comps[name] {
			if _, err := os.Stat(filepath.Join(root, path, c, "kustomization.yaml")); err != nil {
				t.Errorf("component %s of %s: %v", c, name, err)
			}
		}
	}
}

// checkSelectors checks that every Service and PodDisruptionBudget of rr
// selects the pods of a workload of rr, and that a Service's target ports are
// ports of those pods' containers.
func checkSelectors(t *testing.T, rr *rendering) {
	type podSet struct {
		ns     string
		labels map[string]string
		ports  []corev1.ContainerPort
	}
	var pods []podSet
	for _, o := range rr.objs {
		switch o.GetKind() {
		case "Deployment", "StatefulSet", "DaemonSet":
		default:
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
		pt := as[corev1.PodTemplateSpec](t, &unstructured.Unstructured{Object: tmpl})
		ps := podSet{ns: o.GetNamespace(), labels: pt.Labels}
		for _, c := range pt.Spec.Containers {
			ps.ports = append(ps.ports, c.Ports...)
		}
		pods = append(pods, ps)
	}
	selected := func(ns string, sel map[string]string) []podSet {
		var out []podSet
		for _, p := range pods {
			match := p.ns == ns && len(sel) > 0
			for k, v := range sel {
				match = match && p.labels[k] == v
			}
			if match {
				out = append(out, p)
			}
		}
		return out
	}
	for _, o := range rr.ofKind("Service") {
		svc := as[corev1.Service](t, o)
		ps := selected(svc.Namespace, svc.Spec.Selector)
		if len(ps) == 0 {
			t.Errorf("%s: Service %s selects no workload's pods", rr.name, svc.Name)
			continue
		}
		for _, sp := range svc.Spec.Ports {
			found := false
			for _, p := range ps {
				for _, cp := range p.ports {
					proto := cp.Protocol
					if proto == "" {
						proto = corev1.ProtocolTCP
					}
					sproto := sp.Protocol
					if sproto == "" {
						sproto = corev1.ProtocolTCP
					}
					byName := sp.TargetPort.StrVal != "" && sp.TargetPort.StrVal == cp.Name
					byNumber := sp.TargetPort.StrVal == "" && (sp.TargetPort.IntValue() == int(cp.ContainerPort) ||
						sp.TargetPort.IntValue() == 0 && sp.Port == cp.ContainerPort)
					found = found || (byName || byNumber) && proto == sproto
				}
			}
			if !found {
				t.Errorf("%s: Service %s port %s targets %s, which no selected container has", rr.name, svc.Name, sp.Name, sp.TargetPort.String())
			}
		}
	}
	for _, o := range rr.ofKind("PodDisruptionBudget") {
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		if len(selected(o.GetNamespace(), sel)) == 0 {
			t.Errorf("%s: PodDisruptionBudget %s selects no workload's pods", rr.name, o.GetName())
		}
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func equalSets(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// rule is one allowed (API group, resource, verb, resource name) of a role.
type rule struct{ scope, group, resource, verb, name string }

func (r rule) String() string {
	s := fmt.Sprintf("%s: %s %s.%s", r.scope, r.verb, r.resource, r.group)
	if r.name != "" {
		s += "/" + r.name
	}
	return s
}

func checkRBACRules(t *testing.T, rr *rendering) {
	got := map[rule]bool{}
	add := func(scope string, rules []rbacv1.PolicyRule) {
		for _, p := range rules {
			names := p.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range p.APIGroups {
				for _, res := range p.Resources {
					for _, v := range p.Verbs {
						for _, n := range names {
							if g == "*" || res == "*" || v == "*" {
								t.Errorf("%s: wildcard in %v", scope, p)
							}
							got[rule{scope, g, res, v, n}] = true
						}
					}
				}
			}
		}
	}
	for _, o := range rr.ofKind("ClusterRole") {
		add("cluster", as[rbacv1.ClusterRole](t, o).Rules)
	}
	for _, o := range rr.ofKind("Role") {
		role := as[rbacv1.Role](t, o)
		add("namespace "+role.Namespace, role.Rules)
	}
	want := map[rule]bool{}
	for _, w := range []rule{
		{"cluster", "", "services", "get", ""}, {"cluster", "", "services", "list", ""}, {"cluster", "", "services", "watch", ""},
		{"cluster", "", "services", "patch", ""},
		{"cluster", "networking.k8s.io", "ingresses", "list", ""}, {"cluster", "networking.k8s.io", "ingresses", "watch", ""},
		{"cluster", "discovery.k8s.io", "endpointslices", "list", ""}, {"cluster", "discovery.k8s.io", "endpointslices", "watch", ""},
		{"cluster", "", "nodes", "list", ""}, {"cluster", "", "nodes", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "gateways", "list", ""}, {"cluster", "gateway.networking.k8s.io", "gateways", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "httproutes", "list", ""}, {"cluster", "gateway.networking.k8s.io", "httproutes", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "grpcroutes", "list", ""}, {"cluster", "gateway.networking.k8s.io", "grpcroutes", "watch", ""},
		{"cluster", "gateway.networking.k8s.io", "tlsroutes", "list", ""}, {"cluster", "gateway.networking.k8s.io", "tlsroutes", "watch", ""},
		{"cluster", "externaldns.k8s.io", "dnsendpoints", "list", ""}, {"cluster", "externaldns.k8s.io", "dnsendpoints", "watch", ""},
		{"cluster", "externaldns.k8s.io", "dnsendpoints/status", "patch", ""},
		{"cluster", "apiextensions.k8s.io", "customresourcedefinitions", "list", ""}, {"cluster", "apiextensions.k8s.io", "customresourcedefinitions", "watch", ""},
		{"cluster", "", "services/status", "update", ""}, {"cluster", "", "services/status", "patch", ""},
		{"cluster", "", "events", "create", ""}, {"cluster", "", "events", "patch", ""},
		{"namespace skylb", "coordination.k8s.io", "leases", "create", ""},
		{"namespace skylb", "coordination.k8s.io", "leases", "get", "skylb"},
		{"namespace skylb", "coordination.k8s.io", "leases", "update", "skylb"},
		{"namespace skylb", "coordination.k8s.io", "leases", "watch", "skylb"},
	} {
		want[w] = true
	}
	for w := range want {
		if !got[w] {
			t.Errorf("RBAC lacks %s", w)
		}
	}
	for g := range got {
		if !want[g] {
			t.Errorf("RBAC grants more than skylb uses: %s", g)
		}
	}
	// The bindings bind the roles to skylb's ServiceAccount only.
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range rr.ofKind(kind) {
			b := as[rbacv1.RoleBinding](t, o)
			if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != "skylb" || b.Subjects[0].Namespace != nsSkylb {
				t.Errorf("%s %s binds %v", kind, b.Name, b.Subjects)
			}
		}
	}
}

// fluxPatches builds each Flux Kustomization the way kustomize-controller
// does (its patches and components added to the kustomization of its path,
// then postBuild's substitution from the ConfigMap skylb-settings), with the
// zone changed there, and checks that the new zone reaches the ConfigMaps and
// the pod templates: the substitution comes after kustomize has named the
// generated ConfigMaps, so only a changed pod template rolls the pods.
func fluxPatches(t *testing.T, root string, flux *rendering) {
	settings := as[corev1.ConfigMap](t, flux.get(t, "ConfigMap", "flux-system", "skylb-settings"))
	vars := maps.Clone(settings.Data)
	vars["SKYLB_ZONE"] = "flux.example.net"
	varRef := regexp.MustCompile(`\$\{([^}]*)\}`)
	for _, k := range flux.ofKind("Kustomization") {
		patches, _, _ := unstructured.NestedSlice(k.Object, "spec", "patches")
		if len(patches) == 0 {
			continue
		}
		from, _, _ := unstructured.NestedSlice(k.Object, "spec", "postBuild", "substituteFrom")
		if len(from) != 1 || from[0].(map[string]any)["name"] != "skylb-settings" {
			t.Errorf("Flux Kustomization %s: postBuild.substituteFrom %v, want the ConfigMap skylb-settings", k.GetName(), from)
		}
		path, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		src := filepath.Join(root, path)
		dst := filepath.Join(t.TempDir(), "src")
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		kfile := filepath.Join(dst, "kustomization.yaml")
		b, err := os.ReadFile(kfile)
		if err != nil {
			t.Fatal(err)
		}
		var kus map[string]any
		if err := utilyaml.Unmarshal(b, &kus); err != nil {
			t.Fatal(err)
		}
		kus["patches"] = patches
		if b, err = json.Marshal(kus); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kfile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(kubectlPath(root), "kustomize", dst).CombinedOutput()
		if err != nil {
			t.Fatalf("Flux Kustomization %s: build with its patches: %v\n%s", k.GetName(), err, out)
		}
		out = varRef.ReplaceAllFunc(out, func(ref []byte) []byte {
			name := string(varRef.FindSubmatch(ref)[1])
			v, ok := vars[name]
			if !ok {
				t.Errorf("Flux Kustomization %s: ${%s} is not in skylb-settings", k.GetName(), name)
			}
			return []byte(v)
		})
		inConfigMap, inTemplate := false, false
		for _, o := range decode(t, out) {
			switch o.GetKind() {
			case "ConfigMap":
				for _, v := range as[corev1.ConfigMap](t, o).Data {
					inConfigMap = inConfigMap || v == "flux.example.net"
				}
			case "Deployment", "DaemonSet":
				annotations, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
				for _, v := range annotations {
					inTemplate = inTemplate || strings.Contains(v, "zone=flux.example.net")
				}
			}
		}
		if !inConfigMap {
			t.Errorf("Flux Kustomization %s: the zone of skylb-settings does not reach the ConfigMap", k.GetName())
		}
		if !inTemplate {
			t.Errorf("Flux Kustomization %s: the zone of skylb-settings does not reach the pod template, so a change would not roll the pods", k.GetName())
		}
	}
}
