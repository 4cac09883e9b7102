package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	return scheme
}

func TestDefaultsThroughScheme(t *testing.T) {
	oneGi := resource.MustParse("1Gi")

	tests := []struct {
		name  string
		in    v1alpha1.KeyValueStoreSpec
		check func(t *testing.T, spec v1alpha1.KeyValueStoreSpec)
	}{
		{
			name: "empty spec gets every scalar default",
			in:   v1alpha1.KeyValueStoreSpec{Image: "redis:7.2"},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				require.NotNil(t, spec.Replicas)
				assert.Equal(t, int32(3), *spec.Replicas)
				assert.Equal(t, int32(6379), spec.Port)
				assert.Zero(t, spec.Storage.VolumeSize.Cmp(oneGi), "size %s", spec.Storage.VolumeSize.String())
				assert.Equal(t, "1Gi", spec.Storage.VolumeSize.String())
				assert.Nil(t, spec.Storage.StorageClassName, "storage class stays unset (cluster default)")
				require.NotNil(t, spec.PersistentVolumeClaimRetentionPolicy)
				assert.Equal(t, v1alpha1.RetainPersistentVolumeClaimRetentionPolicyType, spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
				assert.Nil(t, spec.Proxy, "no proxy is created by defaulting")
				assert.Nil(t, spec.Backup, "no backup is created by defaulting")
				assert.False(t, spec.Paused)
				assert.Equal(t, "redis:7.2", spec.Image)
			},
		},
		{
			name: "empty retention policy gets Retain",
			in: v1alpha1.KeyValueStoreSpec{
				PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{},
			},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				require.NotNil(t, spec.PersistentVolumeClaimRetentionPolicy)
				assert.Equal(t, v1alpha1.RetainPersistentVolumeClaimRetentionPolicyType, spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
			},
		},
		{
			name: "proxy replicas default to 0 when proxy is set",
			in:   v1alpha1.KeyValueStoreSpec{Proxy: &v1alpha1.ProxySpec{Image: "envoy:1"}},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				require.NotNil(t, spec.Proxy)
				require.NotNil(t, spec.Proxy.Replicas)
				assert.Equal(t, int32(0), *spec.Proxy.Replicas)
				assert.Equal(t, "envoy:1", spec.Proxy.Image)
			},
		},
		{
			name: "backup activeDeadlineSeconds defaults to 600",
			in:   v1alpha1.KeyValueStoreSpec{Backup: &v1alpha1.BackupSpec{Image: "backup:1"}},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				require.NotNil(t, spec.Backup)
				require.NotNil(t, spec.Backup.ActiveDeadlineSeconds)
				assert.Equal(t, int64(600), *spec.Backup.ActiveDeadlineSeconds)
				assert.Nil(t, spec.Backup.Command)
			},
		},
		{
			name: "explicit values are kept",
			in: v1alpha1.KeyValueStoreSpec{
				Replicas: ptr.To[int32](5),
				Image:    "redis:7.4",
				Port:     7000,
				Storage:  v1alpha1.StorageSpec{VolumeSize: resource.MustParse("20Gi"), StorageClassName: ptr.To("fast")},
				Proxy:    &v1alpha1.ProxySpec{Replicas: ptr.To[int32](4), Image: "envoy:1"},
				Backup: &v1alpha1.BackupSpec{
					Image:                 "backup:1",
					Command:               []string{"/backup"},
					ActiveDeadlineSeconds: ptr.To[int64](30),
				},
				PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{
					WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType,
				},
				Paused: true,
			},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				assert.Equal(t, int32(5), *spec.Replicas)
				assert.Equal(t, int32(7000), spec.Port)
				assert.Equal(t, "20Gi", spec.Storage.VolumeSize.String())
				assert.Equal(t, "fast", *spec.Storage.StorageClassName)
				assert.Equal(t, int32(4), *spec.Proxy.Replicas)
				assert.Equal(t, int64(30), *spec.Backup.ActiveDeadlineSeconds)
				assert.Equal(t, []string{"/backup"}, spec.Backup.Command)
				assert.Equal(t, v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType, spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
				assert.True(t, spec.Paused)
			},
		},
		{
			// Pointer defaults only fill nil: an explicit zero reaches
			// validation, which rejects it.
			name: "explicit zero pointers are kept",
			in: v1alpha1.KeyValueStoreSpec{
				Replicas: ptr.To[int32](0),
				Proxy:    &v1alpha1.ProxySpec{Replicas: ptr.To[int32](0)},
				Backup:   &v1alpha1.BackupSpec{ActiveDeadlineSeconds: ptr.To[int64](0)},
			},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				assert.Equal(t, int32(0), *spec.Replicas)
				assert.Equal(t, int32(0), *spec.Proxy.Replicas)
				assert.Equal(t, int64(0), *spec.Backup.ActiveDeadlineSeconds)
			},
		},
		{
			// Size is a value, not a pointer: an explicit "0" is
			// indistinguishable from unset and becomes 1Gi.
			name: "explicit zero size is defaulted",
			in:   v1alpha1.KeyValueStoreSpec{Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("0")}},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				assert.Equal(t, "1Gi", spec.Storage.VolumeSize.String())
			},
		},
		{
			name: "a negative size is not defaulted",
			in:   v1alpha1.KeyValueStoreSpec{Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("-1Gi")}},
			check: func(t *testing.T, spec v1alpha1.KeyValueStoreSpec) {
				assert.Equal(t, "-1Gi", spec.Storage.VolumeSize.String())
			},
		},
	}

	scheme := newScheme(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := &v1alpha1.KeyValueStore{
				ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
				Spec:       *tc.in.DeepCopy(),
			}
			scheme.Default(obj)
			tc.check(t, obj.Spec)
			assert.Equal(t, "demo", obj.Name, "metadata untouched")
			assert.Equal(t, v1alpha1.KeyValueStoreStatus{}, obj.Status, "status untouched")
		})
	}
}

func TestDefaultsAreIdempotent(t *testing.T) {
	scheme := newScheme(t)
	obj := &v1alpha1.KeyValueStore{Spec: v1alpha1.KeyValueStoreSpec{
		Image:  "redis:7.2",
		Proxy:  &v1alpha1.ProxySpec{},
		Backup: &v1alpha1.BackupSpec{Image: "backup:1"},
	}}
	scheme.Default(obj)
	once := obj.DeepCopy()
	scheme.Default(obj)
	assert.Equal(t, once, obj)
}

func TestDefaultsApplyToListItems(t *testing.T) {
	scheme := newScheme(t)
	list := &v1alpha1.KeyValueStoreList{Items: []v1alpha1.KeyValueStore{
		{Spec: v1alpha1.KeyValueStoreSpec{Image: "redis:7.2"}},
		{Spec: v1alpha1.KeyValueStoreSpec{Image: "redis:7.2", Replicas: ptr.To[int32](1)}},
	}}
	scheme.Default(list)
	require.Len(t, list.Items, 2)
	require.NotNil(t, list.Items[0].Spec.Replicas)
	assert.Equal(t, int32(3), *list.Items[0].Spec.Replicas)
	assert.Equal(t, int32(1), *list.Items[1].Spec.Replicas)
	assert.Equal(t, int32(6379), list.Items[1].Spec.Port)
}

func TestBackupReasonDefault(t *testing.T) {
	scheme := newScheme(t)
	empty := &v1alpha1.KeyValueStoreBackup{Spec: v1alpha1.KeyValueStoreBackupSpec{StoreName: "demo"}}
	scheme.Default(empty)
	assert.Equal(t, v1alpha1.BackupReasonManual, empty.Spec.Reason)

	final := &v1alpha1.KeyValueStoreBackup{Spec: v1alpha1.KeyValueStoreBackupSpec{StoreName: "demo", Reason: v1alpha1.BackupReasonFinal}}
	scheme.Default(final)
	assert.Equal(t, v1alpha1.BackupReasonFinal, final.Spec.Reason, "a reason that is set is kept")

	list := &v1alpha1.KeyValueStoreBackupList{Items: []v1alpha1.KeyValueStoreBackup{{}}}
	scheme.Default(list)
	assert.Equal(t, v1alpha1.BackupReasonManual, list.Items[0].Spec.Reason)
}
