package keyvaluestore

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

var (
	reconcileTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "kvstore", Subsystem: "controller", Name: "reconcile_total",
		Help:           "KeyValueStore reconciles by result (success, error, requeue).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "kvstore", Subsystem: "controller", Name: "reconcile_duration_seconds",
		Help:           "Time of one KeyValueStore reconcile, by result.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	applyTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "kvstore", Subsystem: "controller", Name: "apply_total",
		Help:           "Server-side applies of owned objects by kind and outcome (created, updated, unchanged: skipped as a no-op, refused: an object the store does not control is in the way).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "outcome"})
	// leader is 1 for a term: from acquiring the Lease until the term ends.
	leader = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "kvstore", Subsystem: "controller", Name: "leader",
		Help:           "1 while this replica runs the controller as leader (from acquiring the Lease until its term ends; a replica paused past its lease reads 1 for up to the renew deadline after it resumes, its writes fenced off), else 0.",
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// registerMetrics adds the controller metrics to the /metrics registry.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reconcileTotal, reconcileDuration, applyTotal, leader, backupAttempts)
		legacyregistry.CustomMustRegister(newStoreCollector(&leaderStores))
		// Every series from 0: increase() reads a series first scraped at
		// 1 as no increase, and would miss the first failure.
		for _, reason := range []v1alpha1.KeyValueStoreBackupReason{v1alpha1.BackupReasonManual, v1alpha1.BackupReasonScheduled, v1alpha1.BackupReasonFinal} {
			for _, result := range []string{"succeeded", "failed"} {
				backupAttempts.WithLabelValues(string(reason), result)
			}
		}
	})
}

func observeReconcile(res result, err error, d time.Duration) {
	label := "success"
	switch {
	case err != nil:
		label = "error"
	case res.requeueAfter > 0:
		label = "requeue"
	}
	reconcileTotal.WithLabelValues(label).Inc()
	reconcileDuration.WithLabelValues(label).Observe(d.Seconds())
}

func observeApply(kind string, outcome applyOutcome) {
	applyTotal.WithLabelValues(kind, string(outcome)).Inc()
}
