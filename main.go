// Command skylb publishes Kubernetes LoadBalancer Services, Ingresses and
// Gateway API routes as SkyDNS records in etcd, for CoreDNS's etcd plugin to
// serve. Its command line is internal/cli.
package main

import (
	"os"

	"github.com/skylb/skylb/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr, os.Environ()))
}
