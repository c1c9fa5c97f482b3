package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/pflag"
)

// check runs "skylb check": it validates the settings of skylb run as run
// does, connecting to nothing, and prints those given, with where each came
// from.
func check(o *options, stdout, stderr io.Writer) int {
	if _, err := o.config(); err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	fmt.Fprintln(stdout, "The settings are valid; skylb run starts with these given, the others at their defaults:")
	o.flags.VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		from := "--" + f.Name
		if name, ok := o.fromEnv[f.Name]; ok {
			from = name
		}
		fmt.Fprintf(stdout, "  %-28s %s  (%s)\n", f.Name, describe(f), from)
	})
	if err := o.etcdFiles(); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stdout, "Not here yet: %v; skylb run waits for it.\n", err)
	}
	return 0
}
