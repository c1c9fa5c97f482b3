// Command etcdctl is the upstream etcd v3 command-line client, built from the
// pinned module version in ../../go.mod for local and integration testing.
package main

import "go.etcd.io/etcd/etcdctl/v3/ctlv3"

func main() {
	ctlv3.MustStart()
}
