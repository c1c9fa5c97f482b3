// Command kube-controller-manager is the upstream Kubernetes controller
// manager, built from the pinned module version in ../../go.mod for local and
// integration testing. The blank imports mirror upstream
// cmd/kube-controller-manager.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
