package server

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	kvscontroller "github.com/kvstore-io/kvstore-apiserver/pkg/controller/keyvaluestore"
)

// ControllerOptions configure the embedded, leader-elected controller.
type ControllerOptions struct {
	// Enabled runs the controller (while this replica leads); false makes an
	// API-only replica.
	Enabled bool
	// Workers is how many stores reconcile at once.
	Workers int
	// KubeAPIQPS and KubeAPIBurst limit the controller's requests to kube-apiserver.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// LeaderElection configures the Lease that makes one replica the writer.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
}

// NewControllerOptions returns the defaults.
func NewControllerOptions() *ControllerOptions {
	return &ControllerOptions{
		Enabled:      true,
		Workers:      5,
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      resourcelock.LeasesResourceLock,
			ResourceNamespace: "kvstore-system",
			ResourceName:      "kvstore-controller",
		},
	}
}

// AddFlags adds the controller flags.
func (o *ControllerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "controllers", o.Enabled, "Run the KeyValueStore controller on this replica while it holds the leader Lease. false serves the API only.")
	fs.IntVar(&o.Workers, "concurrent-keyvaluestore-syncs", o.Workers, "Number of KeyValueStores reconciled concurrently.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second of the controller's client of kube-apiserver.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of the controller's client of kube-apiserver.")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
}

// Validate reports invalid controller flags.
func (o *ControllerOptions) Validate() []error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-keyvaluestore-syncs must be at least 1"))
	}
	le := o.LeaderElection
	if le.LeaderElect {
		if le.ResourceLock != resourcelock.LeasesResourceLock {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-lock must be %q", resourcelock.LeasesResourceLock))
		}
		if le.LeaseDuration.Duration <= le.RenewDeadline.Duration || le.RenewDeadline.Duration <= le.RetryPeriod.Duration {
			errs = append(errs, fmt.Errorf("leader election needs lease duration > renew deadline > retry period"))
		}
	}
	return errs
}

// apply adds the controller's start hook and liveness check to the config.
func (o *ControllerOptions) apply(c *genericapiserver.RecommendedConfig, hooks map[string]genericapiserver.PostStartHookFunc) error {
	if !o.Enabled {
		return nil
	}
	if c.ClientConfig == nil {
		return fmt.Errorf("the controller needs a kube-apiserver: give --kubeconfig, run in a cluster, or --controllers=false")
	}
	kube := rest.CopyConfig(c.ClientConfig)
	kube.QPS, kube.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cfg := kvscontroller.Config{Kube: kube, Workers: o.Workers, LeaderElection: o.LeaderElection}
	if o.LeaderElection.LeaderElect {
		// Liveness, never readiness: a follower serves the API as well as a leader.
		cfg.Watchdog = kvscontroller.NewWatchdog()
		c.HealthzChecks = append(c.HealthzChecks, cfg.Watchdog)
		c.LivezChecks = append(c.LivezChecks, cfg.Watchdog)
	}
	hooks["start-keyvaluestore-controller"] = func(hookCtx genericapiserver.PostStartHookContext) error {
		cfg.Loopback = rest.CopyConfig(hookCtx.LoopbackClientConfig)
		go func() {
			if err := cfg.Run(hookCtx.Context); err != nil {
				klog.FromContext(hookCtx.Context).Error(err, "KeyValueStore controller failed")
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			}
		}()
		return nil
	}
	return nil
}
