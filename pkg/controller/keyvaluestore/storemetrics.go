package keyvaluestore

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	kvslisters "github.com/kvstore-io/kvstore-apiserver/pkg/generated/listers/kvstore/v1alpha1"
)

// The stores' state, as kube-state-metrics reports built-in workloads', so
// that an SRE can alert on a store that is not Ready or whose backups have
// stopped. Only the leader reports them (from its cache, at each scrape);
// other replicas report none, so a query takes them from whichever leads.
var (
	storePhaseDesc = metrics.NewDesc("kvstore_store_status_phase",
		"1 for the store's current phase (status.phase); one series per store.",
		[]string{"namespace", "name", "phase"}, nil, metrics.ALPHA, "")
	storeReadyDesc = metrics.NewDesc("kvstore_store_ready",
		"1 while the store's Ready condition is True, else 0.",
		[]string{"namespace", "name"}, nil, metrics.ALPHA, "")
	storeLastBackupDesc = metrics.NewDesc("kvstore_store_last_backup_time_seconds",
		"When the store's newest Completed backup completed (status.lastBackupTime), in Unix seconds; absent before its first.",
		[]string{"namespace", "name"}, nil, metrics.ALPHA, "")
	storeNextBackupDesc = metrics.NewDesc("kvstore_store_next_backup_time_seconds",
		"When the store's next scheduled backup is due (status.nextBackupTime), in Unix seconds; absent without a schedule.",
		[]string{"namespace", "name"}, nil, metrics.ALPHA, "")

	// backupAttempts counts backup attempts by how they ended, as the
	// controller records them.
	backupAttempts = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "kvstore", Subsystem: "controller", Name: "backup_attempts_total",
		Help:           "Backup attempts the controller recorded as ended, by the backup's reason (Manual, Scheduled, Final) and result (succeeded, failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason", "result"})
)

// leaderStores is the lister of the controller that leads, nil while this
// replica does not.
var leaderStores atomic.Pointer[kvslisters.KeyValueStoreLister]

// storeCollector reports every store the leader's cache holds.
type storeCollector struct {
	metrics.BaseStableCollector
	stores *atomic.Pointer[kvslisters.KeyValueStoreLister]
}

func newStoreCollector(stores *atomic.Pointer[kvslisters.KeyValueStoreLister]) *storeCollector {
	return &storeCollector{stores: stores}
}

func (c *storeCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{storePhaseDesc, storeReadyDesc, storeLastBackupDesc, storeNextBackupDesc} {
		ch <- d
	}
}

func (c *storeCollector) CollectWithStability(ch chan<- metrics.Metric) {
	lister := c.stores.Load()
	if lister == nil {
		return
	}
	stores, err := (*lister).List(labels.Everything())
	if err != nil {
		return
	}
	for _, kvs := range stores {
		ns, name, st := kvs.Namespace, kvs.Name, kvs.Status
		if st.Phase != "" {
			ch <- metrics.NewLazyConstMetric(storePhaseDesc, metrics.GaugeValue, 1, ns, name, string(st.Phase))
		}
		ready := 0.0
		if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) {
			ready = 1
		}
		ch <- metrics.NewLazyConstMetric(storeReadyDesc, metrics.GaugeValue, ready, ns, name)
		if t := st.LastBackupTime; t != nil {
			ch <- metrics.NewLazyConstMetric(storeLastBackupDesc, metrics.GaugeValue, float64(t.Unix()), ns, name)
		}
		if t := st.NextBackupTime; t != nil {
			ch <- metrics.NewLazyConstMetric(storeNextBackupDesc, metrics.GaugeValue, float64(t.Unix()), ns, name)
		}
	}
}

func observeBackupAttempt(reason v1alpha1.KeyValueStoreBackupReason, succeeded bool) {
	result := "failed"
	if succeeded {
		result = "succeeded"
	}
	backupAttempts.WithLabelValues(string(reason), result).Inc()
}
