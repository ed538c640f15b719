// Command etcd is etcd's own server, built from the Go module proxy for the tests' API server
// (tests/support/kube_api.py): the same main as go.etcd.io/etcd/server/v3's etcd binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
