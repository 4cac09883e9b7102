package quantityguard

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

const (
	jsonType     = "application/json"
	yamlType     = "application/yaml"
	protobufType = "application/vnd.kubernetes.protobuf"
	mergeType    = "application/merge-patch+json"
	smpType      = "application/strategic-merge-patch+json"
	jsonPatch    = "application/json-patch+json"
	applyYAML    = "application/apply-patch+yaml"
	cborType     = "application/cbor"
	applyCBOR    = "application/apply-patch+cbor"
	hugeExponent = "1e-99999999"
)

// withSize is a store whose spec.storage.size is the JSON value size.
func withSize(size string) string {
	return `{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"a"},"spec":{"image":"redis:7.2","storage":{"size":` + size + `}}}`
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		// want is the refusal's type and detail, "" for none.
		want field.ErrorType
	}{
		{"a real size", jsonType, withSize(`"1536Mi"`), ""},
		{"a decimal exponent", jsonType, withSize(`"1e12"`), ""},
		{"the largest exponent", jsonType, withSize(`"1e999"`), ""},
		{"the smallest exponent", jsonType, withSize(`"1e-999"`), ""},
		{"an exponent too large", jsonType, withSize(`"1e1000"`), field.ErrorTypeInvalid},
		{"an exponent too small", jsonType, withSize(`"1e-1000"`), field.ErrorTypeInvalid},
		{"a huge negative exponent", jsonType, withSize(`"` + hugeExponent + `"`), field.ErrorTypeInvalid},
		{"a huge positive exponent with a sign", jsonType, withSize(`"-1.5E+2147483647"`), field.ErrorTypeInvalid},
		{"an exponent beyond int64", jsonType, withSize(`"1e-99999999999999999999"`), field.ErrorTypeInvalid},
		{"unquoted", jsonType, withSize(hugeExponent), field.ErrorTypeInvalid},
		{"escaped", jsonType, withSize(`"1\u0065-99999999"`), field.ErrorTypeInvalid},
		{"padded", jsonType, withSize(`"  ` + hugeExponent + ` "`), field.ErrorTypeInvalid},
		{"64 characters", jsonType, withSize(`"0.` + strings.Repeat("0", 61) + `1"`), ""},
		{"65 characters", jsonType, withSize(`"0.` + strings.Repeat("0", 62) + `1"`), field.ErrorTypeTooLong},
		{"no digits", jsonType, withSize(`"e-99999999"`), field.ErrorTypeInvalid},
		{"not a quantity", jsonType, withSize(`"1x-99999999"`), ""},
		{"a size of another type", jsonType, withSize(`{"e":1}`), ""},
		{"keys in other cases", jsonType, `{"Spec":{"STORAGE":{"sIzE":"` + hugeExponent + `"}}}`, field.ErrorTypeInvalid},
		{"the same key twice", jsonType, `{"spec":{"storage":{"size":"` + hugeExponent + `","size":"1Gi"}}}`, field.ErrorTypeInvalid},
		{"the same object twice", jsonType, `{"spec":{"storage":{"size":"` + hugeExponent + `"}},"spec":{"image":"redis:7.2"}}`, field.ErrorTypeInvalid},
		{"in a list", jsonType, `{"spec":[{"storage":{"size":"` + hugeExponent + `"}}]}`, ""},
		{"elsewhere", jsonType, `{"metadata":{"annotations":{"size":"` + hugeExponent + `"}},"spec":{"size":"` + hugeExponent + `"}}`, ""},
		{"no Content-Type is JSON", "", withSize(`"` + hugeExponent + `"`), field.ErrorTypeInvalid},
		{"a charset", "application/json; charset=utf-8", withSize(`"` + hugeExponent + `"`), field.ErrorTypeInvalid},
		{"broken JSON", jsonType, `{"spec":{"storage":{"size":"` + hugeExponent + `"}}`, ""},
		{"an unknown media type", "text/plain", withSize(`"` + hugeExponent + `"`), ""},
		// The PATCH handler takes the media type as the text before the
		// first ";", whatever follows: a parameter that does not parse
		// let a patch past the guard (found by review).
		{"a broken Content-Type", "application/json; =", withSize(`"` + hugeExponent + `"`), field.ErrorTypeInvalid},
		{"a merge patch with a broken parameter", mergeType + "; =", `{"spec":{"storage":{"size":"` + hugeExponent + `"}}}`, field.ErrorTypeInvalid},
		{"a merge patch with a repeated parameter", mergeType + "; a=1; a=2", `{"spec":{"storage":{"size":"` + hugeExponent + `"}}}`, field.ErrorTypeInvalid},
		{"an apply patch with a broken parameter", "application/apply-patch+yaml; x", "spec:\n  storage:\n    size: \"" + hugeExponent + "\"\n", field.ErrorTypeInvalid},

		{"merge patch", mergeType, `{"spec":{"storage":{"size":"` + hugeExponent + `"}}}`, field.ErrorTypeInvalid},
		{"strategic merge patch", smpType, `{"spec":{"storage":{"$patch":"replace","size":"` + hugeExponent + `"}}}`, field.ErrorTypeInvalid},
		{"strategic merge patch, fine", smpType, `{"spec":{"storage":{"size":"2Gi"}}}`, ""},

		{"YAML", yamlType, "spec:\n  storage:\n    size: \"1\\x65-99999999\"\n", field.ErrorTypeInvalid},
		{"YAML, an unquoted float", yamlType, "spec:\n  storage:\n    size: 1e-99999999\n", ""}, // YAML makes it the number 0
		{"YAML, an overflowing float", yamlType, "spec:\n  storage:\n    size: 1.0e+999999\n", field.ErrorTypeInvalid},
		{"YAML, fine", yamlType, "spec:\n  storage:\n    size: 10Gi\n", ""},
		{"YAML, broken", yamlType, "spec: : :\n\t- size: " + hugeExponent, ""},
		{"apply", applyYAML, "spec:\n  storage:\n    size: !!str " + hugeExponent + "\n", field.ErrorTypeInvalid},

		{"JSON patch, replace the size", jsonPatch, `[{"op":"replace","path":"/spec/storage/size","value":"` + hugeExponent + `"}]`, field.ErrorTypeInvalid},
		{"JSON patch, add the storage", jsonPatch, `[{"op":"add","path":"/spec/storage","value":{"size":"` + hugeExponent + `"}}]`, field.ErrorTypeInvalid},
		{"JSON patch, add the spec", jsonPatch, `[{"op":"add","path":"/spec","value":{"storage":{"size":"` + hugeExponent + `"}}}]`, field.ErrorTypeInvalid},
		{"JSON patch, replace everything", jsonPatch, `[{"op":"replace","path":"","value":{"spec":{"storage":{"size":"` + hugeExponent + `"}}}}]`, field.ErrorTypeInvalid},
		{"JSON patch, the first segment is ignored", jsonPatch, `[{"op":"add","path":"x/spec/storage/size","value":"` + hugeExponent + `"}]`, field.ErrorTypeInvalid},
		{"JSON patch, after a fine operation", jsonPatch, `[{"op":"replace","path":"/spec/image","value":"redis:8"},{"op":"add","path":"/spec/storage/size","value":` + hugeExponent + `}]`, field.ErrorTypeInvalid},
		{"JSON patch, copy to the storage", jsonPatch, `[{"op":"copy","from":"/metadata/labels","path":"/spec/storage"}]`, field.ErrorTypeForbidden},
		{"JSON patch, move to the size", jsonPatch, `[{"op":"move","from":"/metadata/annotations/a","path":"/spec/storage/size"}]`, field.ErrorTypeForbidden},
		{"JSON patch, copy elsewhere", jsonPatch, `[{"op":"copy","from":"/spec/storage/size","path":"/metadata/annotations/size"}]`, ""},
		{"JSON patch, test the size", jsonPatch, `[{"op":"test","path":"/spec/storage/size","value":"` + hugeExponent + `"}]`, ""},
		{"JSON patch, below the size", jsonPatch, `[{"op":"add","path":"/spec/storage/size/x","value":"` + hugeExponent + `"}]`, ""},
		{"JSON patch, an escaped key", jsonPatch, `[{"op":"add","path":"/spec/storage/si~1ze","value":"` + hugeExponent + `"}]`, ""},
		{"JSON patch, a key twice in the value", jsonPatch, `[{"op":"add","path":"/spec/storage","value":{"size":"` + hugeExponent + `","size":"1Gi"}}]`, field.ErrorTypeInvalid},
		{"JSON patch, fine", jsonPatch, `[{"op":"replace","path":"/spec/storage/size","value":"5Gi"}]`, ""},
		{"JSON patch, not a list", jsonPatch, `{"op":"replace","path":"/spec/storage/size","value":"` + hugeExponent + `"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.contentType, []byte(tc.body))
			if tc.want == "" {
				assert.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.Equal(t, tc.want, err.Type)
			assert.Equal(t, "spec.storage.size", err.Field)
		})
	}
}

func TestCheckCBOR(t *testing.T) {
	for _, contentType := range []string{cborType, applyCBOR} {
		bad, err := direct.Marshal(map[string]any{"spec": map[string]any{"storage": map[string]any{"size": hugeExponent}}})
		require.NoError(t, err)
		assert.NotNil(t, Check(contentType, bad))
		fine, err := direct.Marshal(map[string]any{"spec": map[string]any{"storage": map[string]any{"size": "1Gi"}}})
		require.NoError(t, err)
		assert.Nil(t, Check(contentType, fine))
		assert.NotNil(t, Check(contentType, []byte{0xff}), "a body the decoder might half decode")
	}
}

// protobufField is a length-delimited protobuf field.
func protobufField(num uint64, value []byte) []byte {
	out := binary.AppendUvarint(nil, num<<3|2)
	out = binary.AppendUvarint(out, uint64(len(value)))
	return append(out, value...)
}

// protobufBody is a protobuf body of a store whose spec fields are specs,
// each a KeyValueStoreSpec message of its own; extra goes before them.
func protobufBody(extra []byte, specs ...[]byte) []byte {
	kvs := append([]byte{}, extra...)
	for _, spec := range specs {
		kvs = append(kvs, protobufField(2, spec)...)
	}
	typeMeta := protobufField(1, []byte("kvstore.io/v1alpha1")) // runtime.TypeMeta.apiVersion
	return append(append([]byte("k8s\x00"), protobufField(1, typeMeta)...), protobufField(2, kvs)...)
}

// protobufSpec is a KeyValueStoreSpec message with spec.storage.size.
func protobufSpec(size string) []byte {
	return append(protobufField(2, []byte("redis:7.2")), protobufField(4, protobufField(1, protobufField(1, []byte(size))))...)
}

// TestProtobufFieldNumbers: the walk reaches spec.storage.size of a store
// encoded by the real serializer, so its field numbers are generated.proto's.
func TestProtobufFieldNumbers(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	kvs := &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"size": "1Ti"}},
		Spec: v1alpha1.KeyValueStoreSpec{
			Image:   "redis:7.2",
			Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("1536Mi")},
			Backup:  &v1alpha1.BackupSpec{Image: "backup:1", Command: []string{"2Gi"}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme, scheme).Encode(kvs, &buf))
	var sizes []string
	eachProtobufQuantity(buf.Bytes(), "", "KeyValueStore", protobufPaths(""), func(s string, _ *field.Path) *field.Error { sizes = append(sizes, s); return nil })
	assert.Equal(t, []string{"1536Mi"}, sizes)
	assert.Nil(t, Check(protobufType, buf.Bytes()))
}

func TestCheckProtobuf(t *testing.T) {
	// A group (wire types 3 and 4, field 15) the generated decoders skip.
	group := []byte{15<<3 | 3, 1<<3 | 0, 7, 15<<3 | 4}
	for _, tc := range []struct {
		name string
		body []byte
		want bool // refused
	}{
		{"a real size", protobufBody(nil, protobufSpec("1Gi")), false},
		{"a huge exponent", protobufBody(nil, protobufSpec(hugeExponent)), true},
		{"too long", protobufBody(nil, protobufSpec(strings.Repeat("1", 65))), true},
		{"in a repeated spec, which the decoder merges", protobufBody(nil, protobufSpec("1Gi"), protobufSpec(hugeExponent)), true},
		{"after a group", protobufBody(group, protobufSpec(hugeExponent)), true},
		{"after varint, fixed32 and fixed64 fields", protobufBody([]byte{3<<3 | 0, 0x80, 0x01, 4<<3 | 5, 1, 2, 3, 4, 5<<3 | 1, 1, 2, 3, 4, 5, 6, 7, 8}, protobufSpec(hugeExponent)), true},
		{"before a malformed field", append(protobufBody(nil, protobufSpec(hugeExponent)), 0xff), true},
		{"after a malformed field", protobufBody([]byte{1<<3 | 2, 0x7f}, protobufSpec(hugeExponent)), true},
		{"without the magic", protobufBody(nil, protobufSpec(hugeExponent))[4:], false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(protobufType, tc.body)
			assert.Equal(t, tc.want, err != nil, "%v", err)
		})
	}
}

func TestExponent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1e3", 3, true},
		{"-1.5E-7", -7, true},
		{"1e+12", 12, true},
		{"1Gi", 0, false},
		{"1E", 0, false}, // exa
		{"1Ei", 0, false},
		{"1e", 0, false},
		{"1ex", 0, false},
		{"1e99999999999999999999", 1<<63 - 1, true},
		{"1e-99999999999999999999", -1 << 63, true},
	} {
		got, ok := exponent(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
