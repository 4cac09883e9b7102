package keyvaluestorebackup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// fieldStoreName is selectable besides metadata.name and metadata.namespace:
// the backups of one store. The v1alpha1 field label conversion accepts the
// same set.
const fieldStoreName = "spec.storeName"

// GetAttrs returns the labels and selectable fields of a KeyValueStoreBackup.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	b, ok := obj.(*kvstore.KeyValueStoreBackup)
	if !ok {
		return nil, nil, fmt.Errorf("not a KeyValueStoreBackup: %T", obj)
	}
	return b.Labels, SelectableFields(b), nil
}

// SelectableFields returns the fields a field selector can match.
func SelectableFields(b *kvstore.KeyValueStoreBackup) fields.Set {
	return generic.AddObjectMetaFieldsSet(fields.Set{
		fieldStoreName: b.Spec.StoreName,
	}, &b.ObjectMeta, true)
}

// MatchKeyValueStoreBackup matches by label and field selector, using the
// watch cache's index where a selector names spec.storeName.
func MatchKeyValueStoreBackup(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{
		Label:       label,
		Field:       field,
		GetAttrs:    GetAttrs,
		IndexFields: []string{fieldStoreName},
	}
}

// storeNameTrigger lets the watch cache send an event only to watchers whose
// spec.storeName selector can match (the cacher supports one trigger).
func storeNameTrigger(obj runtime.Object) string {
	return obj.(*kvstore.KeyValueStoreBackup).Spec.StoreName
}

// indexers serve field-selected LISTs from the watch cache without a scan.
func indexers() *cache.Indexers {
	return &cache.Indexers{
		storage.FieldIndex(fieldStoreName): func(obj interface{}) ([]string, error) {
			b, ok := obj.(*kvstore.KeyValueStoreBackup)
			if !ok {
				return nil, fmt.Errorf("not a KeyValueStoreBackup: %T", obj)
			}
			return []string{b.Spec.StoreName}, nil
		},
	}
}
