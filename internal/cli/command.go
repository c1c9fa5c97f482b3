package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// A command is one of skylb's subcommands. Its flags are some of those of
// skylb run, which defines them all (see flags), plus its own.
type command struct {
	name    string
	summary string // its line in skylb's help
	about   string // the start of its own help
	// allFlags gives it every flag of skylb run; else it has those named in
	// flags, then those own adds.
	allFlags bool
	flags    []string
	own      func(fs *pflag.FlagSet, o *options)
	run      func(o *options, stdout, stderr io.Writer) int
}

// commands returns skylb's commands, the default first.
func commands() []command {
	return []command{
		{name: "run", summary: "publish Services, Ingresses and Gateway API routes in etcd (the default)",
			about:    "Publishes LoadBalancer Services, Ingresses and Gateway API routes as SkyDNS records in etcd,\nfor CoreDNS's etcd plugin to serve, until it is stopped (or once, with --once).",
			allFlags: true, run: serve},
		{name: "check", summary: "check the settings of skylb run, from its flags and SKYLB_<FLAG> variables, and exit",
			about:    "Checks the settings skylb run would start with, from its flags and the SKYLB_<FLAG>\nvariables, as skylb run does, without connecting to anything, and prints those\ngiven, with where each came from. It exits 0 when skylb run\nwould start, and 2 with a line naming the setting when not, or when a SKYLB_\nvariable is no setting.",
			allFlags: true, run: check},
		{name: "records", summary: "list the records and claims in etcd by name and owner",
			about: "Lists the records and claims in etcd by name and owner, as a table, JSON or YAML.\nIt only reads.",
			flags: recordsFlags, own: outputFlag, run: records},
		{name: "delegation", summary: "print the NS and glue records the parent zone needs, and forwarder settings",
			about: "Prints the NS and glue records the parent zone needs, and conditional-forwarder\nsettings. It reads no etcd; with --nameserver-selector it reads the cluster once. Without\nany nameserver on port 53 it prints the forwarders to the node port of --forward-service.",
			flags: delegationFlags, own: delegationOwnFlags, run: delegation},
		{name: "coredns-reloader", summary: "run beside CoreDNS: reload it when etcd answers again after an outage, or its certificate changes",
			about: "Runs beside CoreDNS, in its pod (shareProcessNamespace), with its etcd client files.\nIt reads etcd as CoreDNS does, every --interval, and sends CoreDNS SIGUSR1 (reload) when\netcd answers again after an outage, so that CoreDNS connects at once instead of after its\nclient's reconnect backoff (up to 2 minutes), and when the certificate files change, so\nthat CoreDNS reads them again. It never reloads while etcd does not answer: CoreDNS\nanswers from its cache meanwhile.",
			flags: reloaderFlags, own: reloaderOwnFlags, run: corednsReloader},
		{name: "corefile", summary: "write CoreDNS's Corefile with skylb's zones (the CoreDNS pod's init container)",
			about: "Writes the Corefile --in to --out with the zones of --zone and --reverse-zone (SKYLB_ZONE and\nSKYLB_REVERSE_ZONE, skylb's own settings) in place of {$SKYLB_ZONE} and {$SKYLB_REVERSE_ZONE}:\nCoreDNS reads a {$VAR} as one word, and cannot take a list of zones from it. Every other\n{$VAR} is left for CoreDNS, and an import of a relative path names the file beside --in.\nThe Corefile's former SKYLB_DNS_ZONE, SKYLB_DNS_REVERSE_ZONE_IPV4 and _IPV6 are read, with a\nwarning, each when its new setting is not set.",
			flags: corefileFlags, own: corefileOwnFlags, run: writeCorefile},
		{name: "version", summary: "print the version, the commit and the Go version",
			about: "Prints the version, the commit and the Go version skylb was built with.",
			run:   func(_ *options, stdout, _ io.Writer) int { printVersion(stdout); return 0 }},
	}
}

// lookup returns the command of that name.
func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// flagSet defines the command's flags on o.
func (c command) flagSet(o *options) *pflag.FlagSet {
	all := flags(o)
	if c.allFlags {
		return all
	}
	fs := newFlagSet("skylb " + c.name)
	for _, name := range c.flags {
		fs.AddFlag(all.Lookup(name))
	}
	if c.own != nil {
		c.own(fs, o)
	}
	return fs
}

// parse reads the command's options from args, then from the environment
// (lookup) for the flags args leave unset. It returns pflag.ErrHelp for
// --help and -h.
func (c command) parse(args []string, env map[string]string) (*options, error) {
	o := &options{env: env}
	fs := c.flagSet(o)
	if err := fs.Parse(args); err != nil {
		return nil, parseError(err, fs)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set, err := settingsFromEnv(fs, env)
	if err != nil {
		return nil, err
	}
	o.fromEnv = set
	o.flags = fs
	return o, nil
}

// usage prints the command's help: for skylb run, skylb's commands too.
func (c command) usage(w io.Writer) {
	fs := c.flagSet(&options{})
	if c.name == "run" {
		fmt.Fprintf(w, "%s\n\nUsage:\n  skylb [command] [flags]\n\nCommands:\n", c.about)
		for _, cmd := range commands() {
			fmt.Fprintf(w, "  %-11s %s\n", cmd.name, cmd.summary)
		}
		fmt.Fprintf(w, "  %-11s %s\n", "help", "print the help of skylb or of a command: skylb help records")
		fmt.Fprintf(w, "\nFlags of skylb run:\n%s\n%s", fs.FlagUsages(), envHelp)
		return
	}
	fmt.Fprintf(w, "%s\n\nUsage:\n  skylb %s", c.about, c.name)
	if !fs.HasFlags() {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, " [flags]\n\nFlags:\n%s\n%s", fs.FlagUsages(), envHelp)
}

// help runs "skylb help [command]".
func help(args []string, stdout, stderr io.Writer) int {
	name := "run"
	switch {
	case slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" }):
		fmt.Fprint(stdout, "Prints the help of skylb, or of one of its commands.\n\nUsage:\n  skylb help [command]\n")
		return 0
	case len(args) == 0:
	case len(args) == 1:
		name = args[0]
	default:
		return usageError(stderr, "help", fmt.Errorf("unexpected argument %q", args[1]))
	}
	c, ok := lookup(name)
	if !ok {
		return usageError(stderr, "help", fmt.Errorf("unknown command %q", name))
	}
	c.usage(stdout)
	return 0
}

// usageError prints err and a short usage of the command (of skylb when
// name is empty or help) on stderr, and returns the exit code 2.
func usageError(stderr io.Writer, name string, err error) int {
	prog := strings.TrimSpace("skylb " + name)
	fmt.Fprintf(stderr, "skylb: %v\n", err)
	c, ok := lookup(name)
	if !ok {
		var names []string
		for _, c := range commands() {
			names = append(names, c.name)
		}
		fmt.Fprintf(stderr, "Usage: skylb [%s|help] [flags]\nRun 'skylb help' for the commands and their flags.\n", strings.Join(names, "|"))
		return 2
	}
	flags := ""
	if c.flagSet(&options{}).HasFlags() {
		flags = " [flags]"
	}
	fmt.Fprintf(stderr, "Usage: %s%s\nRun 'skylb help %s' for its help.\n", prog, flags, name)
	return 2
}

// isHelp tells whether err is the request of a command's help.
func isHelp(err error) bool { return errors.Is(err, pflag.ErrHelp) }
