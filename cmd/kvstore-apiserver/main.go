// Command kvstore-apiserver serves the kvstore.io API as a Kubernetes
// aggregated API server.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"           // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"  // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue depth and latency on /metrics
	_ "time/tzdata"                                        // spec.backup.timeZone on images without a zoneinfo database

	"github.com/kvstore-io/kvstore-apiserver/pkg/cmd/server"
	"github.com/kvstore-io/kvstore-apiserver/pkg/storagemigration"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	cmd := server.NewCommand(ctx, server.NewOptions())
	cmd.AddCommand(storagemigration.NewCommand())
	os.Exit(cli.Run(cmd))
}
