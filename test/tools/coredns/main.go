// Command coredns is CoreDNS at the version go.mod pins, with the plugins
// skylb's Corefiles use and no others, for the local stack, the tests and
// the image test/images builds (coredns/coredns).
//
// CoreDNS chooses its plugins when it is compiled: upstream's main
// (coredns.go) imports core/plugin, which imports every plugin of plugin.cfg,
// the list a custom build edits; this main imports the server and only the
// plugins below. The order in which plugins handle a query is upstream's
// (core/dnsserver's directive list, unchanged), so a Corefile that uses only
// these plugins runs exactly as with the full binary; a directive of any
// other plugin is refused at start ("no action found for directive ...
// (missing a plugin?)"). The plugins are those of coredns/Corefile (bind,
// errors, log, health, ready, prometheus, cache, loadbalance, etcd) and of
// the cluster DNS the real-cluster test runs (test/cluster: kubernetes),
// file, which serves the serving benchmark's ceiling (test/bench) and
// the zone file an operator may put beside the etcd plugin, and view, which
// answers the clients of skylb's views from their own records (coredns/README.md).
// Left out: the cloud DNS providers and their SDKs, tracing, dnstap, QUIC,
// gRPC, and the rest.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/etcd"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/view"
)

func main() {
	coremain.Run()
}
