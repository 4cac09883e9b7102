package server

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	kvscontroller "github.com/kvstore-io/kvstore-apiserver/pkg/controller/keyvaluestore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	kvsinformers "github.com/kvstore-io/kvstore-apiserver/pkg/generated/informers/externalversions"
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
	kubeConfig := rest.CopyConfig(c.ClientConfig)
	kubeConfig.QPS, kubeConfig.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	kubeConfig.ContentType = runtime.ContentTypeProtobuf
	kubeConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kubeConfig = rest.AddUserAgent(kubeConfig, kvscontroller.FieldManager)

	var watchdog *leaderelection.HealthzAdaptor
	if o.LeaderElection.LeaderElect {
		// Liveness, never readiness: a follower serves the API as well as a leader.
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
		c.HealthzChecks = append(c.HealthzChecks, watchdog)
		c.LivezChecks = append(c.LivezChecks, watchdog)
	}
	kvscontroller.RegisterMetrics()
	hooks["start-keyvaluestore-controller"] = func(hookCtx genericapiserver.PostStartHookContext) error {
		go o.run(hookCtx.Context, kubeConfig, rest.CopyConfig(hookCtx.LoopbackClientConfig), watchdog)
		return nil
	}
	return nil
}

// run blocks: with leader election it runs the controller only while leading.
func (o *ControllerOptions) run(ctx context.Context, kubeConfig, loopback *rest.Config, watchdog *leaderelection.HealthzAdaptor) {
	logger := klog.FromContext(ctx).WithName("controller")
	kube, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		logger.Error(err, "Cannot create kube client")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	// Protobuf on the wire to our own API: smaller and cheaper than JSON.
	loopback.ContentType = runtime.ContentTypeProtobuf
	loopback.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// Loopback: gzip would only cost CPU at both ends of the same process.
	loopback.DisableCompression = true
	kvs, err := versioned.NewForConfig(loopback)
	if err != nil {
		logger.Error(err, "Cannot create kvstore client")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	runController := func(ctx context.Context) {
		kvscontroller.Leader.Set(1)
		defer kvscontroller.Leader.Set(0)
		kubeInf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.LabelSelector = kvscontroller.LabelManagedBy + "=" + kvscontroller.ManagedBy
			}),
			kubeinformers.WithTransform(kvscontroller.CacheTransform))
		kvsInf := kvsinformers.NewSharedInformerFactoryWithOptions(kvs, 0,
			kvsinformers.WithTransform(kvscontroller.CacheTransform))
		ctrl, err := kvscontroller.New(kube, kvs, kubeInf, kvsInf)
		if err != nil {
			logger.Error(err, "Cannot create controller")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
		kubeInf.Start(ctx.Done())
		kvsInf.Start(ctx.Done())
		defer kubeInf.Shutdown()
		defer kvsInf.Shutdown()
		if err := ctrl.Run(ctx, o.Workers); err != nil {
			logger.Error(err, "Controller stopped")
		}
	}
	if !o.LeaderElection.LeaderElect {
		runController(ctx)
		return
	}

	hostname, _ := os.Hostname()
	identity := hostname + "_" + string(uuid.NewUUID())
	le := o.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		logger.Error(err, "Cannot create leader election lock")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.ResourceName,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Became leader; starting the controller", "identity", identity)
				runController(ctx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() != nil {
					logger.Info("Shutting down; leader Lease released", "identity", identity)
					return
				}
				// Another replica may already be writing: stop at once.
				logger.Error(nil, "Lost the leader Lease; exiting so that only one controller writes", "identity", identity)
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			},
			OnNewLeader: func(id string) {
				if id != identity {
					logger.Info("Another replica leads", "leader", id)
				}
			},
		},
	})
}
