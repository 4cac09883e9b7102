package keyvaluestorebackup

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// TableConvertor prints KeyValueStoreBackups for `kubectl get`: NAME, STORE,
// PHASE, STARTED, COMPLETED and AGE.
type TableConvertor struct{}

var _ rest.TableConvertor = TableConvertor{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the KeyValueStoreBackup."},
	{Name: "Store", Type: "string", Description: "The KeyValueStore backed up (spec.storeName)."},
	{Name: "Phase", Type: "string", Description: "Progress of the backup (status.phase)."},
	{Name: "Started", Type: "string", Description: "Time since the backup Job started (status.startTime)."},
	{Name: "Completed", Type: "string", Description: "Time since the backup finished (status.completionTime)."},
	{Name: "Age", Type: "string", Description: "Time since the backup was created."},
}

// ConvertToTable turns one backup or a list into table rows.
func (TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = columns
	}

	switch t := obj.(type) {
	case *kvstore.KeyValueStoreBackup:
		table.Rows = []metav1.TableRow{row(t)}
	case *kvstore.KeyValueStoreBackupList:
		table.Rows = make([]metav1.TableRow, 0, len(t.Items))
		for i := range t.Items {
			table.Rows = append(table.Rows, row(&t.Items[i]))
		}
	default:
		return nil, fmt.Errorf("cannot print %T as a KeyValueStoreBackup table", obj)
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

func row(b *kvstore.KeyValueStoreBackup) metav1.TableRow {
	phase := b.Status.Phase
	if phase == "" {
		phase = kvstore.BackupPhasePending
	}
	return metav1.TableRow{
		Object: runtime.RawExtension{Object: b},
		Cells: []interface{}{
			b.Name,
			b.Spec.StoreName,
			string(phase),
			since(b.Status.StartTime),
			since(b.Status.CompletionTime),
			age(b.CreationTimestamp),
		},
	}
}

// since prints an optional time as kubectl prints ages, "<none>" when unset.
func since(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "<none>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
