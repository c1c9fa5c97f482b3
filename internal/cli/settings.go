package cli

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix begins the environment variable of each setting: SKYLB_<FLAG>.
const envPrefix = "SKYLB_"

// notSettings are the flags that ask for an action, not a setting: the
// environment does not set them.
var notSettings = map[string]bool{"version": true, "print-delegation": true}

// corefileVars are the variables of the shipped Corefile (coredns/Corefile)
// and of the views' blocks skylb writes: CoreDNS reads them, in the CoreDNS
// pod, where skylb coredns-reloader runs too. They are no setting of
// skylb's, and no typo of one.
var corefileVars = []string{
	"SKYLB_DNS_BIND",
	"SKYLB_DNS_LAMEDUCK", "SKYLB_DNS_CACHE_TTL",
	"SKYLB_ETCD_ENDPOINT", "SKYLB_ETCD_ENDPOINT_2", "SKYLB_ETCD_ENDPOINT_3",
	"SKYLB_ETCD_CERT", "SKYLB_ETCD_KEY", "SKYLB_ETCD_CA",
	"SKYLB_HEALTH_ADDR", "SKYLB_READY_ADDR", "SKYLB_METRICS_ADDR",
}

// envHelp is the end of every command's help.
const envHelp = `Every setting can also come from the environment as SKYLB_<FLAG>, the flag's
name in upper case with dashes as underscores (SKYLB_LOAD_BALANCER_CLASS for
--load-balancer-class); a flag on the command line wins over its variable. A
repeatable or list flag takes a comma-separated value (SKYLB_ZONE=a.org,b.org).
A SKYLB_ variable that is no setting is reported, with the closest one.
`

// envVar returns the environment variable of a flag.
func envVar(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// environment maps the variables of environ (os.Environ's KEY=VALUE
// strings) to their values; the last of a name repeated wins, as in getenv.
func environment(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// settingsFromEnv sets each flag of fs that the command line left unset from
// its environment variable, when env has it. It returns the flags it set,
// each with its variable. A value the flag refuses is an error naming the
// flag and the variable.
func settingsFromEnv(fs *pflag.FlagSet, env map[string]string) (map[string]string, error) {
	set := make(map[string]string)
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		name := envVar(f.Name)
		value, ok := env[name]
		if err != nil || !ok || f.Changed || notSettings[f.Name] {
			return
		}
		if serr := setFromEnv(fs, f, value); serr != nil {
			err = settingError{fmt.Errorf("%w (from %s)", serr, name)}
			return
		}
		set[f.Name] = name
	})
	return set, err
}

// setFromEnv sets f to value; a list takes the comma-separated items of value,
// none when it is empty.
func setFromEnv(fs *pflag.FlagSet, f *pflag.Flag, value string) error {
	list, ok := f.Value.(pflag.SliceValue)
	if !ok {
		if err := fs.Set(f.Name, value); err != nil {
			return valueError(f, value)
		}
		return nil
	}
	var items []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	if err := list.Replace(items); err != nil {
		return valueError(f, value)
	}
	f.Changed = true
	return nil
}

// valueError tells, in a user's words, that value is not what flag f takes.
func valueError(f *pflag.Flag, value string) error {
	want := "a value of type " + f.Value.Type()
	switch f.Value.Type() {
	case "bool":
		want = "true or false"
	case "int", "uint32":
		want = "a whole number"
	case "float32", "float64":
		want = "a number"
	case "duration":
		want = "a duration such as 30s, 2m or 1h"
	}
	return fmt.Errorf("--%s: %q is not %s", f.Name, value, want)
}

// parseError turns pflag's error for the command line of fs into one in a
// user's words, naming the flag, and the closest flag of an unknown one.
func parseError(err error, fs *pflag.FlagSet) error {
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) {
		return valueError(invalid.GetFlag(), invalid.GetValue())
	}
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedName() != "" {
		var names []string
		fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if near := closest(unknown.GetSpecifiedName(), names); near != "" {
			return fmt.Errorf("%w; did you mean --%s?", err, near)
		}
	}
	return err
}

// withEnv adds to an error that begins with a flag's name the variable that
// set the flag, if one did: "--ttl: ... (from SKYLB_TTL)".
func withEnv(err error, fromEnv map[string]string) error {
	msg := err.Error()
	for flag, name := range fromEnv {
		if rest, ok := strings.CutPrefix(msg, "--"+flag); ok && (rest == "" || strings.ContainsAny(rest[:1], ": /")) {
			return fmt.Errorf("%w (from %s)", err, name)
		}
	}
	return err
}

// serviceLink matches the variables the kubelet gives a pod for each Service
// of its namespace (enableServiceLinks): a Service named skylb-metrics
// gives SKYLB_METRICS_SERVICE_HOST, SKYLB_METRICS_PORT_8080_TCP_ADDR, ...
var serviceLink = regexp.MustCompile(`_SERVICE_HOST$|_SERVICE_PORT(_[A-Z0-9_]+)?$|_PORT_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?$`)

// unknownSettings returns a line for each SKYLB_ variable of env that is
// neither a setting of skylb's (of any of its commands) nor a variable of
// the Corefile, with the closest known name when one is close: the typo
// SKYLB_TTLL=5 would otherwise be ignored without a word.
func unknownSettings(env map[string]string) []string {
	// skylb's settings first: the closest of two as near is skylb's.
	var known []string
	flags(&options{}).VisitAll(func(f *pflag.Flag) { known = append(known, envVar(f.Name)) })
	for _, c := range commands() {
		if c.own != nil {
			fs := newFlagSet(c.name)
			c.own(fs, &options{})
			fs.VisitAll(func(f *pflag.Flag) { known = append(known, envVar(f.Name)) })
		}
	}
	known = slices.Concat(known, corefileVars, deprecatedZoneVars)
	var out []string
	for name, value := range env {
		if !strings.HasPrefix(name, envPrefix) || slices.Contains(known, name) || serviceLink.MatchString(name) ||
			(strings.HasSuffix(name, "_PORT") && strings.Contains(value, "://")) {
			continue
		}
		line := name + " is no setting of skylb's"
		if near := closest(name, known); near != "" {
			line += "; did you mean " + near + "?"
		} else {
			line += " (skylb help lists them, as --flags: SKYLB_<FLAG>)"
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// closest returns the name of names nearest to s, when it is near enough to
// be what s meant: at most a third of its characters differ.
func closest(s string, names []string) string {
	best, bestDist := "", len(s)/3+1
	for _, n := range names {
		if d := editDistance(s, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe prints a flag's value as the help would show it.
func describe(f *pflag.Flag) string {
	if list, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(list.GetSlice(), ",")
	}
	return f.Value.String()
}

// settingError is a value of the environment that its flag refuses: the
// environment, not the command line, is to be corrected, so no usage
// follows it.
type settingError struct{ error }

func (e settingError) Unwrap() error { return e.error }
