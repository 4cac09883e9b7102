package server

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
)

// NewCommand returns the kvstore-apiserver command.
func NewCommand(ctx context.Context, o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   apiserver.ComponentName,
		Short: "Serve the kvstore.io API (KeyValueStore) as a Kubernetes aggregated API server",
		Long: `kvstore-apiserver serves the kvstore.io API group from its own etcd behind
kube-apiserver (registered through an APIService).`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return Run(cmd.Context(), o)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
	}
	cmd.SetContext(ctx)

	fss := o.Flags()
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name())
	fs := cmd.Flags()
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflagSetUsage(cmd, fss, cols)
	return cmd
}

// Run builds the server from completed, valid options and serves until ctx ends.
func Run(ctx context.Context, o *Options) error {
	// kubernetes_feature_enabled on /metrics, as kube-apiserver exports it.
	utilfeature.DefaultMutableFeatureGate.AddMetrics()
	server, err := NewServer(o)
	if err != nil {
		return err
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// NewServer builds the server from completed, valid options without starting it.
func NewServer(o *Options) (*apiserver.Server, error) {
	config, err := o.Config()
	if err != nil {
		return nil, err
	}
	return config.Complete().New()
}
