package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skylb/skylb/test/stack"
)

// buildSkylb builds skylb from root into a directory of the test's.
func buildSkylb(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skylb")
	if out, err := exec.Command(stack.GoTool(), "build", "-o", bin, root).CombinedOutput(); err != nil {
		t.Fatalf("go build skylb: %v\n%s", err, out)
	}
	return bin
}

// varRef is a $(VAR) of a container's arguments, which the kubelet expands.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkRender runs "skylb check" with the arguments and environment the
// kubelet would give skylb's container in objs: its ConfigMap's data, its
// own variables, and $(VAR) expanded. It returns the exit code and output.
func checkRender(t *testing.T, skylb string, objs map[string]object) (int, string) {
	t.Helper()
	c := container(t, objs, "Deployment skylb/skylb")
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		cm := as[corev1.ConfigMap](t, objs, "ConfigMap skylb/"+from.ConfigMapRef.Name)
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	args := []string{"check"}
	for _, a := range c.Args {
		args = append(args, varRef.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		}))
	}
	cmd := exec.Command(skylb, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// readmeValues returns the values.yaml example of manifests/chart/README.md.
func readmeValues(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "manifests/chart/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n# values.yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("manifests/chart/README.md has no ```yaml block beginning # values.yaml")
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestValuesThroughSkylb: skylb accepts what the chart renders with its
// default values and with each documented example, as the kubelet would
// start it; a mistake in a value is refused naming the setting.
func TestValuesThroughSkylb(t *testing.T) {
	root := stack.Root(t)
	skylb := buildSkylb(t, root)
	for _, tt := range []struct {
		name string
		args []string
		want string // the line of a refusal; empty: accepted
	}{
		{name: "default values"},
		{name: "README: helm install", args: []string{"--set", "zone=k8s.example.com", "--set", "ownerId=prod-eu"}},
		{name: "README: values.yaml", args: []string{"-f", readmeValues(t, root)}},
		{name: "two zones", args: []string{"--set", "zone={a.example.org,b.example.org}"}},
		{name: "every optional part", args: []string{"--set", "monitoring.enabled=true", "--set", "settings.load-balancer-class=skylb.io/dns",
			"--set", "extraArgs={--log-level=debug,--source=service}", "--set", "namespaces={team-a,team-b}",
			"--set", "views.internal=pods", "--set-json", `settings.view-network=["internal=10.0.0.0/8","192.168.0.0/16"]`}},
		{name: "a misspelt setting", args: []string{"--set", "settings.ttll=5"}, want: "SKYLB_TTLL is no setting of skylb's; did you mean SKYLB_TTL?"},
		{name: "a malformed value", args: []string{"--set", "settings.ttl=thirty"}, want: `--ttl: "thirty" is not a whole number (from SKYLB_TTL)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := checkRender(t, skylb, helmTemplate(t, root, "skylb", "skylb", tt.args...))
			switch {
			case tt.want == "" && code != 0:
				t.Errorf("skylb check = %d, want 0:\n%s", code, out)
			case tt.want != "" && (code != 2 || !strings.Contains(out, tt.want)):
				t.Errorf("skylb check = %d:\n%s\nwant 2 and %q", code, out, tt.want)
			}
		})
	}
}
