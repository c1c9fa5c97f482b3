package manifests

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// settingPages are the pages whose SKYLB_<FLAG>=VALUE examples a user copies
// into manifests/config.env.
var settingPages = []string{"README.md", "manifests/config.env", "manifests/README.md", "coredns/README.md",
	"etcd/README.md", "internal/README.md", "manifests/chart/README.md"}

// settingExample matches a SKYLB_<NAME>=VALUE in prose, code or a comment.
var settingExample = regexp.MustCompile("SKYLB_([A-Z0-9_]+)=([^\\s`|)'\"]+)")

// documentedSettings runs "skylb check" with the Deployment's arguments and
// its ConfigMap's environment, as the kubelet expands them: as rendered,
// with every example of settingPages added on its own, with those of
// config.env's comments all at once, and with mistakes, each of which must
// be refused with a line naming the setting.
func documentedSettings(ctx context.Context, t *testing.T, root, bin string, rr *rendering) {
	dep := as[appsv1.Deployment](t, rr.get(t, "Deployment", nsSkylb, "skylb"))
	c := dep.Spec.Template.Spec.Containers[0]
	base := rr.env(t, nsSkylb, c)
	check := func(t *testing.T, env map[string]string) (int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"check"}, expand(c.Args, env)...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	with := func(add map[string]string) map[string]string {
		env := maps.Clone(base)
		maps.Copy(env, add)
		// A view's networks need the view: --view-network names it.
		if nets, ok := add["SKYLB_VIEW_NETWORK"]; ok && add["SKYLB_VIEW"] == "" {
			var views []string
			for item := range strings.SplitSeq(nets, ",") {
				if name, _, ok := strings.Cut(item, "="); ok {
					views = append(views, name+"=pods")
				}
			}
			env["SKYLB_VIEW"] = strings.Join(views, ",")
		}
		return env
	}

	if code, out := check(t, base); code != 0 {
		t.Fatalf("skylb check with the Deployment as rendered = %d:\n%s", code, out)
	}
	commented := map[string]string{}
	n := 0
	for _, page := range settingPages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range settingExample.FindAllStringSubmatch(string(b), -1) {
			name, value := "SKYLB_"+m[1], strings.TrimRight(m[2], ".,;:")
			if strings.HasPrefix(name, "SKYLB_PROFILE_") {
				continue // the benchmark's own variables (scripts/README.md)
			}
			if page == "manifests/config.env" {
				commented[name] = value
			}
			n++
			if code, out := check(t, with(map[string]string{name: value})); code != 0 {
				t.Errorf("%s: %s=%s: skylb check = %d, want 0:\n%s", page, name, value, code, out)
			}
		}
	}
	if code, out := check(t, with(commented)); code != 0 {
		t.Errorf("manifests/config.env with every example of its comments: skylb check = %d, want 0:\n%s", code, out)
	}
	t.Logf("%d documented settings accepted by skylb check", n)

	for _, m := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SKYLB_TTLL": "5"}, "SKYLB_TTLL is no setting of skylb's; did you mean SKYLB_TTL?"},
		{map[string]string{"SKYLB_ETCD_ENDPOINT_S": "https://etcd:2379"}, "did you mean SKYLB_ETCD_ENDPOINTS?"},
		{map[string]string{"SKYLB_ZONE": "example.org,bad_zone!"}, "(from SKYLB_ZONE)"},
		{map[string]string{"SKYLB_TTL": "thirty"}, `--ttl: "thirty" is not a whole number (from SKYLB_TTL)`},
		{map[string]string{"SKYLB_MAX_DELETE_RATIO": "2"}, "--max-delete-ratio: 2 is not a share greater than 0 and at most 1 (1 allows deleting all) (from SKYLB_MAX_DELETE_RATIO)"},
		{map[string]string{"SKYLB_VIEW_NETWORK": "internal=10.0.0.0/33"}, `--view-network: "10.0.0.0/33" is not a network: the length 33 is not a number from 0 to 32 (from SKYLB_VIEW_NETWORK)`},
		{map[string]string{"SKYLB_LOG_LEVEL": "loud"}, `--log-level: "loud" is none of debug, info, warn and error (from SKYLB_LOG_LEVEL)`},
	} {
		code, out := check(t, with(m.env))
		if code != 2 || !strings.Contains(out, m.want) {
			t.Errorf("skylb check with %v = %d:\n%s\nwant 2 and %q", m.env, code, out, m.want)
		}
	}
}
