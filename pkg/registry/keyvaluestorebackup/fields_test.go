package keyvaluestorebackup

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

func fieldsBackup() *kvstore.KeyValueStoreBackup {
	b := newBackup()
	b.Namespace = "team-a"
	b.Labels = map[string]string{"app": "kv"}
	return b
}

func TestSelectableFields(t *testing.T) {
	assert.Equal(t, fields.Set{
		"metadata.name":      "demo-1",
		"metadata.namespace": "team-a",
		"spec.storeName":     "demo",
	}, SelectableFields(fieldsBackup()))
}

func TestGetAttrs(t *testing.T) {
	l, f, err := GetAttrs(fieldsBackup())
	require.NoError(t, err)
	assert.Equal(t, labels.Set{"app": "kv"}, l)
	assert.Equal(t, "demo", f["spec.storeName"])

	_, _, err = GetAttrs(&metav1.Status{})
	require.Error(t, err)
}

func TestMatchKeyValueStoreBackup(t *testing.T) {
	obj := fieldsBackup()
	for _, tc := range []struct {
		selector string
		want     bool
	}{
		{"spec.storeName=demo", true},
		{"spec.storeName!=demo", false},
		{"spec.storeName=other", false},
		{"spec.storeName=demo,metadata.namespace=team-a", true},
		{"metadata.name=demo-1", true},
		{"metadata.namespace=team-b", false},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := fields.ParseSelector(tc.selector)
			require.NoError(t, err)
			p := MatchKeyValueStoreBackup(labels.Everything(), sel)
			ok, err := p.Matches(obj)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ok)
		})
	}
	p := MatchKeyValueStoreBackup(labels.Everything(), fields.Everything())
	assert.Equal(t, []string{"spec.storeName"}, p.IndexFields)
}

func TestIndexersAndTrigger(t *testing.T) {
	idx := *indexers()
	require.Len(t, idx, 1)
	storeIdx, ok := idx[storage.FieldIndex("spec.storeName")]
	require.True(t, ok)
	vals, err := storeIdx(fieldsBackup())
	require.NoError(t, err)
	assert.Equal(t, []string{"demo"}, vals)
	_, err = storeIdx(&metav1.Status{})
	require.Error(t, err)

	assert.Equal(t, "demo", storeNameTrigger(fieldsBackup()))
}

// TestFieldLabelConversion: every selectable field must also pass the
// field label conversion of every served version, or a selector on it is a 400 before it
// reaches the registry.
func TestFieldLabelConversion(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, v1beta1.AddToScheme(scheme))
	for _, gv := range []schema.GroupVersion{v1alpha1.SchemeGroupVersion, v1beta1.SchemeGroupVersion} {
		t.Run(gv.Version, func(t *testing.T) { testFieldLabelConversion(t, scheme, gv.WithKind("KeyValueStoreBackup")) })
	}
}

func testFieldLabelConversion(t *testing.T, scheme *runtime.Scheme, gvk schema.GroupVersionKind) {

	for label := range SelectableFields(fieldsBackup()) {
		t.Run(label, func(t *testing.T) {
			gotLabel, gotValue, err := scheme.ConvertFieldLabel(gvk, label, "some-value")
			require.NoError(t, err)
			assert.Equal(t, label, gotLabel)
			assert.Equal(t, "some-value", gotValue)
		})
	}
	for _, label := range []string{"spec.reason", "status.phase", "spec.image", "metadata.labels", ""} {
		t.Run("reject "+label, func(t *testing.T) {
			_, _, err := scheme.ConvertFieldLabel(gvk, label, "x")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not supported for KeyValueStoreBackup")
		})
	}
}
