package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/skylb/skylb/test/stack"
)

func render(t *testing.T, root string, spec renderSpec) *rendering {
	t.Helper()
	dir := filepath.Join(root, spec.dir)
	if spec.readme != "" {
		dir = stack.ReadmeOverlay(t, root, readmePage, spec.readme)
	}
	if len(spec.components) > 0 || spec.namespace != "" {
		// kustomize takes relative paths only.
		overlay := t.TempDir()
		rel := func(p string) string {
			r, err := filepath.Rel(overlay, filepath.Join(root, p))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var comps []string
		for _, c := range spec.components {
			comps = append(comps, rel(c))
		}
		k := map[string]any{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"resources":  []string{rel(spec.dir)},
			"components": comps,
		}
		if spec.namespace != "" {
			k["namespace"] = spec.namespace
		}
		b, err := json.Marshal(k) // JSON is YAML
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		dir = overlay
	}
	out, err := exec.Command(kubectlPath(root), "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize (%s): %v\n%s", spec.name, err, ee.Stderr)
		}
		t.Fatalf("kubectl kustomize (%s): %v", spec.name, err)
	}
	objs := decode(t, out)
	if len(objs) == 0 {
		t.Fatalf("%s renders nothing", spec.name)
	}
	return &rendering{name: spec.name, yaml: out, objs: objs, crd: spec.crd}
}

// readmePage holds the overlays of renderSpec.readme.
const readmePage = "manifests/README.md"

func decode(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return objs
			}
			t.Fatalf("decode: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// encode writes objects as a YAML stream of JSON documents.
func encode(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
		buf.WriteString("\n")
	}
	return buf.Bytes()
}

func (r *rendering) filter(keep func(*unstructured.Unstructured) bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

func (r *rendering) ofKind(kind string) []*unstructured.Unstructured {
	return r.filter(func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
}

// get returns the object of that kind, namespace and name, failing the test
// when there is none.
func (r *rendering) get(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("%s: no %s %s/%s", r.name, kind, ns, name)
	return nil
}

// as converts an object to its typed form.
func as[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

// env resolves a container's environment as the kubelet would, for plain values
// and ConfigMaps of the rendering; values from fields and resources are absent.
func (r *rendering) env(t *testing.T, ns string, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("container %s: envFrom other than a ConfigMap", c.Name)
		}
		cm := as[corev1.ConfigMap](t, r.get(t, "ConfigMap", ns, from.ConfigMapRef.Name))
		maps.Copy(env, cm.Data)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return env
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) in args with values of env, as the kubelet does.
func expand(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	return out
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// setFlag replaces --name=... in args, or appends it.
func setFlag(args []string, name, value string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if strings.HasPrefix(a, "--"+name+"=") {
			out[i] = "--" + name + "=" + value
			return out
		}
	}
	return append(out, "--"+name+"="+value)
}

// secretMount returns the mount path of the Secret volume secretName in c.
func secretMount(t *testing.T, pod corev1.PodSpec, c corev1.Container, secretName string) string {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secretName {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	t.Fatalf("container %s does not mount the Secret %s", c.Name, secretName)
	return ""
}

// configMapMount returns the ConfigMap of the volume mounted at path in c (of
// a projected volume, its first ConfigMap that is not optional).
func configMapMount(t *testing.T, pod corev1.PodSpec, c corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
			// A projected volume: its first ConfigMap, the one it
			// cannot do without.
			if v.Projected != nil {
				for _, src := range v.Projected.Sources {
					if src.ConfigMap != nil && (src.ConfigMap.Optional == nil || !*src.ConfigMap.Optional) {
						return src.ConfigMap.Name
					}
				}
			}
		}
	}
	t.Fatalf("container %s has no ConfigMap mounted at %s", c.Name, path)
	return ""
}
