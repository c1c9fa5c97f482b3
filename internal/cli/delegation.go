package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/kubeclient"
)

// delegationFlags are the flags of skylb run that skylb delegation reads.
var delegationFlags = []string{"zone", "nameserver", "nameserver-selector", "kubeconfig",
	"node-address-types", "denied-cidrs", "allowed-cidrs"}

// delegationOwnFlags defines skylb delegation's own flags.
func delegationOwnFlags(fs *pflag.FlagSet, o *options) {
	fs.StringVar(&o.forwardService, "forward-service", "skylb-coredns/coredns", "NAMESPACE/NAME of CoreDNS's NodePort Service: without any nameserver on port 53, the forwarders to its node port on the nodes are printed; empty prints none")
}

// delegation runs "skylb delegation" (and skylb run --print-delegation): it
// prints what the parent zone needs and returns the exit code. It reads the
// cluster, for at most 10 seconds, only for --nameserver-selector.
func delegation(o *options, stdout, stderr io.Writer) int {
	zones, err := dnsname.ParseZones(o.zones)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(fmt.Errorf("--zone: %w", err), o.fromEnv))
		return 2
	}
	src, err := o.sourceConfig(zones)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	zc, err := o.zoneConfig(zones)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var kube kubeclient.Interface
	if o.forwardService != "" {
		if ns, name, ok := strings.Cut(o.forwardService, "/"); !ok || !dnsname.IsLabel(ns) || !dnsname.IsLabel(name) {
			fmt.Fprintln(stderr, "skylb:", withEnv(fmt.Errorf("--forward-service: %q is not NAMESPACE/NAME", o.forwardService), o.fromEnv))
			return 2
		}
	}
	if zc.NameserverSelector != nil || (len(zc.Nameservers) == 0 && o.forwardService != "") {
		if rc, kerr := kubeConfig(o.kubeconfig); kerr == nil {
			rc.Timeout = 10 * time.Second
			if c, cerr := kubeclient.NewClient(rc, kubeclient.Rate{}); cerr == nil {
				kube = c
			}
		}
	}
	forward := o.forwardService
	if len(zc.Nameservers) > 0 {
		forward = "" // --nameserver names the servers on port 53
	}
	if err := app.PrintDelegation(ctx, stdout, stderr, src, zc, kube, forward); err != nil {
		fmt.Fprintln(stderr, "skylb:", err)
		return 1
	}
	return 0
}
