package server

import (
	"context"
	"fmt"
	"sync"
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
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second of the controller's client of kube-apiserver. A negative value turns the client-side limit off: kube-apiserver's API priority and fairness alone then paces the controller (controller-runtime's default).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of the controller's client of kube-apiserver (0: client-go's default, 10).")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
}

// Validate reports invalid controller flags.
func (o *ControllerOptions) Validate() []error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-keyvaluestore-syncs must be at least 1"))
	}
	if o.KubeAPIQPS >= 0 && o.KubeAPIBurst < 0 {
		// client-go's limiter would refuse every request, the Lease's too.
		errs = append(errs, fmt.Errorf("--kube-api-burst must not be negative while --kube-api-qps limits the client"))
	}
	le := o.LeaderElection
	if le.LeaderElect {
		if le.ResourceLock != resourcelock.LeasesResourceLock {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-lock must be %q", resourcelock.LeasesResourceLock))
		}
		errs = append(errs, validateLeaderElectionTimes(le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration)...)
	}
	return errs
}

// validateLeaderElectionTimes checks what the fence and client-go rely on.
// The Lease records its duration in whole seconds (client-go drops the
// fraction) and other replicas take over by that figure, while the fence
// stays open for the renew deadline: the deadline must be below the whole
// seconds, or two replicas write at once. client-go itself refuses a renew
// deadline not above 1.2 retry periods, which would stop the controller
// for good after the server started.
func validateLeaderElectionTimes(lease, renew, retry time.Duration) []error {
	var errs []error
	if lease < time.Second || lease%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration must be a whole number of seconds, at least 1s (the Lease records whole seconds): %s", lease))
	}
	if renew >= lease.Truncate(time.Second) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s): the fence keeps writes open for the renew deadline", renew, lease))
	}
	if retry <= 0 || float64(renew) <= 1.2*float64(retry) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be more than 1.2 times --leader-elect-retry-period (%s), which must be positive", renew, retry))
	}
	return errs
}

// apply adds the controller's start hook and liveness check to the config.
func (o *ControllerOptions) apply(c *genericapiserver.RecommendedConfig, hooks serverHooks) error {
	if !o.Enabled {
		return nil
	}
	if c.ClientConfig == nil {
		return fmt.Errorf("the controller needs a kube-apiserver: give --kubeconfig, run in a cluster, or --controllers=false")
	}
	cfg := kvscontroller.Config{Kube: o.kubeConfig(c.ClientConfig), Workers: o.Workers, LeaderElection: o.LeaderElection}
	if o.LeaderElection.LeaderElect {
		// Liveness, never readiness: a follower serves the API as well as a leader.
		cfg.Watchdog = kvscontroller.NewWatchdog(o.LeaderElection)
		c.HealthzChecks = append(c.HealthzChecks, cfg.Watchdog)
		c.LivezChecks = append(c.LivezChecks, cfg.Watchdog)
	}
	var run controllerRun
	hooks.postStart["start-keyvaluestore-controller"] = func(hookCtx genericapiserver.PostStartHookContext) error {
		cfg.Loopback = rest.CopyConfig(hookCtx.LoopbackClientConfig)
		run.start(hookCtx.Context, func(ctx context.Context) {
			if err := cfg.Run(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "KeyValueStore controller failed")
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			}
		})
		return nil
	}
	hooks.preShutdown["stop-keyvaluestore-controller"] = func() error {
		run.stop(controllerStopTimeout)
		return nil
	}
	return nil
}

// kubeConfig is base with the controller's client limits.
func (o *ControllerOptions) kubeConfig(base *rest.Config) *rest.Config {
	kube := rest.CopyConfig(base)
	kube.QPS, kube.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	if kube.QPS > 0 && kube.Burst == 0 {
		// client-go fills in its default burst only with its default QPS,
		// and refuses a QPS without a burst.
		kube.Burst = rest.DefaultBurst
	}
	return kube
}

// serverHooks are the hooks the options add to the server.
type serverHooks struct {
	postStart   map[string]genericapiserver.PostStartHookFunc
	preShutdown map[string]genericapiserver.PreShutdownHookFunc
}

// controllerStopTimeout bounds how long shutdown waits for the controller
// to stop and release its Lease.
const controllerStopTimeout = 10 * time.Second

// controllerRun stops the controller when shutdown begins (SIGTERM), not
// when the server stops serving (after --shutdown-delay-duration): the
// Lease is released at once, and another replica leads at its next
// attempt (a retry period, jittered: 2-4.4 s by default) instead of after
// the delay. Pre-shutdown hooks hold the server's
// stop back until they return, so the release is not cut off by the
// process exiting.
type controllerRun struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	// stopped: shutdown began. A SIGTERM while the server starts may run
	// the stop before the post-start hook starts the run.
	stopped bool
}

// start runs run in the background with a context that stop cancels,
// unless stop was called already.
func (r *controllerRun) start(parent context.Context, run func(context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	ctx, cancel := context.WithCancel(parent)
	r.cancel, r.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		run(ctx)
	}(r.done)
}

// stop cancels the run and waits up to timeout for it to return; it
// returns at once if the run never started, and keeps it from starting.
func (r *controllerRun) stop(timeout time.Duration) {
	r.mu.Lock()
	r.stopped = true
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}
