// Command etcd is etcd's own server main, built here at the version go.mod pins
// so the local stack and integration tests need nothing but the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
