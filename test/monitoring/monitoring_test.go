package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/skylb/skylb/test/stack"
)

// run runs promtool with args in dir and fails the test on an error.
func run(t *testing.T, promtool, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ruleGroups is the spec of a PrometheusRule: the groups of a rules file.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string `json:"alert"`
			Record string `json:"record"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// readRules returns the PrometheusRule of manifests/monitoring and the
// rules file of its spec.
func readRules(t *testing.T, root string) (ruleGroups, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &obj); err != nil || obj.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml: kind %q: %v", obj.Kind, err)
	}
	var groups ruleGroups
	if err := json.Unmarshal(obj.Spec, &groups); err != nil {
		t.Fatal(err)
	}
	file, err := yaml.JSONToYAML(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return groups, file
}

// TestAlertRules runs promtool check rules on the PrometheusRule's groups,
// then promtool test rules on prometheusrule_test.yaml.
func TestAlertRules(t *testing.T) {
	root := stack.Root(t)
	bin := stack.Bin(t, root, "promtool")
	_, rules := readRules(t, root)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", "prometheusrule_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(run(t, bin, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml"))
	t.Log(run(t, bin, dir, "test", "rules", "tests.yaml"))
}

// TestEveryAlertTested checks that prometheusrule_test.yaml has, for every
// alert, a case where it fires and one where it does not, and names no
// alert the rules lack.
func TestEveryAlertTested(t *testing.T) {
	root := stack.Root(t)
	groups, _ := readRules(t, root)
	b, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", "prometheusrule_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if !fires[r.Alert] {
				t.Errorf("alert %s: no test case where it fires", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("alert %s: no test case where it stays quiet", r.Alert)
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("prometheusrule_test.yaml tests alert %s, which the rules lack", name)
		}
	}
	if len(alerts) < 8 {
		t.Errorf("Got %d alerts, want at least the 8 conditions manifests/README.md names", len(alerts))
	}
}

// TestDashboard checks the Grafana dashboard: valid JSON, every panel has a
// query, and every query, with Grafana's variables in place, parses as
// PromQL (promtool check rules, each as a recording rule).
func TestDashboard(t *testing.T) {
	root := stack.Root(t)
	bin := stack.Bin(t, root, "promtool")
	b, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard.json: uid %q, %d panels", d.UID, len(d.Panels))
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".+")
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for j, q := range p.Targets {
			expr, err := json.Marshal(vars.Replace(q.Expr))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&rules, "  - record: panel_%d_%d\n    expr: %s\n", i, j, expr)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, bin, dir, "check", "rules", "dashboard.yaml")
}
