// Command kube-node is the upstream kubelet, kube-scheduler and kube-proxy in
// one binary, built from the pinned module version in ../../go.mod for the
// real-cluster test (test/cluster). It runs the command its name says: bin/
// holds kubelet, kube-scheduler and kube-proxy as symlinks to it. The blank
// imports mirror upstream cmd/kubelet, cmd/kube-scheduler and cmd/kube-proxy.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	var cmd *cobra.Command
	switch name := filepath.Base(os.Args[0]); name {
	case "kubelet":
		cmd = kubelet.NewKubeletCommand(context.Background())
	case "kube-scheduler":
		cmd = scheduler.NewSchedulerCommand()
	case "kube-proxy":
		cmd = proxy.NewProxyCommand()
	default:
		fmt.Fprintf(os.Stderr, "kube-node: run as kubelet, kube-scheduler or kube-proxy (a symlink), not %q\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(cmd))
}
