package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix begins the environment variable of each setting: SKYLB_<FLAG>.
const envPrefix = "SKYLB_"

// notSettings are the flags that ask for an action, not a setting: the
// environment does not set them.
var notSettings = map[string]bool{"version": true, "print-delegation": true}

// envHelp is the end of every command's help.
const envHelp = `Every setting can also come from the environment as SKYLB_<FLAG>, the flag's
name in upper case with dashes as underscores (SKYLB_LOAD_BALANCER_CLASS for
--load-balancer-class); a flag on the command line wins over its variable. A
repeatable or list flag takes a comma-separated value (SKYLB_ZONE=a.org,b.org).
`

// envVar returns the environment variable of a flag.
func envVar(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// settingsFromEnv sets each flag of fs that the command line left unset from
// its environment variable, when lookup finds it. It returns the flags it set,
// each with its variable. A value the flag refuses is an error naming the
// variable.
func settingsFromEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) (map[string]string, error) {
	set := make(map[string]string)
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		name := envVar(f.Name)
		value, ok := lookup(name)
		if err != nil || !ok || f.Changed || notSettings[f.Name] {
			return
		}
		if serr := setFromEnv(fs, f, value); serr != nil {
			err = fmt.Errorf("%s: %w", name, serr)
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
		return fs.Set(f.Name, value)
	}
	var items []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	if err := list.Replace(items); err != nil {
		return err
	}
	f.Changed = true
	return nil
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
