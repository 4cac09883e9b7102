package keyvaluestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

func tableKVS(name string, replicas *int32, ready int32, phase kvstore.KeyValueStorePhase) *kvstore.KeyValueStore {
	return &kvstore.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         "default",
			ResourceVersion:   "42",
			CreationTimestamp: metav1.NewTime(time.Now().Add(-10 * time.Hour)),
		},
		Spec:   kvstore.KeyValueStoreSpec{Replicas: replicas, Image: "redis:7.2", Storage: kvstore.StorageSpec{Size: resource.MustParse("1Gi")}},
		Status: kvstore.KeyValueStoreStatus{Phase: phase, ReadyReplicas: ready},
	}
}

func TestConvertToTableColumns(t *testing.T) {
	table, err := TableConvertor{}.ConvertToTable(context.Background(), tableKVS("a", ptr.To[int32](3), 2, kvstore.PhaseCreating), nil)
	require.NoError(t, err)

	names := make([]string, 0, len(table.ColumnDefinitions))
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"Name", "Replicas", "Ready", "Phase", "Age", "Image", "Capacity", "Last Backup"}, names)

	byName := map[string]metav1.TableColumnDefinition{}
	for _, c := range table.ColumnDefinitions {
		byName[c.Name] = c
	}
	assert.Equal(t, "name", byName["Name"].Format)
	assert.Equal(t, "integer", byName["Replicas"].Type)
	for _, n := range []string{"Name", "Replicas", "Ready", "Phase", "Age"} {
		assert.Equal(t, int32(0), byName[n].Priority, n)
		assert.NotEmpty(t, byName[n].Description, n)
	}
	for _, n := range []string{"Image", "Capacity", "Last Backup"} {
		assert.Equal(t, int32(1), byName[n].Priority, "%s is shown only with -o wide", n)
	}

	// Every row has one cell per column.
	require.Len(t, table.Rows, 1)
	assert.Len(t, table.Rows[0].Cells, len(table.ColumnDefinitions))
}

func TestConvertToTableCells(t *testing.T) {
	deleting := tableKVS("d", ptr.To[int32](3), 3, kvstore.PhaseReady)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now

	noTimestamp := tableKVS("n", ptr.To[int32](1), 0, "")
	noTimestamp.CreationTimestamp = metav1.Time{}

	backedUp := tableKVS("l", ptr.To[int32](1), 1, kvstore.PhaseReady)
	backedUp.Status.LastBackupTime = ptr.To(metav1.NewTime(time.Now().Add(-3 * time.Hour)))

	tests := []struct {
		name      string
		obj       *kvstore.KeyValueStore
		wantCells []interface{} // Age excluded, checked separately
		wantAge   string
	}{
		{
			name:      "ready count out of desired",
			obj:       tableKVS("a", ptr.To[int32](3), 2, kvstore.PhaseCreating),
			wantCells: []interface{}{"a", int64(3), "2/3", "Creating", "redis:7.2", "1Gi", "<none>"},
			wantAge:   "10h",
		},
		{
			name:      "empty phase prints Pending",
			obj:       tableKVS("b", ptr.To[int32](5), 0, ""),
			wantCells: []interface{}{"b", int64(5), "0/5", "Pending", "redis:7.2", "1Gi", "<none>"},
			wantAge:   "10h",
		},
		{
			name:      "deleting prints Terminating whatever the phase",
			obj:       deleting,
			wantCells: []interface{}{"d", int64(3), "3/3", "Terminating", "redis:7.2", "1Gi", "<none>"},
			wantAge:   "10h",
		},
		{
			name:      "nil replicas prints 0",
			obj:       tableKVS("c", nil, 0, kvstore.PhaseFailed),
			wantCells: []interface{}{"c", int64(0), "0/0", "Failed", "redis:7.2", "1Gi", "<none>"},
			wantAge:   "10h",
		},
		{
			name:      "last backup",
			obj:       backedUp,
			wantCells: []interface{}{"l", int64(1), "1/1", "Ready", "redis:7.2", "1Gi", "3h"},
			wantAge:   "10h",
		},
		{
			name:      "unknown age",
			obj:       noTimestamp,
			wantCells: []interface{}{"n", int64(1), "0/1", "Pending", "redis:7.2", "1Gi", "<none>"},
			wantAge:   "<unknown>",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := TableConvertor{}.ConvertToTable(context.Background(), tc.obj, &metav1.TableOptions{})
			require.NoError(t, err)
			require.Len(t, table.Rows, 1)
			row := table.Rows[0]
			require.Len(t, row.Cells, len(columns))
			cells := append([]interface{}{row.Cells[0], row.Cells[1], row.Cells[2], row.Cells[3]}, row.Cells[5:]...)
			assert.Equal(t, tc.wantCells, cells)
			assert.Equal(t, tc.wantAge, row.Cells[4])
			assert.Same(t, tc.obj, row.Object.Object, "row carries the object for -o name and custom columns")
			assert.Equal(t, "42", table.ResourceVersion)
			assert.Empty(t, table.Continue)
		})
	}
}

func TestConvertToTableList(t *testing.T) {
	list := &kvstore.KeyValueStoreList{
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "next-page", RemainingItemCount: ptr.To[int64](7)},
		Items: []kvstore.KeyValueStore{
			*tableKVS("one", ptr.To[int32](3), 3, kvstore.PhaseReady),
			*tableKVS("two", ptr.To[int32](1), 0, kvstore.PhaseUpgrading),
		},
	}
	table, err := TableConvertor{}.ConvertToTable(context.Background(), list, &metav1.TableOptions{})
	require.NoError(t, err)

	assert.Len(t, table.ColumnDefinitions, len(columns))
	assert.Equal(t, "99", table.ResourceVersion)
	assert.Equal(t, "next-page", table.Continue)
	require.NotNil(t, table.RemainingItemCount)
	assert.Equal(t, int64(7), *table.RemainingItemCount)

	require.Len(t, table.Rows, 2)
	assert.Equal(t, []interface{}{"one", int64(3), "3/3", "Ready"}, table.Rows[0].Cells[:4])
	assert.Equal(t, []interface{}{"two", int64(1), "0/1", "Upgrading"}, table.Rows[1].Cells[:4])
	assert.Same(t, &list.Items[1], table.Rows[1].Object.Object, "row points at the list item")

	empty, err := TableConvertor{}.ConvertToTable(context.Background(), &kvstore.KeyValueStoreList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}, nil)
	require.NoError(t, err)
	assert.NotNil(t, empty.Rows, "an empty list gives an empty, non-nil row slice")
	assert.Empty(t, empty.Rows)
	assert.Equal(t, "5", empty.ResourceVersion)
}

func TestConvertToTableNoHeaders(t *testing.T) {
	obj := tableKVS("a", ptr.To[int32](3), 2, kvstore.PhaseReady)

	withHeaders, err := TableConvertor{}.ConvertToTable(context.Background(), obj, &metav1.TableOptions{NoHeaders: false})
	require.NoError(t, err)
	assert.Len(t, withHeaders.ColumnDefinitions, len(columns))

	noHeaders, err := TableConvertor{}.ConvertToTable(context.Background(), obj, &metav1.TableOptions{NoHeaders: true})
	require.NoError(t, err)
	assert.Empty(t, noHeaders.ColumnDefinitions)
	require.Len(t, noHeaders.Rows, 1)
	assert.Len(t, noHeaders.Rows[0].Cells, len(columns), "rows keep every cell")

	// Options of another type are ignored: headers are printed.
	other, err := TableConvertor{}.ConvertToTable(context.Background(), obj, &metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, other.ColumnDefinitions, len(columns))
}

func TestConvertToTableWrongType(t *testing.T) {
	for _, obj := range []runtime.Object{
		&metav1.Status{},
		&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
	} {
		table, err := TableConvertor{}.ConvertToTable(context.Background(), obj, nil)
		require.Error(t, err, "%T", obj)
		assert.Nil(t, table)
		assert.Contains(t, err.Error(), "KeyValueStore")
	}
}

func TestScaleConvertToTable(t *testing.T) {
	kvs := tableKVS("a", ptr.To[int32](5), 2, kvstore.PhaseUpgrading)
	kvs.Status.Replicas = 4
	scale, err := scaleFromKeyValueStore(kvs)
	require.NoError(t, err)

	table, err := (&ScaleREST{}).ConvertToTable(context.Background(), scale, &metav1.TableOptions{})
	require.NoError(t, err)
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
		assert.NotEmpty(t, c.Description, c.Name)
	}
	assert.Equal(t, []string{"Name", "Desired", "Available", "Age"}, names, "the columns of kube's own scale tables")
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []interface{}{"a", int64(5), int64(4), "10h"}, table.Rows[0].Cells)
	assert.Same(t, scale, table.Rows[0].Object.Object)
	assert.Equal(t, "42", table.ResourceVersion)

	noHeaders, err := ScaleTableConvertor{}.ConvertToTable(context.Background(), scale, &metav1.TableOptions{NoHeaders: true})
	require.NoError(t, err)
	assert.Empty(t, noHeaders.ColumnDefinitions)
	assert.Len(t, noHeaders.Rows[0].Cells, 4)

	_, err = ScaleTableConvertor{}.ConvertToTable(context.Background(), kvs, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Scale")
}
