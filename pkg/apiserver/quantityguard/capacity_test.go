package quantityguard

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// v1beta1 holds the same quantity at spec.storage.capacity; the guard
// checks it in every body format, and names it in its refusal.
func TestCheckV1beta1Capacity(t *testing.T) {
	withCapacity := func(capacity string) string {
		return `{"apiVersion":"kvstore.io/v1beta1","kind":"KeyValueStore","metadata":{"name":"a"},"spec":{"image":"redis:7.2","storage":{"capacity":` + capacity + `}}}`
	}
	for _, tc := range []struct {
		name, contentType, body string
		want                    field.ErrorType
	}{
		{"a real capacity", jsonType, withCapacity(`"1536Mi"`), ""},
		{"a huge exponent", jsonType, withCapacity(`"` + hugeExponent + `"`), field.ErrorTypeInvalid},
		{"too long", jsonType, withCapacity(`"1` + strings.Repeat("0", 70) + `"`), field.ErrorTypeTooLong},
		{"merge patch", mergeType, `{"spec":{"storage":{"capacity":"` + hugeExponent + `"}}}`, field.ErrorTypeInvalid},
		{"YAML apply", applyYAML, "apiVersion: kvstore.io/v1beta1\nspec:\n  storage:\n    capacity: !!str " + hugeExponent + "\n", field.ErrorTypeInvalid},
		{"JSON patch, replace", jsonPatch, `[{"op":"replace","path":"/spec/storage/capacity","value":"` + hugeExponent + `"}]`, field.ErrorTypeInvalid},
		{"JSON patch, add the storage", jsonPatch, `[{"op":"add","path":"/spec/storage","value":{"capacity":"` + hugeExponent + `"}}]`, field.ErrorTypeInvalid},
		{"JSON patch, move to the capacity", jsonPatch, `[{"op":"move","from":"/metadata/annotations/a","path":"/spec/storage/capacity"}]`, field.ErrorTypeForbidden},
		{"JSON patch, fine", jsonPatch, `[{"op":"replace","path":"/spec/storage/capacity","value":"5Gi"}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.contentType, []byte(tc.body))
			if tc.want == "" {
				assert.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.Equal(t, tc.want, err.Type)
			assert.Equal(t, "spec.storage.capacity", err.Field)
		})
	}
}

// TestProtobufFieldNumbersV1beta1: v1beta1's spec.storage.capacity has the
// field numbers of v1alpha1's size, so the one protobuf path reaches it in
// a store encoded by the real serializer.
func TestProtobufFieldNumbersV1beta1(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	kvs := &v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"capacity": "1Ti"}},
		Spec: v1beta1.KeyValueStoreSpec{
			Image:   "redis:7.2",
			Storage: v1beta1.StorageSpec{Capacity: resource.MustParse("1536Mi")},
			Backup:  &v1beta1.BackupSpec{Image: "backup:1", Command: []string{"2Gi"}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme, scheme).Encode(kvs, &buf))
	var sizes []string
	eachProtobufQuantity(buf.Bytes(), "", "KeyValueStore", protobufPaths(""), func(s string, _ *field.Path) *field.Error { sizes = append(sizes, s); return nil })
	assert.Equal(t, []string{"1536Mi"}, sizes)
	assert.Nil(t, Check(protobufType, buf.Bytes()))
}
