package v1alpha1_test

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// TestProtobufRoundTrip fuzzes the served types and round-trips them through
// the protobuf serializer the server uses: every field must survive, and the
// codec factory must offer protobuf for them.
func TestProtobufRoundTrip(t *testing.T) {
	scheme := newScheme(t)
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok, "the codec factory offers no protobuf serializer")
	require.NotNil(t, info.StreamSerializer, "no protobuf stream serializer for watch")
	// The bare serializer: a codec from the factory would also apply defaults
	// on decode.
	codec := info.Serializer

	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(rand.Int63()), codecs).NilChance(0.2)
	for i := 0; i < 200; i++ {
		for _, obj := range []runtime.Object{&v1alpha1.KeyValueStore{}, &v1alpha1.KeyValueStoreList{}} {
			f.Fill(obj)
			gvks, _, err := scheme.ObjectKinds(obj)
			require.NoError(t, err)
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
			data, err := runtime.Encode(codec, obj)
			require.NoError(t, err, "%T", obj)
			require.True(t, bytes.HasPrefix(data, []byte("k8s\x00")), "not a protobuf envelope")

			out, err := runtime.Decode(codec, data)
			require.NoError(t, err, "%T", obj)
			require.True(t, apiequality.Semantic.DeepEqual(obj, out), "iteration %d: %T changed in protobuf: %s", i, obj, cmp.Diff(obj, out))
		}
	}
}

// TestProtobufFieldNumbers pins the wire numbers of a few fields: changing a
// protobuf tag breaks every client and every object stored as protobuf.
func TestProtobufFieldNumbers(t *testing.T) {
	spec := v1alpha1.KeyValueStoreSpec{Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("2Gi")}}
	data, err := spec.Marshal()
	require.NoError(t, err)
	// Non-pointer fields are always written: 2 (image, ""), 3 (port, 0),
	// 4 (storage: its field 1, size, a Quantity whose field 1 is "2Gi") and
	// 8 (paused, false).
	assert.Equal(t, []byte{
		0x12, 0x00,
		0x18, 0x00,
		0x22, 0x07, 0x0a, 0x05, 0x0a, 0x03, '2', 'G', 'i',
		0x40, 0x00,
	}, data)

	var back v1alpha1.KeyValueStoreSpec
	require.NoError(t, back.Unmarshal(data))
	assert.Equal(t, "2Gi", back.Storage.VolumeSize.String())

	status := v1alpha1.KeyValueStoreStatus{ReadyReplicas: 3, Conditions: []metav1.Condition{{Type: "Available"}}}
	data, err = status.Marshal()
	require.NoError(t, err)
	var backStatus v1alpha1.KeyValueStoreStatus
	require.NoError(t, backStatus.Unmarshal(data))
	assert.Equal(t, int32(3), backStatus.ReadyReplicas)
	require.Len(t, backStatus.Conditions, 1)
	assert.Equal(t, "Available", backStatus.Conditions[0].Type)

	proxy := v1alpha1.ProxySpec{Replicas: ptr.To[int32](0)}
	data, err = proxy.Marshal()
	require.NoError(t, err)
	var backProxy v1alpha1.ProxySpec
	require.NoError(t, backProxy.Unmarshal(data))
	require.NotNil(t, backProxy.Replicas, "an explicit zero must survive")
	assert.Equal(t, int32(0), *backProxy.Replicas)
}
