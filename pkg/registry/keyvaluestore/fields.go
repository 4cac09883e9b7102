package keyvaluestore

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

// Selectable fields besides metadata.name and metadata.namespace. The
// v1alpha1 field label conversion accepts the same set.
const (
	fieldPhase = "status.phase"
	fieldImage = "spec.image"
)

// GetAttrs returns the labels and selectable fields of a KeyValueStore.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	kvs, ok := obj.(*kvstore.KeyValueStore)
	if !ok {
		return nil, nil, fmt.Errorf("not a KeyValueStore: %T", obj)
	}
	return kvs.Labels, SelectableFields(kvs), nil
}

// SelectableFields returns the fields a field selector can match.
func SelectableFields(kvs *kvstore.KeyValueStore) fields.Set {
	return generic.AddObjectMetaFieldsSet(fields.Set{
		fieldPhase: string(kvs.Status.Phase),
		fieldImage: kvs.Spec.Image,
	}, &kvs.ObjectMeta, true)
}

// MatchKeyValueStore matches by label and field selector, using the watch
// cache's indexes where a selector names an indexed field.
func MatchKeyValueStore(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{
		Label:       label,
		Field:       field,
		GetAttrs:    GetAttrs,
		IndexFields: []string{fieldPhase, fieldImage},
	}
}

// phaseTrigger lets the watch cache send an event only to watchers whose
// status.phase selector can match (the cacher supports one trigger).
func phaseTrigger(obj runtime.Object) string {
	return string(obj.(*kvstore.KeyValueStore).Status.Phase)
}

// indexers serve field-selected LISTs from the watch cache without a scan.
func indexers() *cache.Indexers {
	return &cache.Indexers{
		storage.FieldIndex(fieldPhase): func(obj interface{}) ([]string, error) {
			kvs, ok := obj.(*kvstore.KeyValueStore)
			if !ok {
				return nil, fmt.Errorf("not a KeyValueStore: %T", obj)
			}
			return []string{string(kvs.Status.Phase)}, nil
		},
		storage.FieldIndex(fieldImage): func(obj interface{}) ([]string, error) {
			kvs, ok := obj.(*kvstore.KeyValueStore)
			if !ok {
				return nil, fmt.Errorf("not a KeyValueStore: %T", obj)
			}
			return []string{kvs.Spec.Image}, nil
		},
	}
}
