package keyvaluestorebackup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

func tableBackup(name string, status kvstore.KeyValueStoreBackupStatus) *kvstore.KeyValueStoreBackup {
	return &kvstore.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", ResourceVersion: "42",
			CreationTimestamp: metav1.NewTime(time.Now().Add(-10 * time.Hour)),
		},
		Spec:   kvstore.KeyValueStoreBackupSpec{StoreName: "demo", Reason: kvstore.BackupReasonManual},
		Status: status,
	}
}

func TestConvertToTableColumns(t *testing.T) {
	table, err := TableConvertor{}.ConvertToTable(context.Background(), tableBackup("a", kvstore.KeyValueStoreBackupStatus{}), nil)
	require.NoError(t, err)
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
		assert.NotEmpty(t, c.Description, c.Name)
		assert.Equal(t, int32(0), c.Priority, c.Name)
	}
	assert.Equal(t, []string{"Name", "Store", "Phase", "Started", "Completed", "Age"}, names)
	assert.Equal(t, "name", table.ColumnDefinitions[0].Format)
	require.Len(t, table.Rows, 1)
	assert.Len(t, table.Rows[0].Cells, len(table.ColumnDefinitions))
}

func TestConvertToTableCells(t *testing.T) {
	start := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	done := metav1.NewTime(time.Now().Add(-time.Hour))
	noTimestamp := tableBackup("n", kvstore.KeyValueStoreBackupStatus{})
	noTimestamp.CreationTimestamp = metav1.Time{}
	for _, tc := range []struct {
		name string
		obj  *kvstore.KeyValueStoreBackup
		want []interface{}
	}{
		{"empty phase prints Pending", tableBackup("a", kvstore.KeyValueStoreBackupStatus{}),
			[]interface{}{"a", "demo", "Pending", "<none>", "<none>", "10h"}},
		{"running", tableBackup("b", kvstore.KeyValueStoreBackupStatus{Phase: kvstore.BackupPhaseRunning, StartTime: &start}),
			[]interface{}{"b", "demo", "Running", "120m", "<none>", "10h"}},
		{"completed", tableBackup("c", kvstore.KeyValueStoreBackupStatus{Phase: kvstore.BackupPhaseCompleted, StartTime: &start, CompletionTime: &done}),
			[]interface{}{"c", "demo", "Completed", "120m", "60m", "10h"}},
		{"unknown age", noTimestamp, []interface{}{"n", "demo", "Pending", "<none>", "<none>", "<unknown>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := TableConvertor{}.ConvertToTable(context.Background(), tc.obj, &metav1.TableOptions{})
			require.NoError(t, err)
			require.Len(t, table.Rows, 1)
			assert.Equal(t, tc.want, table.Rows[0].Cells)
			assert.Same(t, tc.obj, table.Rows[0].Object.Object)
			assert.Equal(t, "42", table.ResourceVersion)
		})
	}
}

func TestConvertToTableList(t *testing.T) {
	list := &kvstore.KeyValueStoreBackupList{
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "next", RemainingItemCount: ptr.To[int64](3)},
		Items: []kvstore.KeyValueStoreBackup{
			*tableBackup("one", kvstore.KeyValueStoreBackupStatus{Phase: kvstore.BackupPhaseFailed}),
			*tableBackup("two", kvstore.KeyValueStoreBackupStatus{}),
		},
	}
	table, err := TableConvertor{}.ConvertToTable(context.Background(), list, &metav1.TableOptions{NoHeaders: true})
	require.NoError(t, err)
	assert.Empty(t, table.ColumnDefinitions)
	assert.Equal(t, "99", table.ResourceVersion)
	assert.Equal(t, "next", table.Continue)
	assert.Equal(t, ptr.To[int64](3), table.RemainingItemCount)
	require.Len(t, table.Rows, 2)
	assert.Equal(t, []interface{}{"one", "demo", "Failed"}, table.Rows[0].Cells[:3])
	assert.Same(t, &list.Items[1], table.Rows[1].Object.Object)

	empty, err := TableConvertor{}.ConvertToTable(context.Background(), &kvstore.KeyValueStoreBackupList{}, nil)
	require.NoError(t, err)
	assert.NotNil(t, empty.Rows)
	assert.Empty(t, empty.Rows)
}

func TestConvertToTableWrongType(t *testing.T) {
	_, err := TableConvertor{}.ConvertToTable(context.Background(), &kvstore.KeyValueStore{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KeyValueStoreBackup")
}
