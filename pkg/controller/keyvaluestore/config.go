package keyvaluestore

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	kvsinformers "github.com/kvstore-io/kvstore-apiserver/pkg/generated/informers/externalversions"
)

// Config is everything the controller needs to run; Run does the rest
// (clients, informers, leader election, metrics).
type Config struct {
	// Kube reaches kube-apiserver; QPS and Burst are taken as given.
	Kube *rest.Config
	// Loopback reaches this server's own API.
	Loopback *rest.Config
	// Workers is how many stores reconcile at once.
	Workers int
	// LeaderElection makes one replica the writer.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Watchdog, if set, fails the replica's liveness when it holds the Lease
	// but stopped renewing it. It must already be registered as a check.
	Watchdog *leaderelection.HealthzAdaptor
}

// NewWatchdog returns the leader-election liveness check to register on the
// server before it starts and to pass back in Config.Watchdog. It fails
// when this replica leads and has not renewed the Lease for the lease
// duration plus a timeout, which leaves room for a term ended by failed
// renewals to finish: the renewals' deadline and the release's own, plus
// a retry period.
func NewWatchdog(le componentbaseconfig.LeaderElectionConfiguration) *leaderelection.HealthzAdaptor {
	timeout := max(20*time.Second, le.RetryPeriod.Duration+2*le.RenewDeadline.Duration-le.LeaseDuration.Duration+5*time.Second)
	return leaderelection.NewLeaderHealthzAdaptor(timeout)
}

// Run blocks until ctx ends. With leader election it runs the controller
// only while this replica leads, behind a fence that refuses its writes as
// soon as its last renewal of the Lease is older than the renew deadline.
// Losing the Lease stops the controller and the replica stands for election
// again: the process, which also serves the API, keeps running (a
// kube-apiserver outage longer than the renew deadline must not take the
// aggregated API down with it).
func (cfg Config) Run(ctx context.Context) error {
	registerMetrics()
	logger := klog.FromContext(ctx).WithName("controller")
	if !cfg.LeaderElection.LeaderElect {
		kube, kvs, err := cfg.clients(nil)
		if err != nil {
			return err
		}
		return cfg.runController(ctx, kube, kvs)
	}

	le := cfg.LeaderElection
	f := newFence(le.RenewDeadline.Duration)
	kube, kvs, err := cfg.clients(f)
	if err != nil {
		return err
	}
	// The Lease itself is written through a client without the fence.
	lockClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg.Kube), FieldManager+"-leader-election"))
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	hostname, _ := os.Hostname()
	identity := hostname + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		lockClient.CoreV1(), lockClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	// term is held while a controller runs: a new term never starts while
	// the previous one's controller still runs.
	var term sync.Mutex
	for ctx.Err() == nil {
		elector, err := cfg.newElector(&fencedLock{Interface: lock, fence: f}, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				term.Lock()
				defer term.Unlock()
				logger.Info("Became leader; starting the controller", "identity", identity)
				if err := cfg.runController(ctx, kube, kvs); err != nil {
					// Holding the Lease without a controller would stop
					// every store's reconciles: let another replica lead.
					logger.Error(err, "Controller failed; exiting")
					klog.FlushAndExit(klog.ExitFlushTimeout, 1)
				}
			},
			OnStoppedLeading: func() {
				f.close()
				if ctx.Err() != nil {
					logger.Info("Shutting down; leader Lease released", "identity", identity)
					return
				}
				logger.Error(nil, "Lost the leader Lease; controller stopped, its writes fenced off; standing for election again", "identity", identity)
			},
			OnNewLeader: func(id string) {
				if id != identity {
					logger.Info("Another replica leads", "leader", id)
				}
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		elector.Run(ctx)
	}
	term.Lock() // the last term's controller has returned
	defer term.Unlock()
	return nil
}

// newElector is one term's elector on lock. NewLeaderElector leaves the
// watchdog unset (only client-go's RunOrDie ties the two): without
// SetLeaderElection /livez never failed, however stuck the election. It is
// tied only while the term leads: an elector that reads its own identity
// in a Lease it could not renew nor release counts itself as leading, and
// would fail a follower's liveness.
func (cfg Config) newElector(lock resourcelock.Interface, callbacks leaderelection.LeaderCallbacks) (*leaderelection.LeaderElector, error) {
	le := cfg.LeaderElection
	var elector *leaderelection.LeaderElector
	if wd := cfg.Watchdog; wd != nil {
		started, stopped := callbacks.OnStartedLeading, callbacks.OnStoppedLeading
		callbacks.OnStartedLeading = func(ctx context.Context) {
			wd.SetLeaderElection(elector)
			started(ctx)
		}
		callbacks.OnStoppedLeading = func() {
			wd.SetLeaderElection(nil)
			stopped()
		}
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.ResourceName,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		WatchDog:        cfg.Watchdog,
		Callbacks:       callbacks,
	})
	if err != nil {
		return nil, err
	}
	return elector, nil
}

// clients speak protobuf: smaller and cheaper than JSON on both wires.
// Both go through the fence f (nil: none) when leader election is on.
func (cfg Config) clients(f *fence) (kubernetes.Interface, versioned.Interface, error) {
	kubeConfig := rest.CopyConfig(cfg.Kube)
	if f != nil {
		kubeConfig.Wrap(f.wrap)
	}
	kubeConfig.ContentType = runtime.ContentTypeProtobuf
	kubeConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kubeConfig = rest.AddUserAgent(kubeConfig, FieldManager)
	kube, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kube client: %w", err)
	}
	loopback := rest.CopyConfig(cfg.Loopback)
	loopback.ContentType = runtime.ContentTypeProtobuf
	loopback.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// Loopback: gzip would only cost CPU at both ends of the same process.
	loopback.DisableCompression = true
	if f != nil {
		loopback.Wrap(f.wrap)
	}
	kvs, err := versioned.NewForConfig(loopback)
	if err != nil {
		return nil, nil, fmt.Errorf("kvstore client: %w", err)
	}
	return kube, kvs, nil
}

// runController starts informers and workers and blocks until ctx ends.
func (cfg Config) runController(ctx context.Context, kube kubernetes.Interface, kvs versioned.Interface) error {
	leader.Set(1)
	defer leader.Set(0)
	kubeInf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = LabelManagedBy + "=" + ManagedBy
		}),
		kubeinformers.WithTransform(CacheTransform))
	kvsInf := kvsinformers.NewSharedInformerFactoryWithOptions(kvs, 0, kvsinformers.WithTransform(CacheTransform))
	nsInf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTransform(CacheTransform))
	// A factory holds one informer per type: one per kind of events.
	eventInfs := map[string]kubeinformers.SharedInformerFactory{}
	for _, kind := range failedCreateKinds {
		eventInfs[kind] = kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = FailedCreateEvents(kind) }),
			kubeinformers.WithTransform(CacheTransform))
	}
	failedCreates := map[string]coreinformers.EventInformer{}
	for kind, inf := range eventInfs {
		failedCreates[kind] = inf.Core().V1().Events()
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	broadcaster := newEventBroadcaster(ctx)
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: FieldManager})

	ctrl, err := newController(kube, kvs, kubeInf, kvsInf, nsInf.Core().V1().Namespaces(), failedCreates, recorder)
	if err != nil {
		return err
	}
	kubeInf.Start(ctx.Done())
	kvsInf.Start(ctx.Done())
	nsInf.Start(ctx.Done())
	for _, inf := range eventInfs {
		inf.Start(ctx.Done())
		defer inf.Shutdown()
	}
	defer kubeInf.Shutdown()
	defer kvsInf.Shutdown()
	defer nsInf.Shutdown()
	return ctrl.Run(ctx, cfg.Workers)
}
