package keyvaluestore

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// CacheTransform trims what the controller's informers keep in memory:
// managedFields on every object (the controller never reads them), and on
// KeyValueStores every annotation but the kvstore.io/ ones (the only ones the
// controller reads; a client's last-applied-configuration alone can be as
// large as the object). With this the controller's cache of stores is about half
// the size of the watch cache's copy.
//
// A trimmed copy must never be written back whole, or the trimmed fields
// would be lost: status updates go to /status, whose strategy keeps the
// stored metadata, and the finalizer is removed with a patch.
func CacheTransform(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // a tombstone or a type without metadata: keep as is
	}
	m.SetManagedFields(nil)
	if _, ok := obj.(*v1alpha1.KeyValueStore); ok {
		m.SetAnnotations(ownAnnotations(m.GetAnnotations()))
	}
	return obj, nil
}

// ownAnnotations returns the kvstore.io/ annotations of in (nil if none).
// Sub-domains are not ours: bench.kvstore.io, say, belongs to someone else.
// It is idempotent, as a TransformFunc must be.
func ownAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if strings.HasPrefix(k, v1alpha1.GroupName+"/") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
