package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// kvstore-apiserver exports its feature gates the way kube-apiserver does
// (kubernetes_feature_enabled), so a reader of both, such as the
// benchmark's report, can tell where the two servers differ.
func TestFeatureGatesExported(t *testing.T) {
	metrics, err := scrape(t, mainReplica)
	require.NoError(t, err)
	enabled := metrics.Sum("kubernetes_feature_enabled", "name")
	require.NotEmpty(t, enabled, "no kubernetes_feature_enabled on /metrics")
	// Off by default in kvstore-apiserver (see docs/benchmarks.md), on in kube-apiserver.
	assert.Equal(t, 0.0, enabled["WatchListCompression"], "WatchListCompression")
}

// The leading replica reports each store's phase, readiness and last
// backup, as kube-state-metrics reports built-in workloads, for alerts on a
// store that is not Ready or whose backups stopped; and counts backup
// attempts by result.
func TestStoreStateIsExported(t *testing.T) {
	ctx := context.Background()
	_, kvs := clients(t)
	ns := namespace(t)
	obj := store("watched", 1)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK}
	createReady(t, kvs, ns, obj)
	b := takeBackup(t, kvs, ns, "now", "watched")
	waitStore(t, kvs, ns, "watched", "lastBackupTime", func(k *v1alpha1.KeyValueStore) bool { return k.Status.LastBackupTime != nil })

	this := map[string]string{"namespace": ns, "name": "watched"}
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(context.Context) error {
		m, err := scrape(t, mainReplica)
		if err != nil {
			return err
		}
		last, ok := m.Sample("kvstore_store_last_backup_time_seconds", this)
		if !ok || last != float64(b.Status.CompletionTime.Unix()) {
			return fmt.Errorf("kvstore_store_last_backup_time_seconds %v (present %v), want %d", last, ok, b.Status.CompletionTime.Unix())
		}
		if ready, _ := m.Sample("kvstore_store_ready", this); ready != 1 {
			return fmt.Errorf("kvstore_store_ready %v", ready)
		}
		if phase, _ := m.Sample("kvstore_store_status_phase", map[string]string{"namespace": ns, "name": "watched", "phase": "Ready"}); phase != 1 {
			return fmt.Errorf("kvstore_store_status_phase Ready %v", phase)
		}
		if n := m.Sum("kvstore_controller_backup_attempts_total", "result")["succeeded"]; n < 1 {
			return fmt.Errorf("kvstore_controller_backup_attempts_total succeeded %v", n)
		}
		return nil
	}))
}

// scrape reads a replica's /metrics as the admin.
func scrape(t *testing.T, r replica) (framework.Metrics, error) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: adminTLS(t)}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", r.port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return framework.ParseMetrics(resp.Body)
}
