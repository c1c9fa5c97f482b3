// Package chart proves the Helm chart manifests/chart with the real helm
// (bin/helm, built from the Helm module by scripts/build-bins.sh helm) and the
// real kustomize of kubectl:
//
//   - helm lint --strict passes, with the defaults and with every optional
//     part on;
//   - the default render is, object for object, the kustomize render of
//     manifests/ less its Namespace, and with monitoring.enabled that of
//     manifests/ with the component monitoring/, so the chart and the
//     manifests cannot drift;
//   - settings, image and replicas render as the same change made in a
//     kustomize overlay does, down to the ConfigMap's hashed name;
//   - the other values reach the objects they are for.
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/skylb/skylb/test/stack"
)

// output runs name with args in dir and returns its standard output; the
// error carries its standard error.
func output(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// run is output that fails the test on an error.
func run(t *testing.T, dir, name string, args ...string) []byte {
	t.Helper()
	out, err := output(dir, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// object is a decoded Kubernetes object.
type object = map[string]any

// decode returns the objects of a multi-document YAML stream by their key
// (see key).
func decode(t *testing.T, stream []byte) map[string]object {
	t.Helper()
	objs := map[string]object{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var obj object
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if obj == nil {
			continue
		}
		k := key(obj)
		if _, dup := objs[k]; dup {
			t.Fatalf("%s rendered twice", k)
		}
		objs[k] = obj
	}
}

// key names an object: "Kind namespace/name".
func key(obj object) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", obj["kind"], meta["namespace"], meta["name"])
}

// helmTemplate renders the chart as release name in namespace with the
// extra helm arguments.
func helmTemplate(t *testing.T, root, name, namespace string, args ...string) map[string]object {
	t.Helper()
	args = append([]string{"template", name, "manifests/chart", "--namespace", namespace}, args...)
	return decode(t, run(t, root, stack.Bin(t, root, "helm"), args...))
}

// kustomize renders dir (relative to root) with the kustomize of kubectl,
// of the Kubernetes version the tests run.
func kustomize(t *testing.T, root, dir string) map[string]object {
	t.Helper()
	return decode(t, run(t, root, stack.Bin(t, root, "kubectl"), "kustomize", dir))
}

// overlay writes a kustomization of manifests/ with the given extra lines
// into a new directory and returns its path relative to root (kustomize
// accepts no absolute path to a base).
func overlay(t *testing.T, root, extra string) string {
	t.Helper()
	dir := t.TempDir()
	base, err := filepath.Rel(dir, filepath.Join(root, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"resources:\n- " + base + "\n" + strings.ReplaceAll(extra, "BASE", base)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// withoutNamespace drops the Namespace skylb of a kustomize render: a chart
// does not own the namespace it is installed in (helm install
// --create-namespace, or the user's), so the chart's README asks for its Pod
// Security labels instead. Nothing else of the two renders may differ.
func withoutNamespace(t *testing.T, objs map[string]object) map[string]object {
	t.Helper()
	k := "Namespace <nil>/skylb"
	if _, ok := objs[k]; !ok {
		t.Fatalf("the kustomize render has no %s", k)
	}
	delete(objs, k)
	return objs
}

// same fails the test for every object only one side has and every one
// that differs.
func same(t *testing.T, chart, kust map[string]object) {
	t.Helper()
	keys := map[string]bool{}
	for k := range chart {
		keys[k] = true
	}
	for k := range kust {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		c, inChart := chart[k]
		m, inKust := kust[k]
		switch {
		case !inChart:
			t.Errorf("%s: in the kustomize render, not in the chart's", k)
		case !inKust:
			t.Errorf("%s: in the chart's render, not in the kustomize one", k)
		default:
			if d := cmp.Diff(m, c); d != "" {
				t.Errorf("%s differs (-kustomize +chart):\n%s", k, d)
			}
		}
	}
	if len(chart) < 8 {
		t.Errorf("Got %d objects from the chart, want at least 8", len(chart))
	}
}

func TestLint(t *testing.T) {
	root := stack.Root(t)
	bin := stack.Bin(t, root, "helm")
	for _, args := range [][]string{
		nil,
		{"--set", "monitoring.enabled=true", "--set", "monitoring.labels.release=kube-prometheus-stack",
			"--set", "settings.load-balancer-class=skylb.io/dns", "--set", "extraArgs={--log-level=debug}",
			"--set", "nodeSelector.kubernetes\\.io/os=linux", "--set", "podAnnotations.a=b",
			"--set", "namespaces={team-a,team-b}", "--set", "dnsEndpointCRD=true"},
	} {
		out := run(t, root, bin, append([]string{"lint", "--strict", "manifests/chart"}, args...)...)
		if !bytes.Contains(out, []byte("0 chart(s) failed")) {
			t.Errorf("helm lint %v:\n%s", args, out)
		}
	}
}

// TestDefaultsAreTheManifests: the default render is manifests/ as kustomize
// renders it, less the Namespace (see withoutNamespace). The ConfigMap's
// name is the same too: the chart computes kustomize's hash.
func TestDefaultsAreTheManifests(t *testing.T) {
	root := stack.Root(t)
	same(t, helmTemplate(t, root, "skylb", "skylb"), withoutNamespace(t, kustomize(t, root, "manifests")))
}

// TestMonitoringIsTheComponent: with monitoring.enabled, the render is
// manifests/ with the component monitoring/. The chart reads copies of the
// component's files (helm reads no file outside the chart).
func TestMonitoringIsTheComponent(t *testing.T) {
	root := stack.Root(t)
	for _, f := range []string{"servicemonitor.yaml", "prometheusrule.yaml", "dashboard.json"} {
		want, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "manifests", "chart", "files", f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("manifests/chart/files/%s is not manifests/monitoring/%s (%v): copy it", f, f, err)
		}
	}
	dir := overlay(t, root, "components:\n- BASE/monitoring\n")
	chart := helmTemplate(t, root, "skylb", "skylb", "--set", "monitoring.enabled=true")
	same(t, chart, withoutNamespace(t, kustomize(t, root, dir)))
	for _, k := range []string{"ServiceMonitor skylb/skylb", "PrometheusRule skylb/skylb", "ConfigMap skylb/skylb-dashboard"} {
		if _, ok := chart[k]; !ok {
			t.Errorf("Got no %s with monitoring.enabled, want it", k)
		}
	}
}

// TestDNSEndpointCRDIsTheComponent: with dnsEndpointCRD, the render is
// manifests/ with the component dnsendpoint/, from a copy of its CRD.
func TestDNSEndpointCRDIsTheComponent(t *testing.T) {
	root := stack.Root(t)
	want, err := os.ReadFile(filepath.Join(root, "manifests", "dnsendpoint", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "manifests", "chart", "files", "dnsendpoint-crd.yaml"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("manifests/chart/files/dnsendpoint-crd.yaml is not manifests/dnsendpoint/crd.yaml (%v): copy it", err)
	}
	dir := overlay(t, root, "components:\n- BASE/dnsendpoint\n")
	chart := helmTemplate(t, root, "skylb", "skylb", "--set", "dnsEndpointCRD=true")
	same(t, chart, withoutNamespace(t, kustomize(t, root, dir)))
	if _, ok := chart["CustomResourceDefinition <nil>/dnsendpoints.externaldns.k8s.io"]; !ok {
		t.Error("Got no DNSEndpoint CRD with dnsEndpointCRD, want it")
	}
	if _, ok := helmTemplate(t, root, "skylb", "skylb")["CustomResourceDefinition <nil>/dnsendpoints.externaldns.k8s.io"]; ok {
		t.Error("Got the DNSEndpoint CRD by default, want it only with dnsEndpointCRD")
	}
}

// TestNamespacesAreTheScopedOverlay: with namespaces, the render is the
// overlay of "Scoping" in manifests/README.md: manifests/ with the component
// namespaced, a RoleBinding per namespace and SKYLB_NAMESPACE.
func TestNamespacesAreTheScopedOverlay(t *testing.T) {
	root := stack.Root(t)
	dir := stack.ReadmeOverlay(t, root, "manifests/README.md", "my-skylb-scoped")
	chart := helmTemplate(t, root, "skylb", "skylb", "--set", "namespaces={team-a,team-b}")
	same(t, chart, withoutNamespace(t, kustomize(t, root, dir)))
	for _, k := range []string{"RoleBinding team-a/skylb", "RoleBinding team-b/skylb", "ClusterRole <nil>/skylb-namespaced"} {
		if _, ok := chart[k]; !ok {
			t.Errorf("Got no %s with namespaces, want it", k)
		}
	}
}

// TestValuesAreTheOverlay: zone, ownerId, settings, image and replicas render
// as an overlay of manifests/ that makes the same changes the kustomize way.
func TestValuesAreTheOverlay(t *testing.T) {
	root := stack.Root(t)
	dir := overlay(t, root, `configMapGenerator:
- name: skylb-config
  namespace: skylb
  behavior: merge
  literals:
  - SKYLB_ZONE=lb.example.net,lb2.example.net
  - SKYLB_OWNER_ID=east
  - SKYLB_LOAD_BALANCER_CLASS=skylb.io/dns
  - SKYLB_NAMESERVER=ns1=192.0.2.11,ns2=192.0.2.12
  - SKYLB_TTL=60
images:
- name: ghcr.io/skylb/skylb
  newName: registry.example.net/mirror/skylb
  newTag: v0.2.0
replicas:
- name: skylb
  count: 3
`)
	chart := helmTemplate(t, root, "skylb", "skylb",
		"--set", "zone={lb.example.net,lb2.example.net}",
		"--set", "ownerId=east",
		"--set", "settings.load-balancer-class=skylb.io/dns",
		"--set-json", `settings.nameserver=["ns1=192.0.2.11","ns2=192.0.2.12"]`,
		"--set", "settings.ttl=60",
		"--set", "image.repository=registry.example.net/mirror/skylb",
		"--set", "image.tag=v0.2.0",
		"--set", "replicas=3")
	same(t, chart, withoutNamespace(t, kustomize(t, root, dir)))
}

// as converts a decoded object to its typed form.
func as[T any](t *testing.T, objs map[string]object, k string) *T {
	t.Helper()
	obj, ok := objs[k]
	if !ok {
		t.Fatalf("no %s in the render", k)
	}
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return &v
}

// container returns the Deployment's container skylb.
func container(t *testing.T, objs map[string]object, k string) corev1.Container {
	t.Helper()
	d := as[appsv1.Deployment](t, objs, k)
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", k, len(d.Spec.Template.Spec.Containers))
	}
	return d.Spec.Template.Spec.Containers[0]
}

// TestValuesReachTheObjects: each value that kustomize has no field for
// changes what it is for.
func TestValuesReachTheObjects(t *testing.T) {
	root := stack.Root(t)
	const deploy = "Deployment skylb/skylb"

	t.Run("extraArgs and extraEnv", func(t *testing.T) {
		objs := helmTemplate(t, root, "skylb", "skylb",
			"--set", "extraArgs={--log-level=debug,--source=service}",
			"--set", "extraEnv[0].name=SKYLB_TTL", "--set-string", "extraEnv[0].value=60")
		c := container(t, objs, deploy)
		if n := len(c.Args); n < 2 || !slices.Equal(c.Args[n-2:], []string{"--log-level=debug", "--source=service"}) {
			t.Errorf("Got args %q, want --log-level=debug --source=service last", c.Args)
		}
		want := []corev1.EnvVar{{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
			{Name: "SKYLB_TTL", Value: "60"}}
		if d := cmp.Diff(want, c.Env); d != "" {
			t.Errorf("Got env (-want +got):\n%s", d)
		}
	})

	t.Run("image pull policy and resources", func(t *testing.T) {
		objs := helmTemplate(t, root, "skylb", "skylb",
			"--set", "image.pullPolicy=Always",
			"--set", "resources.limits.memory=1Gi", "--set", "resources.requests.cpu=100m")
		c := container(t, objs, deploy)
		if c.ImagePullPolicy != corev1.PullAlways {
			t.Errorf("Got imagePullPolicy %q, want Always", c.ImagePullPolicy)
		}
		if got := c.Resources.Limits.Memory().String(); got != "1Gi" {
			t.Errorf("Got memory limit %s, want 1Gi", got)
		}
		if got := c.Resources.Requests.Cpu().String(); got != "100m" {
			t.Errorf("Got cpu request %s, want 100m", got)
		}
		if got := c.Resources.Requests.Memory().String(); got != "96Mi" {
			t.Errorf("Got memory request %s, want the default 96Mi", got)
		}
	})

	t.Run("etcd and nameservers", func(t *testing.T) {
		objs := helmTemplate(t, root, "skylb", "skylb",
			"--set-json", `etcd.endpoints=["https://etcd-0.example.net:2379","https://etcd-1.example.net:2379"]`,
			"--set", "etcd.clientSecret=dns-etcd-client",
			"--set", "nameserverSelector=app.kubernetes.io/name=coredns")
		c := container(t, objs, deploy)
		for _, want := range []string{
			"--etcd-endpoints=https://etcd-0.example.net:2379,https://etcd-1.example.net:2379",
			"--nameserver-selector=app.kubernetes.io/name=coredns",
		} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("Got args %q, want %s among them", c.Args, want)
			}
		}
		d := as[appsv1.Deployment](t, objs, deploy)
		if s := d.Spec.Template.Spec.Volumes[0].Secret; s == nil || s.SecretName != "dns-etcd-client" {
			t.Errorf("Got volume %+v, want the Secret dns-etcd-client", d.Spec.Template.Spec.Volumes[0])
		}
	})

	t.Run("pod placement", func(t *testing.T) {
		objs := helmTemplate(t, root, "skylb", "skylb",
			"--set", "nodeSelector.node-role\\.kubernetes\\.io/dns=",
			"--set", "tolerations[0].key=dns", "--set", "tolerations[0].operator=Exists",
			"--set", "priorityClassName=system-cluster-critical",
			"--set", "podAnnotations.example\\.net/team=dns",
			"--set", "imagePullSecrets[0].name=mirror")
		spec := as[appsv1.Deployment](t, objs, deploy).Spec.Template
		if _, ok := spec.Spec.NodeSelector["node-role.kubernetes.io/dns"]; !ok {
			t.Errorf("Got nodeSelector %v, want node-role.kubernetes.io/dns", spec.Spec.NodeSelector)
		}
		if len(spec.Spec.Tolerations) != 1 || spec.Spec.Tolerations[0].Key != "dns" {
			t.Errorf("Got tolerations %+v, want one of key dns", spec.Spec.Tolerations)
		}
		if spec.Spec.PriorityClassName != "system-cluster-critical" {
			t.Errorf("Got priorityClassName %q, want system-cluster-critical", spec.Spec.PriorityClassName)
		}
		if spec.Annotations["example.net/team"] != "dns" {
			t.Errorf("Got pod annotations %v, want example.net/team=dns", spec.Annotations)
		}
		if len(spec.Spec.ImagePullSecrets) != 1 || spec.Spec.ImagePullSecrets[0].Name != "mirror" {
			t.Errorf("Got imagePullSecrets %+v, want mirror", spec.Spec.ImagePullSecrets)
		}
	})

	t.Run("release name and namespace", func(t *testing.T) {
		objs := helmTemplate(t, root, "dns", "lb")
		c := container(t, objs, "Deployment lb/dns-skylb")
		if !slices.Contains(c.Args, "--leader-elect-id=dns-skylb") {
			t.Errorf("Got args %q, want --leader-elect-id=dns-skylb among them", c.Args)
		}
		role := as[rbacv1.Role](t, objs, "Role lb/dns-skylb-leader-election")
		if !slices.Contains(role.Rules[1].ResourceNames, "dns-skylb") {
			t.Errorf("Got Role rules %+v, want the Lease dns-skylb granted", role.Rules)
		}
		crb := as[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding <nil>/dns-skylb")
		if s := crb.Subjects[0]; s.Name != "dns-skylb" || s.Namespace != "lb" || crb.RoleRef.Name != "dns-skylb" {
			t.Errorf("Got ClusterRoleBinding %+v, want dns-skylb bound to the ServiceAccount lb/dns-skylb", crb)
		}
		d := as[appsv1.Deployment](t, objs, "Deployment lb/dns-skylb")
		if d.Spec.Template.Spec.ServiceAccountName != "dns-skylb" {
			t.Errorf("Got serviceAccountName %q, want dns-skylb", d.Spec.Template.Spec.ServiceAccountName)
		}
		cm := c.EnvFrom[0].ConfigMapRef.Name
		if _, ok := objs["ConfigMap lb/"+cm]; !ok || !strings.HasPrefix(cm, "dns-skylb-config-") {
			t.Errorf("Got envFrom of the ConfigMap %s, want a rendered dns-skylb-config-<hash>", cm)
		}
		if _, ok := objs["Service lb/dns-skylb-metrics"]; !ok {
			t.Error("Got no Service lb/dns-skylb-metrics, want it")
		}
	})

	t.Run("settings roll the Deployment", func(t *testing.T) {
		def := container(t, helmTemplate(t, root, "skylb", "skylb"), deploy)
		objs := helmTemplate(t, root, "skylb", "skylb", "--set", "settings.record-expiry=2m")
		c := container(t, objs, deploy)
		name := c.EnvFrom[0].ConfigMapRef.Name
		if name == def.EnvFrom[0].ConfigMapRef.Name {
			t.Errorf("Got the ConfigMap %s with a setting changed, want a new name", name)
		}
		cm := as[corev1.ConfigMap](t, objs, "ConfigMap skylb/"+name)
		if cm.Data["SKYLB_RECORD_EXPIRY"] != "2m" {
			t.Errorf("Got ConfigMap data %v, want SKYLB_RECORD_EXPIRY=2m", cm.Data)
		}
	})

	t.Run("views", func(t *testing.T) {
		objs := helmTemplate(t, root, "skylb", "skylb", "--set", "views.internal=pods", "--set", "views.lan=cluster-ip")
		c := container(t, objs, deploy)
		cm := as[corev1.ConfigMap](t, objs, "ConfigMap skylb/"+c.EnvFrom[0].ConfigMapRef.Name)
		if got := cm.Data["SKYLB_VIEW"]; got != "internal=pods,lan=cluster-ip" {
			t.Errorf("Got SKYLB_VIEW %q, want internal=pods,lan=cluster-ip", got)
		}
	})

	t.Run("monitoring labels", func(t *testing.T) {
		objs := helmTemplate(t, root, "skylb", "skylb",
			"--set", "monitoring.enabled=true", "--set", "monitoring.labels.release=kube-prometheus-stack")
		for _, k := range []string{"ServiceMonitor skylb/skylb", "PrometheusRule skylb/skylb"} {
			meta, _ := objs[k]["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			if labels["release"] != "kube-prometheus-stack" {
				t.Errorf("Got %s labels %v, want release=kube-prometheus-stack", k, labels)
			}
		}
	})

	t.Run("values refused", func(t *testing.T) {
		for set, want := range map[string]string{
			"settings.zone=a.example.net": "settings.zone: set it with the value zone or ownerId",
			"settings.owner-id=east":      "settings.owner-id: set it with the value zone or ownerId",
			"settings.namespace=team-a":   "settings.namespace: set it with the value namespaces",
			"namespaces={Team-A}":         "at '/namespaces/0'",
			"zone=":                       "at '/zone'",
			"replicas=two":                "at '/replicas': got string, want integer",
			"image.pullpolicy=Always":     "additional properties 'pullpolicy' not allowed",
			"views.Internal=pods":         "does not match pattern",
			"views.internal=everywhere":   "at '/views/internal'",
		} {
			_, err := output(root, stack.Bin(t, root, "helm"), "template", "skylb", "manifests/chart", "--set", set)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Got helm template --set %s: %v, want the error %q", set, err, want)
			}
		}
	})
}
