package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/skylb/skylb/internal/app"
	"github.com/skylb/skylb/internal/dnsname"
	"github.com/skylb/skylb/internal/kubeclient"
)

// delegationFlags are the flags of skylb run that skylb delegation reads.
var delegationFlags = []string{"zone", "nameserver", "nameserver-selector", "kubeconfig",
	"node-address-types", "denied-cidrs", "allowed-cidrs"}

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
	if zc.NameserverSelector != nil {
		if rc, kerr := kubeConfig(o.kubeconfig); kerr == nil {
			rc.Timeout = 10 * time.Second
			if c, cerr := kubeclient.NewClient(rc, kubeclient.Rate{}); cerr == nil {
				kube = c
			}
		}
	}
	if err := app.PrintDelegation(ctx, stdout, stderr, src, zc, kube); err != nil {
		fmt.Fprintln(stderr, "skylb:", err)
		return 1
	}
	return 0
}
