// Package integration tests kvstore-apiserver in-process against a real etcd.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

const etcdPrefix = "/registry/kvstore.io"

var (
	etcd      *framework.Etcd
	apiServer *framework.APIServer
	config    *rest.Config
	client    versioned.Interface
	dynClient dynamic.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	ctx := context.Background()
	logDir, err := os.MkdirTemp("", "kvstore-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { // etcd's log is kept for a failure to be read
		if code == 0 {
			os.RemoveAll(logDir)
		} else {
			fmt.Fprintln(os.Stderr, "integration: etcd's log is in", logDir)
		}
	}()
	etcd, err = framework.StartEtcd(ctx, logDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer etcd.Stop()

	apiServer, err = framework.StartAPIServer(ctx, etcd.URL, etcdPrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer apiServer.Stop()
	config = apiServer.Config
	client = versioned.NewForConfigOrDie(config)
	dynClient = dynamic.NewForConfigOrDie(config)
	return m.Run()
}
