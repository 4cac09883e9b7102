package keyvaluestore

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// CacheTransform trims what the controller's informers keep in memory:
// managedFields of the objects it only reads, and on KeyValueStores every
// annotation but the kvstore.io/ ones (the only ones the controller reads; a
// client's last-applied-configuration alone can be as large as the object).
//
// A trimmed copy must never be written back whole, or the trimmed fields
// would be lost: status updates go to /status, whose strategy keeps the
// stored metadata, and the finalizer is removed with a patch.
func CacheTransform(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1alpha1.KeyValueStore:
		o.ManagedFields = nil
		o.Annotations = ownAnnotations(o.Annotations)
	case *v1alpha1.KeyValueStoreBackup:
		o.ManagedFields = nil
		o.Annotations = ownAnnotations(o.Annotations)
	case *corev1.Pod:
		o.ManagedFields = nil
	case *corev1.PersistentVolumeClaim:
		o.ManagedFields = nil
	case *batchv1.Job:
		o.ManagedFields = nil
	case *corev1.Event:
		o.ManagedFields = nil
	}
	// The objects the controller applies (StatefulSets, Services,
	// PodDisruptionBudgets, Deployments) keep their managedFields: an apply
	// is skipped when the fields they say are ours already match.
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
