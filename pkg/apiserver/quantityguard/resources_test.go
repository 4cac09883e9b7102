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
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// The requests and limits of every container (spec.resources,
// spec.proxy.resources, spec.backup.resources, spec.bootstrap.resources)
// are quantities too, one per map key: the guard checks each, in every
// body format, and names it. Before, only spec.storage was guarded, and a
// store with cpu "1e-99999999" pinned a CPU for about 30 s per value while
// its body was decoded (found by review).
func TestCheckResources(t *testing.T) {
	for _, at := range []struct{ json, field string }{
		{`{"spec":{"resources":{"requests":{"cpu":%q}}}}`, "spec.resources.requests[cpu]"},
		{`{"spec":{"resources":{"limits":{"example.com/any":%q}}}}`, "spec.resources.limits[example.com/any]"},
		{`{"spec":{"proxy":{"resources":{"limits":{"memory":%q}}}}}`, "spec.proxy.resources.limits[memory]"},
		{`{"spec":{"backup":{"resources":{"requests":{"cpu":%q}}}}}`, "spec.backup.resources.requests[cpu]"},
		{`{"spec":{"bootstrap":{"resources":{"limits":{"cpu":%q}}}}}`, "spec.bootstrap.resources.limits[cpu]"},
	} {
		body := func(q string) []byte { return []byte(strings.Replace(at.json, "%q", `"`+q+`"`, 1)) }
		for _, contentType := range []string{jsonType, mergeType, smpType} {
			err := Check(contentType, body(hugeExponent))
			require.NotNil(t, err, "%s %s", contentType, at.field)
			assert.Equal(t, field.ErrorTypeInvalid, err.Type)
			assert.Equal(t, at.field, err.Field)
			assert.Nil(t, Check(contentType, body("500m")), at.field)
		}
	}
	for _, tc := range []struct {
		name, contentType, body string
		want                    field.ErrorType
		field                   string
	}{
		{"too long", jsonType, `{"spec":{"resources":{"requests":{"cpu":"` + strings.Repeat("1", 65) + `"}}}}`, field.ErrorTypeTooLong, "spec.resources.requests[cpu]"},
		{"a key in another case", jsonType, `{"Spec":{"Resources":{"REQUESTS":{"cpu":"` + hugeExponent + `"}}}}`, field.ErrorTypeInvalid, "spec.resources.requests[cpu]"},
		{"YAML apply", applyYAML, "spec:\n  resources:\n    limits:\n      memory: !!str " + hugeExponent + "\n", field.ErrorTypeInvalid, "spec.resources.limits[memory]"},
		{"JSON patch, replace one value", jsonPatch, `[{"op":"replace","path":"/spec/resources/requests/cpu","value":"` + hugeExponent + `"}]`, field.ErrorTypeInvalid, "spec.resources.requests[cpu]"},
		{"JSON patch, add the map", jsonPatch, `[{"op":"add","path":"/spec/proxy/resources/limits","value":{"cpu":"` + hugeExponent + `"}}]`, field.ErrorTypeInvalid, "spec.proxy.resources.limits[cpu]"},
		{"JSON patch, add the proxy", jsonPatch, `[{"op":"add","path":"/spec/proxy","value":{"resources":{"requests":{"memory":"` + hugeExponent + `"}}}}]`, field.ErrorTypeInvalid, "spec.proxy.resources.requests[memory]"},
		{"JSON patch, move to a value", jsonPatch, `[{"op":"move","from":"/metadata/annotations/a","path":"/spec/resources/limits/cpu"}]`, field.ErrorTypeForbidden, "spec.resources.limits[cpu]"},
		{"JSON patch, copy to the resources", jsonPatch, `[{"op":"copy","from":"/metadata/labels","path":"/spec/backup/resources"}]`, field.ErrorTypeForbidden, "spec.backup.resources.requests"},
		{"JSON patch, fine", jsonPatch, `[{"op":"replace","path":"/spec/resources/requests/cpu","value":"2"}]`, "", ""},
		{"JSON patch, below a value", jsonPatch, `[{"op":"add","path":"/spec/resources/requests/cpu/x","value":"` + hugeExponent + `"}]`, "", ""},
		{"claims are no quantities", jsonType, `{"spec":{"resources":{"claims":{"x":"` + hugeExponent + `"}}}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.contentType, []byte(tc.body))
			if tc.want == "" {
				assert.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.Equal(t, tc.want, err.Type)
			assert.Equal(t, tc.field, err.Field)
		})
	}
	bad, err := direct.Marshal(map[string]any{"spec": map[string]any{"bootstrap": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": hugeExponent}}}}})
	require.NoError(t, err)
	assert.NotNil(t, Check(cborType, bad))
}

// The protobuf walk reaches every requests and limits value of a store
// encoded by the real serializer, with its map key, and refuses a huge one.
func TestProtobufResources(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	q := func(name, value string) map[string]resource.Quantity {
		return map[string]resource.Quantity{name: resource.MustParse(value)}
	}
	kvs := &v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: v1beta1.KeyValueStoreSpec{
			Image:     "redis:7.2",
			Storage:   v1beta1.StorageSpec{Capacity: resource.MustParse("1536Mi")},
			Resources: &v1beta1.Resources{Requests: q("cpu", "1"), Limits: q("memory", "2Gi")},
			Proxy:     &v1beta1.ProxySpec{Image: "envoy:1", Resources: &v1beta1.Resources{Requests: q("cpu", "3")}},
			Backup:    &v1beta1.BackupSpec{Image: "backup:1", Resources: &v1beta1.Resources{Limits: q("cpu", "4")}},
			Bootstrap: &v1beta1.BootstrapSpec{Image: "seed:1", Resources: &v1beta1.Resources{Requests: q("cpu", "123456789m")}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme, scheme).Encode(kvs, &buf))
	found := map[string]string{}
	eachProtobufQuantity(buf.Bytes(), "v1beta1", "KeyValueStore", protobufPaths("v1beta1"), func(q string, at *field.Path) *field.Error { found[at.String()] = q; return nil })
	assert.Equal(t, map[string]string{
		"spec.storage.capacity":                  "1536Mi",
		"spec.resources.requests[cpu]":           "1",
		"spec.resources.limits[memory]":          "2Gi",
		"spec.proxy.resources.requests[cpu]":     "3",
		"spec.backup.resources.limits[cpu]":      "4",
		"spec.bootstrap.resources.requests[cpu]": "123456789m",
	}, found)
	assert.Nil(t, Check(protobufType, buf.Bytes()))

	huge := bytes.Replace(buf.Bytes(), []byte("123456789m"), []byte("1e-9999999"), 1)
	err := CheckIn(protobufType, huge, "v1beta1")
	require.NotNil(t, err)
	assert.Equal(t, "spec.bootstrap.resources.requests[cpu]", err.Field)
}

// A body naming another kind is refused: the decoders build the kind a
// body names, and a KeyValueStoreList's items hold stores whose quantities
// the walks (which read a store) did not reach; the handler refused the
// kind only after decoding it (found by review: 1.2 s for one value of
// 1e-9999999, minutes for 1e-99999999).
func TestCheckRefusesOtherKinds(t *testing.T) {
	list := `{"apiVersion":"kvstore.io/v1beta1","kind":"KeyValueStoreList","items":[{"spec":{"storage":{"capacity":"1e-9999999"}}}]}`
	for _, tc := range []struct {
		name, contentType, body string
		want                    bool // refused
	}{
		{"JSON", jsonType, list, true},
		{"JSON, the key in another case", jsonType, `{"KIND":"KeyValueStoreList","items":[]}`, true},
		{"JSON, the kind twice", jsonType, `{"kind":"KeyValueStore","kind":"KeyValueStoreList"}`, true},
		{"JSON, a store", jsonType, `{"kind":"KeyValueStore","spec":{}}`, false},
		{"JSON, no kind", jsonType, `{"spec":{}}`, false},
		{"YAML", yamlType, "kind: KeyValueStoreList\nitems: []\n", true},
		{"merge patch", mergeType, `{"kind":"KeyValueStoreList","items":[]}`, true},
		{"JSON patch, replace the kind", jsonPatch, `[{"op":"replace","path":"/kind","value":"KeyValueStoreList"}]`, true},
		{"JSON patch, add the kind in another case", jsonPatch, `[{"op":"add","path":"/Kind","value":"KeyValueStoreList"}]`, true},
		{"JSON patch, move to the kind", jsonPatch, `[{"op":"move","from":"/metadata/annotations/k","path":"/kind"}]`, true},
		{"JSON patch, replace the object", jsonPatch, `[{"op":"replace","path":"","value":` + list + `}]`, true},
		{"JSON patch, the kind kept", jsonPatch, `[{"op":"replace","path":"/kind","value":"KeyValueStore"}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.contentType, []byte(tc.body))
			assert.Equal(t, tc.want, err != nil, "%v", err)
		})
	}
	cbor, err := direct.Marshal(map[string]any{"kind": "KeyValueStoreList", "items": []any{}})
	require.NoError(t, err)
	assert.NotNil(t, Check(cborType, cbor))
	typeMeta := append(protobufField(1, []byte("kvstore.io/v1beta1")), protobufField(2, []byte("KeyValueStoreList"))...)
	assert.NotNil(t, Check(protobufType, append(append([]byte("k8s\x00"), protobufField(1, typeMeta)...), protobufField(2, nil)...)))
}

// Protobuf layouts the generated decoders accept and a lenient walk did
// not read: a map entry's fields with another wire type, an entry's value
// running past the entry, a 10-byte varint with bits beyond 64. Each
// reached a quantity the walk did not (found by review); each is now
// refused as a body that does not parse strictly.
func TestCheckProtobufStrictly(t *testing.T) {
	quantity := protobufField(1, []byte(hugeExponent)) // a resource.Quantity
	varint := func(num, v uint64) []byte { return binary.AppendUvarint(binary.AppendUvarint(nil, num<<3), v) }
	withEntry := func(resources []byte) []byte {
		spec := append(protobufField(2, []byte("redis:7.2")), protobufField(11, resources)...)
		return protobufBody(nil, spec)
	}
	entry := func(e []byte) []byte { return withEntry(protobufField(1, e)) }
	overlong := []byte{0xA0, 0x86, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x01} // field 100, varint, 10 bytes
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"a well-formed entry", entry(append(protobufField(1, []byte("cpu")), protobufField(2, quantity)...))},
		{"the value as a varint", entry(append(append(protobufField(1, []byte("cpu")), varint(2, uint64(len(quantity)))...), quantity...))},
		{"the key as a varint", entry(append(append(varint(1, 1), 0xff), protobufField(2, quantity)...))},
		{"the value past the entry", withEntry(append(protobufField(1, []byte{2<<3 | 2, byte(len(quantity))}), quantity...))},
		{"an overlong varint before the store", protobufBody(overlong, protobufSpec(hugeExponent))},
		{"an overlong varint before the envelope's fields", append(append([]byte("k8s\x00"), overlong...), protobufBody(nil, protobufSpec(hugeExponent))[4:]...)},
		// The generated decoders read a field number as an int32: 2+2^32
		// was field 2, the spec, to them, and no field of the walk's.
		{"the spec as field 2+2^32", func() []byte {
			kvs := binary.AppendUvarint(nil, (2+1<<32)<<3|2)
			spec := protobufSpec(hugeExponent)
			kvs = append(binary.AppendUvarint(kvs, uint64(len(spec))), spec...)
			typeMeta := protobufField(1, []byte("kvstore.io/v1alpha1"))
			return append(append([]byte("k8s\x00"), protobufField(1, typeMeta)...), protobufField(2, kvs)...)
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.NotNil(t, Check(protobufType, tc.body))
		})
	}
}

// CBOR: under tag 21, 22 or 23 the generic decoding the guard reads
// re-encodes byte strings (base64), while a Quantity parses their bytes:
// such a body is refused, as is one that does not decode, with 400 (found
// by review).
func TestCheckCBORStrictly(t *testing.T) {
	// {"spec": 21({"storage": {"size": h'<hugeExponent>'}})}
	size := append([]byte{0x40 | byte(len(hugeExponent))}, hugeExponent...)
	inner := append([]byte{0xa1, 0x67}, "storage"...)
	inner = append(append(inner, 0xa1, 0x64), "size"...)
	inner = append(inner, size...)
	body := append(append([]byte{0xa1, 0x64}, "spec"...), append([]byte{0xd5}, inner...)...)
	var doc any
	require.NoError(t, direct.Unmarshal(body, &doc), "well-formed")
	for _, b := range [][]byte{body, {0xa2, 0x61, 'a', 0x01, 0x61, 'a', 0x02}} { // the second: a repeated key
		err := Check(cborType, b)
		require.NotNil(t, err)
		assert.Equal(t, field.ErrorTypeTypeInvalid, err.Type, "answered 400")
	}
	// What the real serializer writes (with its self-describing tag) passes.
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	var buf bytes.Buffer
	require.NoError(t, cbor.NewSerializer(scheme, scheme).Encode(&v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: v1beta1.KeyValueStoreSpec{Image: "redis:7.2", Storage: v1beta1.StorageSpec{Capacity: resource.MustParse("1Gi")},
			Resources: &v1beta1.Resources{Requests: map[string]resource.Quantity{"cpu": resource.MustParse("1")}}},
	}, &buf))
	assert.Nil(t, Check(cborType, buf.Bytes()))
}

// A body of a backup or a Scale that cannot be read names its kind, not a
// store's field it does not have (found by review).
func TestUnreadableKindOnlyBodiesNameTheKind(t *testing.T) {
	dup := []byte{0xa2, 0x64, 'k', 'i', 'n', 'd', 0x61, 'a', 0x64, 'k', 'i', 'n', 'd', 0x61, 'b'} // {"kind":"a","kind":"b"}
	err := CheckKind(cborType, dup, "KeyValueStoreBackup")
	require.NotNil(t, err)
	assert.Equal(t, "kind", err.Field)
	err = CheckKind(protobufType, append([]byte("k8s\x00"), 0xff), "Scale")
	require.NotNil(t, err)
	assert.Equal(t, "kind", err.Field)
}
