package v1beta1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// One test per hand-written conversion function in conversion.go.

func TestConvertKeyValueStoreToInternalMovesTheAnnotation(t *testing.T) {
	in := &KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Annotations: map[string]string{
			kvstore.CurrentImageAnnotation: "redis:7.2",
			"team":                         "storage",
		}},
		Spec: KeyValueStoreSpec{Image: "redis:7.4"},
	}
	before := in.DeepCopy()
	out := &kvstore.KeyValueStore{}
	require.NoError(t, Convert_v1beta1_KeyValueStore_To_kvstore_KeyValueStore(in, out, nil))
	assert.Equal(t, "redis:7.2", out.Status.CurrentImage)
	assert.Equal(t, map[string]string{"team": "storage"}, out.Annotations, "the annotation is not kept in the internal object")
	assert.Equal(t, "redis:7.4", out.Spec.Image)
	assert.Equal(t, before, in, "the input is not modified")

	// Only the annotation: no empty map is left behind.
	in = &KeyValueStore{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kvstore.CurrentImageAnnotation: "x"}}}
	out = &kvstore.KeyValueStore{}
	require.NoError(t, Convert_v1beta1_KeyValueStore_To_kvstore_KeyValueStore(in, out, nil))
	assert.Nil(t, out.Annotations)
	assert.Equal(t, "x", out.Status.CurrentImage)

	// No annotation: no currentImage, annotations shared as generated code does.
	in = &KeyValueStore{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}}
	out = &kvstore.KeyValueStore{}
	require.NoError(t, Convert_v1beta1_KeyValueStore_To_kvstore_KeyValueStore(in, out, nil))
	assert.Empty(t, out.Status.CurrentImage)
	assert.Equal(t, map[string]string{"a": "b"}, out.Annotations)
}

func TestConvertKeyValueStoreFromInternalWritesTheAnnotation(t *testing.T) {
	in := &kvstore.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Annotations: map[string]string{"team": "storage"}},
		Status:     kvstore.KeyValueStoreStatus{Phase: kvstore.PhaseReady, CurrentImage: "redis:7.2"},
	}
	before := in.DeepCopy()
	out := &KeyValueStore{}
	require.NoError(t, Convert_kvstore_KeyValueStore_To_v1beta1_KeyValueStore(in, out, nil))
	assert.Equal(t, map[string]string{"team": "storage", kvstore.CurrentImageAnnotation: "redis:7.2"}, out.Annotations)
	assert.Equal(t, PhaseReady, out.Status.Phase)
	assert.Equal(t, before, in, "the input is not modified")

	// No currentImage: no annotation, and a stale one in the internal
	// object (which validation refuses) is not passed on.
	in = &kvstore.KeyValueStore{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kvstore.CurrentImageAnnotation: "stale"}}}
	out = &KeyValueStore{}
	require.NoError(t, Convert_kvstore_KeyValueStore_To_v1beta1_KeyValueStore(in, out, nil))
	assert.Nil(t, out.Annotations)

	// A stale one is replaced by the status's value.
	in.Status.CurrentImage = "redis:7.4"
	out = &KeyValueStore{}
	require.NoError(t, Convert_kvstore_KeyValueStore_To_v1beta1_KeyValueStore(in, out, nil))
	assert.Equal(t, map[string]string{kvstore.CurrentImageAnnotation: "redis:7.4"}, out.Annotations)
	assert.Equal(t, "stale", in.Annotations[kvstore.CurrentImageAnnotation], "the input is not modified")
}

func TestConvertKeyValueStoreStatusFromInternalDropsCurrentImage(t *testing.T) {
	in := &kvstore.KeyValueStoreStatus{Phase: kvstore.PhaseDegraded, ReadyReplicas: 2, CurrentImage: "redis:7.2", Selector: "a=b"}
	out := &KeyValueStoreStatus{}
	require.NoError(t, Convert_kvstore_KeyValueStoreStatus_To_v1beta1_KeyValueStoreStatus(in, out, nil))
	assert.Equal(t, KeyValueStoreStatus{Phase: PhaseDegraded, ReadyReplicas: 2, Selector: "a=b"}, *out)
}

func TestConvertStorageSpec(t *testing.T) {
	class := "fast"
	in := &StorageSpec{Capacity: resource.MustParse("1536Mi"), StorageClassName: &class}
	internal := &kvstore.StorageSpec{}
	require.NoError(t, Convert_v1beta1_StorageSpec_To_kvstore_StorageSpec(in, internal, nil))
	assert.Equal(t, "1536Mi", internal.Size.String())
	assert.Equal(t, &class, internal.StorageClassName)

	back := &StorageSpec{}
	require.NoError(t, Convert_kvstore_StorageSpec_To_v1beta1_StorageSpec(internal, back, nil))
	assert.Equal(t, "1536Mi", back.Capacity.String())
	assert.Equal(t, &class, back.StorageClassName)
}

func TestFieldLabelConversion(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))
	for kind, labels := range map[string][]string{
		"KeyValueStore":       {"metadata.name", "metadata.namespace", "spec.image", "status.phase"},
		"KeyValueStoreBackup": {"metadata.name", "metadata.namespace", "spec.storeName"},
	} {
		gvk := SchemeGroupVersion.WithKind(kind)
		for _, label := range labels {
			l, v, err := scheme.ConvertFieldLabel(gvk, label, "x")
			require.NoError(t, err, "%s %s", kind, label)
			assert.Equal(t, label, l)
			assert.Equal(t, "x", v)
		}
		_, _, err := scheme.ConvertFieldLabel(gvk, "spec.storage.capacity", "1Gi")
		assert.Error(t, err, kind)
	}
}

func TestDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))
	kvs := &KeyValueStore{Spec: KeyValueStoreSpec{Image: "redis:7.2", Backup: &BackupSpec{Image: "b"}}}
	scheme.Default(kvs)
	assert.Equal(t, "1Gi", kvs.Spec.Storage.Capacity.String())
	assert.EqualValues(t, 3, *kvs.Spec.Replicas)
	assert.EqualValues(t, 6379, kvs.Spec.Port)
	assert.Equal(t, RetainPersistentVolumeClaimRetentionPolicyType, kvs.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
	assert.EqualValues(t, 7, *kvs.Spec.Backup.Keep)
	assert.EqualValues(t, 600, *kvs.Spec.Backup.ActiveDeadlineSeconds)

	b := &KeyValueStoreBackup{}
	scheme.Default(b)
	assert.Equal(t, BackupReasonManual, b.Spec.Reason)
}
