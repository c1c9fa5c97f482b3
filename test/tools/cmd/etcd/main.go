// Command etcd is the upstream etcd server, built from the pinned module
// version in ../../go.mod for local and integration testing.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
