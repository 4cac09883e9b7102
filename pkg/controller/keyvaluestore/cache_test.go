package keyvaluestore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	tests := []struct {
		name            string
		in              any
		wantAnnotations map[string]string
		keepsManaged    bool
	}{
		{
			name: "store keeps only kvstore.io annotations",
			in: &v1alpha1.KeyValueStore{ObjectMeta: metav1.ObjectMeta{ManagedFields: managed, Annotations: map[string]string{
				v1alpha1.SkipFinalBackupAnnotation:                 "true",
				"bench.kvstore.io/pad":                             "a sub-domain is someone else's",
				"kubectl.kubernetes.io/last-applied-configuration": "{...}",
				"notkvstore.io/x":                                  "a different domain",
				"kvstore.io":                                       "no prefix: not a domain",
			}}},
			wantAnnotations: map[string]string{v1alpha1.SkipFinalBackupAnnotation: "true"},
		},
		{
			name:            "store without own annotations has none",
			in:              &v1alpha1.KeyValueStore{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}},
			wantAnnotations: nil,
		},
		{
			name:            "pods lose managedFields, keep annotations",
			in:              &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: managed, Annotations: map[string]string{"a": "b"}}},
			wantAnnotations: map[string]string{"a": "b"},
		},
		{
			name:            "events lose managedFields (a third of a FailedCreate event)",
			in:              &corev1.Event{ObjectMeta: metav1.ObjectMeta{ManagedFields: managed, Annotations: map[string]string{"a": "b"}}},
			wantAnnotations: map[string]string{"a": "b"},
		},
		{
			name:            "applied kinds keep managedFields: skipping a no-op apply reads them",
			in:              &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{ManagedFields: managed, Annotations: map[string]string{"a": "b"}}},
			wantAnnotations: map[string]string{"a": "b"},
			keepsManaged:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := CacheTransform(tt.in)
			assert.NoError(t, err)
			m := out.(metav1.Object)
			if tt.keepsManaged {
				assert.Equal(t, managed, m.GetManagedFields())
			} else {
				assert.Nil(t, m.GetManagedFields())
			}
			assert.Equal(t, tt.wantAnnotations, m.GetAnnotations())
			again, _ := CacheTransform(out)
			assert.Equal(t, out, again, "must be idempotent")
		})
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/name"}
	out, err := CacheTransform(tomb)
	assert.NoError(t, err)
	assert.Equal(t, tomb, out)
}
