// Command kvsbench-operator is the baseline of the benchmark's controller
// phase: the KeyValueStore API as a CRD (bench.kvstore.io) reconciled by a
// controller-runtime operator in a process of its own, the design users
// would otherwise pick. It does what kvstore-apiserver's embedded controller
// does (pkg/controller/keyvaluestore) with controller-runtime's defaults.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	benchv1alpha1 "github.com/kvstore-io/kvstore-apiserver/test/bench/operator/api/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/bench/operator/internal/controller"
)

func main() {
	var metricsAddr, leaderNamespace string
	var leaderElect bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "where /metrics is served (plain HTTP)")
	flag.BoolVar(&leaderElect, "leader-elect", true, "elect a leader with a Lease")
	flag.StringVar(&leaderNamespace, "leader-election-namespace", "kube-system", "namespace of the Lease (needed out of cluster)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse() // also --kubeconfig, registered by controller-runtime
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	// For the benchmark's report of what paces the operator: how long its
	// requests wait in client-go's rate limiters. Only observed; the
	// limiters themselves keep controller-runtime's defaults.
	metrics.RegisterRESTClientMetrics(metrics.MetricRateLimiterLatency)
	setupLog := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		setupLog.Error(err, "scheme")
		os.Exit(1)
	}
	if err := benchv1alpha1.AddToScheme(scheme); err != nil {
		setupLog.Error(err, "scheme")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  "0",
		LeaderElection:          leaderElect,
		LeaderElectionID:        "kvsbench-operator.bench.kvstore.io",
		LeaderElectionNamespace: leaderNamespace,
		// The benchmark stops and starts the operator between repetitions;
		// the next one need not wait for the Lease to expire.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}
	if err := (&controller.KeyValueStoreReconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: mgr.GetEventRecorderFor("kvsbench-operator"),
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "KeyValueStore")
		os.Exit(1)
	}
	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}
