// Package cli is skylb's command line: the commands (command.go), their
// flags (flags.go), the flags' validation into the components' configurations
// (config.go), SKYLB_<FLAG> settings from the environment (settings.go), and
// "skylb run", which builds the clients and runs the controller (this file).
// The root package's main only calls Run.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/etcdclient"
	"github.com/skylb/skylb/internal/kubeclient"
)

// Run runs skylb's command line, in the environment environ (os.Environ's
// KEY=VALUE strings), and returns its exit code: 0 on success, 1 when the
// command failed, 2 for a command line or a setting it refuses. Without a
// command, or when the first argument is a flag, the command is run. A
// SKYLB_ variable that is no setting is reported on stderr (and refused by
// skylb check).
func Run(args []string, stdout, stderr io.Writer, environ []string) int {
	name := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		return help(args, stdout, stderr)
	}
	c, ok := lookup(name)
	if !ok {
		return usageError(stderr, "", fmt.Errorf("unknown command %q", name))
	}
	env := environment(environ)
	o, err := c.parse(args, env)
	switch {
	case isHelp(err):
		c.usage(stdout)
		return 0
	case errors.As(err, new(settingError)):
		fmt.Fprintln(stderr, "skylb:", err)
		return 2
	case err != nil:
		return usageError(stderr, c.name, err)
	}
	if unknown := unknownSettings(env); len(unknown) > 0 && c.name != "version" {
		for _, line := range unknown {
			fmt.Fprintln(stderr, "skylb:", line)
		}
		// The commands that check settings, or write them for another
		// program (CoreDNS's init container), refuse them; the others
		// warn and go on.
		if c.name == "check" || c.name == "corefile" {
			return 2
		}
	}
	return c.run(o, stdout, stderr)
}

// etcdFilesFix tells what to do about a missing etcd client file, for the
// commands that wait for it (skylb run, skylb coredns-reloader).
const etcdFilesFix = "skylb starts once it is there; mount the Secret holding the etcd client certificate (ca.crt, tls.crt, tls.key), or correct --etcd-ca-file, --etcd-cert-file and --etcd-key-file"

// serve runs "skylb run": it builds the clients and runs the controller until
// SIGINT or SIGTERM, or once with --once.
func serve(o *options, stdout, stderr io.Writer) int {
	if o.showVersion {
		printVersion(stdout)
		return 0
	}
	if o.printDelegation {
		return delegation(o, stdout, stderr)
	}
	cfg, err := o.config()
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	cfg.Summary = stdout
	log := cfg.Log
	kubeclient.RouteKlog(log, 0)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	waiter := kubeclient.New(ctx.Done(), 0, log.WithField("component", "kube-client"))
	clients, err := kubeClients(o, waiter.Wrap)
	if err != nil {
		fmt.Fprintln(stderr, "skylb: --kubeconfig:", err)
		return 2
	}
	etcdCfg := o.etcd
	etcdCfg.Log = log
	if err := app.WaitForFiles(ctx, cfg, o.etcdFiles, etcdFilesFix); err != nil {
		if ctx.Err() != nil {
			log.Info("skylb stopped")
			return 0
		}
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	etcd, err := etcdclient.New(etcdCfg)
	if err != nil {
		fmt.Fprintln(stderr, "skylb: etcd client:", err)
		return 2
	}
	defer etcd.Close()

	log.WithFields(logrus.Fields{"version": cfg.Version, "zones": cfg.Controller.Source.Zones, "owner": cfg.Publish.Owner, "etcd": etcdCfg.Endpoints}).Info("skylb starting")
	clients.APIServerErr = waiter.Err
	if err := app.Run(ctx, cfg, clients, etcd); err != nil {
		log.WithError(err).Error("skylb stopped")
		return 1
	}
	log.Info("skylb stopped")
	return 0
}
