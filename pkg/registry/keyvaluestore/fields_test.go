package keyvaluestore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

func fieldsKVS() *kvstore.KeyValueStore {
	return &kvstore.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "team-a", Labels: map[string]string{"app": "kv"}},
		Spec:       kvstore.KeyValueStoreSpec{Image: "redis:7.2"},
		Status:     kvstore.KeyValueStoreStatus{Phase: kvstore.PhaseReady},
	}
}

func TestSelectableFields(t *testing.T) {
	got := SelectableFields(fieldsKVS())
	assert.Equal(t, fields.Set{
		"metadata.name":      "demo",
		"metadata.namespace": "team-a",
		"spec.image":         "redis:7.2",
		"status.phase":       "Ready",
	}, got)

	// An unset phase is selectable as the empty string.
	empty := fieldsKVS()
	empty.Status.Phase = ""
	assert.Equal(t, "", SelectableFields(empty)["status.phase"])
	assert.Contains(t, SelectableFields(empty), "status.phase")
}

func TestGetAttrs(t *testing.T) {
	l, f, err := GetAttrs(fieldsKVS())
	require.NoError(t, err)
	assert.Equal(t, labels.Set{"app": "kv"}, l)
	assert.Equal(t, "Ready", f["status.phase"])

	_, _, err = GetAttrs(&metav1.Status{})
	require.Error(t, err)
}

func TestMatchKeyValueStore(t *testing.T) {
	obj := fieldsKVS()
	tests := []struct {
		selector string
		want     bool
	}{
		{"status.phase=Ready", true},
		{"status.phase!=Ready", false},
		{"status.phase=Pending", false},
		{"spec.image=redis:7.2", true},
		{"spec.image=redis:7.4", false},
		{"metadata.name=demo,metadata.namespace=team-a", true},
		{"metadata.namespace=team-b", false},
	}
	for _, tc := range tests {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := fields.ParseSelector(tc.selector)
			require.NoError(t, err)
			p := MatchKeyValueStore(labels.Everything(), sel)
			ok, err := p.Matches(obj)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ok)
		})
	}

	p := MatchKeyValueStore(labels.Everything(), fields.Everything())
	assert.ElementsMatch(t, []string{"status.phase", "spec.image"}, p.IndexFields)
}

func TestIndexersAndTrigger(t *testing.T) {
	idx := *indexers()
	require.Len(t, idx, 2)

	phaseIdx, ok := idx[storage.FieldIndex("status.phase")]
	require.True(t, ok)
	vals, err := phaseIdx(fieldsKVS())
	require.NoError(t, err)
	assert.Equal(t, []string{"Ready"}, vals)
	_, err = phaseIdx(&metav1.Status{})
	require.Error(t, err)

	imageIdx, ok := idx[storage.FieldIndex("spec.image")]
	require.True(t, ok)
	vals, err = imageIdx(fieldsKVS())
	require.NoError(t, err)
	assert.Equal(t, []string{"redis:7.2"}, vals)
	_, err = imageIdx(&metav1.Status{})
	require.Error(t, err)

	assert.Equal(t, "Ready", phaseTrigger(fieldsKVS()))
}

// TestFieldLabelConversion: every selectable field must also pass the
// field label conversion of every served version, or a selector on it is rejected with 400
// before it reaches the registry.
func TestFieldLabelConversion(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, v1beta1.AddToScheme(scheme))
	for _, gv := range []schema.GroupVersion{v1alpha1.SchemeGroupVersion, v1beta1.SchemeGroupVersion} {
		t.Run(gv.Version, func(t *testing.T) { testFieldLabelConversion(t, scheme, gv.WithKind("KeyValueStore")) })
	}
}

func testFieldLabelConversion(t *testing.T, scheme *runtime.Scheme, gvk schema.GroupVersionKind) {

	for label := range SelectableFields(fieldsKVS()) {
		t.Run(label, func(t *testing.T) {
			gotLabel, gotValue, err := scheme.ConvertFieldLabel(gvk, label, "some-value")
			require.NoError(t, err)
			assert.Equal(t, label, gotLabel)
			assert.Equal(t, "some-value", gotValue)
		})
	}
	for _, label := range []string{"spec.replicas", "spec.port", "status.readyReplicas", "metadata.labels", "metadata.uid", "image", ""} {
		t.Run("reject "+label, func(t *testing.T) {
			_, _, err := scheme.ConvertFieldLabel(gvk, label, "x")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not supported")
		})
	}
}
