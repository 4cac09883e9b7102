package storagemigration

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
)

// NewCommand returns `migrate-storage`, run against a live server through
// kube-apiserver (or any kvstore.io endpoint a kubeconfig reaches).
func NewCommand() *cobra.Command {
	var (
		kubeconfig string
		resources  []string
		pageSize   int64
	)
	cmd := &cobra.Command{
		Use:   "migrate-storage",
		Short: "Rewrite every stored kvstore.io object in the server's storage version",
		Long: `migrate-storage rewrites every KeyValueStore and KeyValueStoreBackup through
the API, unchanged, so that etcd holds each in the storage version of the
running server (kvstore.io/v1beta1). Objects are listed in pages and each is
written back with its resourceVersion as a precondition: one changed meanwhile
was already rewritten by its writer and is left alone.

Safe to stop and to run again: an object already in the storage version is
not written again (no new resourceVersion, no watch event). Needs get, list
and update on the resources. See docs/api.md, "Upgrading".`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			// Protobuf both ways: objects go back with the bytes they were
			// read with (see Run).
			config.ContentType = runtime.ContentTypeProtobuf
			config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
			client, err := versioned.NewForConfig(config)
			if err != nil {
				return err
			}
			var gvrs []schema.GroupVersionResource
			for _, r := range resources {
				gvrs = append(gvrs, DefaultResources[0].GroupVersion().WithResource(r))
			}
			_, err = Run(cmd.Context(), client, Options{Resources: gvrs, PageSize: pageSize, Out: cmd.OutOrStdout()})
			return err
		},
	}
	// The parent's help and usage print the server's flags; this command has its own.
	cmd.SetUsageFunc((&cobra.Command{}).UsageFunc())
	cmd.SetHelpFunc((&cobra.Command{}).HelpFunc())
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; the usual KUBECONFIG and in-cluster rules apply when empty.")
	fs.StringSliceVar(&resources, "resources", []string{"keyvaluestores", "keyvaluestorebackups"}, "The kvstore.io resources to rewrite.")
	fs.Int64Var(&pageSize, "chunk-size", 100, "How many objects to list at a time.")
	return cmd
}
