package install_test

import (
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/install"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// fuzzIterations is how many random objects each round trip below sees, per
// kind and version: thousands in a full run, fewer with -short.
func fuzzIterations(t *testing.T) int {
	if testing.Short() {
		return 100
	}
	return 2000
}

func newFiller(t *testing.T) (*runtime.Scheme, runtimeserializer.CodecFactory, *randfill.Filler) {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	seed := rand.Int63()
	t.Logf("fuzzer seed %d", seed)
	return scheme, codecs, fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, kvstoreFuzzerFuncs), rand.NewSource(seed), codecs)
}

// TestRoundTripEveryVersionManyObjects is internal → v1alpha1 → internal and
// internal → v1beta1 → internal, through JSON and protobuf, for every kind of
// the group, thousands of random objects each.
func TestRoundTripEveryVersionManyObjects(t *testing.T) {
	scheme, codecs, f := newFiller(t)
	saved := *roundtrip.FuzzIters
	*roundtrip.FuzzIters = fuzzIterations(t)
	t.Cleanup(func() { *roundtrip.FuzzIters = saved })
	roundtrip.RoundTripTypes(t, scheme, codecs, f, nil)
}

// TestCrossVersionRoundTrip is what a client of one version does to an object
// a client of the other version wrote: read it in its own version and write
// it back unchanged. v1alpha1 → v1beta1 → v1alpha1 and v1beta1 → v1alpha1 →
// v1beta1 must both give back exactly the object they started from, through
// the serialized forms the server uses (JSON on the wire, protobuf in etcd).
func TestCrossVersionRoundTrip(t *testing.T) {
	scheme, codecs, f := newFiller(t)
	jsonCodec := func(gv runtime.GroupVersioner) runtime.Codec { return codecs.LegacyCodec(gv.(schema.GroupVersion)) }
	protoInfo, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	protoCodec := func(gv runtime.GroupVersioner) runtime.Codec {
		return codecs.CodecForVersions(protoInfo.Serializer, codecs.UniversalDecoder(), gv, nil)
	}

	// through converts an internal object to gv and back, over codec.
	through := func(t *testing.T, codec func(runtime.GroupVersioner) runtime.Codec, gv runtime.GroupVersioner, in runtime.Object) runtime.Object {
		t.Helper()
		data, err := runtime.Encode(codec(gv), in)
		require.NoError(t, err)
		out, err := runtime.Decode(codecs.UniversalDecoder(), data) // to internal
		require.NoError(t, err)
		return out
	}
	toVersion := func(t *testing.T, in runtime.Object, gv runtime.GroupVersioner) runtime.Object {
		t.Helper()
		out, err := scheme.ConvertToVersion(in.DeepCopyObject(), gv)
		require.NoError(t, err)
		return out
	}

	for _, pair := range []struct {
		name          string
		first, second runtime.GroupVersioner
	}{
		{"v1alpha1-v1beta1-v1alpha1", v1alpha1.SchemeGroupVersion, v1beta1.SchemeGroupVersion},
		{"v1beta1-v1alpha1-v1beta1", v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion},
	} {
		t.Run(pair.name, func(t *testing.T) {
			for i := 0; i < fuzzIterations(t); i++ {
				for _, newInternal := range []func() runtime.Object{
					func() runtime.Object { return &kvstore.KeyValueStore{} },
					func() runtime.Object { return &kvstore.KeyValueStoreBackup{} },
				} {
					obj := newInternal()
					f.Fill(obj)
					// What a client of the first version reads.
					start := toVersion(t, obj, pair.first)
					codec := jsonCodec
					if i%2 == 1 {
						codec = protoCodec
					}
					// Written in the first version, read and written back in
					// the second, read again in the first.
					internal := through(t, codec, pair.first, obj)
					internal = through(t, codec, pair.second, internal)
					end := toVersion(t, internal, pair.first)
					if !apiequality.Semantic.DeepEqual(start, end) {
						t.Fatalf("iteration %d: %T changed: %s", i, start, cmp.Diff(start, end))
					}
				}
			}
		})
	}
}
