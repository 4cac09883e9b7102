package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

func TestAPIResourcesListsKeyValueStores(t *testing.T) {
	namespace(t)
	_, rows := table(t, mustKubectl(t, "api-resources", "--api-group=kvstore.io"))
	assert.ElementsMatch(t, []map[string]string{
		{"NAME": "keyvaluestores", "SHORTNAMES": "kvs", "APIVERSION": "kvstore.io/v1beta1", "NAMESPACED": "true", "KIND": "KeyValueStore"},
		{"NAME": "keyvaluestorebackups", "SHORTNAMES": "kvsbackup", "APIVERSION": "kvstore.io/v1beta1", "NAMESPACED": "true", "KIND": "KeyValueStoreBackup"},
	}, rows)
}

func TestAPIServiceAvailable(t *testing.T) {
	namespace(t)
	// Polled: kvstore-apiserver may be restarting right now.
	err := framework.WaitFor(context.Background(), eventually, func(context.Context) error {
		_, rows := table(t, mustKubectl(t, "get", "apiservice", "v1alpha1.kvstore.io"))
		if len(rows) != 1 || rows[0]["AVAILABLE"] != "True" {
			return fmt.Errorf("not Available: %v", rows)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "True", mustKubectl(t, "get", "apiservice", "v1alpha1.kvstore.io", "-o",
		`jsonpath={.status.conditions[?(@.type=="Available")].status}`))
	assert.Equal(t, "kvstore-system/kvstore-apiserver", mustKubectl(t, "get", "apiservice", "v1alpha1.kvstore.io", "-o",
		`jsonpath={.spec.service.namespace}/{.spec.service.name}`))
}

func TestExplainReplicas(t *testing.T) {
	namespace(t)
	out := strings.Join(strings.Fields(mustKubectl(t, "explain", "keyvaluestore.spec.replicas")), " ")
	assert.Contains(t, out, "KIND: KeyValueStore")
	assert.Contains(t, out, "FIELD: replicas <integer>")
	assert.Contains(t, out, "number of data replicas")
}

func TestExplainBackupsAndSchedule(t *testing.T) {
	namespace(t)
	out := strings.Join(strings.Fields(mustKubectl(t, "explain", "keyvaluestorebackup.spec")), " ")
	assert.Contains(t, out, "KIND: KeyValueStoreBackup")
	assert.Contains(t, out, "storeName")
	assert.Contains(t, out, "reason")
	out = strings.Join(strings.Fields(mustKubectl(t, "explain", "keyvaluestore.spec.backup.schedule")), " ")
	assert.Contains(t, out, "5-field cron expression")
	out = strings.Join(strings.Fields(mustKubectl(t, "explain", "keyvaluestore.spec.bootstrap")), " ")
	assert.Contains(t, out, "fromBackup")
}
