package keyvaluestore

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// TableConvertor prints KeyValueStores for `kubectl get`: NAME, REPLICAS,
// READY, PHASE, AGE, and IMAGE, CAPACITY and LAST BACKUP under -o wide
// (priority 1).
type TableConvertor struct{}

var _ rest.TableConvertor = TableConvertor{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the KeyValueStore."},
	{Name: "Replicas", Type: "integer", Description: "Desired number of data replicas (spec.replicas)."},
	{Name: "Ready", Type: "string", Description: "Ready data replicas out of desired."},
	{Name: "Phase", Type: "string", Description: "Summary of the store's state (status.phase)."},
	{Name: "Age", Type: "string", Description: "Time since the store was created."},
	{Name: "Image", Type: "string", Priority: 1, Description: "Image of the data replicas (spec.image)."},
	{Name: "Capacity", Type: "string", Priority: 1, Description: "Storage each data replica's claim asks for at least (spec.storage.capacity)."},
	{Name: "Last Backup", Type: "string", Priority: 1, Description: "Time since the store's newest Completed backup completed (status.lastBackupTime)."},
}

// ConvertToTable turns one store or a list into table rows.
func (TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = columns
	}

	switch t := obj.(type) {
	case *kvstore.KeyValueStore:
		table.Rows = []metav1.TableRow{row(t)}
	case *kvstore.KeyValueStoreList:
		table.Rows = make([]metav1.TableRow, 0, len(t.Items))
		for i := range t.Items {
			table.Rows = append(table.Rows, row(&t.Items[i]))
		}
	default:
		return nil, fmt.Errorf("cannot print %T as a KeyValueStore table", obj)
	}

	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

func row(kvs *kvstore.KeyValueStore) metav1.TableRow {
	var replicas int32
	if kvs.Spec.Replicas != nil {
		replicas = *kvs.Spec.Replicas
	}
	phase := string(kvs.Status.Phase)
	if kvs.DeletionTimestamp != nil {
		phase = string(kvstore.PhaseTerminating)
	} else if phase == "" {
		phase = string(kvstore.PhasePending)
	}
	return metav1.TableRow{
		Object: runtime.RawExtension{Object: kvs},
		Cells: []interface{}{
			kvs.Name,
			int64(replicas),
			fmt.Sprintf("%d/%d", kvs.Status.ReadyReplicas, replicas),
			phase,
			age(kvs.CreationTimestamp),
			kvs.Spec.Image,
			kvs.Spec.Storage.Size.String(),
			since(kvs.Status.LastBackupTime),
		},
	}
}

// since is how long ago t was, "<none>" when it never was (as kubectl
// prints a CronJob's last schedule).
func since(t *metav1.Time) string {
	if t == nil {
		return "<none>"
	}
	return age(*t)
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// ScaleTableConvertor prints the /scale of a store: NAME, DESIRED, AVAILABLE
// and AGE, the columns kube-apiserver prints for the scale of a StatefulSet.
type ScaleTableConvertor struct{}

var _ rest.TableConvertor = ScaleTableConvertor{}

var scaleColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the KeyValueStore."},
	{Name: "Desired", Type: "integer", Description: "Desired number of data replicas (spec.replicas)."},
	{Name: "Available", Type: "integer", Description: "Data replica Pods that exist (status.replicas)."},
	{Name: "Age", Type: "string", Description: "Time since the store was created."},
}

// ConvertToTable turns one Scale into a table row.
func (ScaleTableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	scale, ok := obj.(*scalescheme.Scale)
	if !ok {
		return nil, fmt.Errorf("cannot print %T as a Scale table", obj)
	}
	table := &metav1.Table{
		ListMeta: metav1.ListMeta{ResourceVersion: scale.ResourceVersion},
		Rows: []metav1.TableRow{{
			Object: runtime.RawExtension{Object: scale},
			Cells: []interface{}{
				scale.Name,
				int64(scale.Spec.Replicas),
				int64(scale.Status.Replicas),
				age(scale.CreationTimestamp),
			},
		}},
	}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = scaleColumns
	}
	return table, nil
}
