package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/yaml"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver/quantityguard"
	kvsregistry "github.com/kvstore-io/kvstore-apiserver/pkg/registry/keyvaluestore"
)

// The media types a KeyValueStore body is decoded from.
var fuzzedMediaTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf}

// seedStores are the example and test manifests, as YAML, JSON and protobuf.
func seedStores(f *testing.F) [][]byte {
	f.Helper()
	var files []string
	for _, pattern := range []string{"../../artifacts/examples/*.yaml", "../../test/e2e/testdata/*.yaml"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		f.Fatal("no seed manifests found")
	}
	var seeds [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
		if j, err := yaml.YAMLToJSON(data); err == nil {
			seeds = append(seeds, j)
		}
		obj := &v1alpha1.KeyValueStore{}
		if err := yaml.Unmarshal(data, obj); err != nil {
			continue
		}
		info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		var buf bytes.Buffer
		if err := Codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
			f.Fatalf("%s as protobuf: %v", file, err)
		}
		seeds = append(seeds, buf.Bytes())
	}
	return seeds
}

// FuzzDecodeKeyValueStore decodes arbitrary bytes as a KeyValueStore request
// body the way the server does (through the quantity guard, then the
// server's codecs with defaulting and conversion to the internal version)
// and runs what follows for a create and an update: the strategies'
// preparation and validation, warnings, the table, the selectable fields,
// and encoding back. None of it may panic or hang.
func FuzzDecodeKeyValueStore(f *testing.F) {
	for _, seed := range seedStores(f) {
		f.Add(seed)
	}
	internal := schema.GroupVersion{Group: kvstore.GroupName, Version: runtime.APIVersionInternal}
	defaultGVK := v1alpha1.SchemeGroupVersion.WithKind("KeyValueStore")
	strategy := kvsregistry.NewStrategy(Scheme)
	statusStrategy := kvsregistry.NewStatusStrategy(strategy)
	ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), "default")

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mediaType := range fuzzedMediaTypes {
			if quantityguard.Check(mediaType, data) != nil {
				continue // refused before decoding, as the server does
			}
			info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), mediaType)
			if !ok {
				t.Fatalf("no serializer for %s", mediaType)
			}
			for _, serializer := range []runtime.Serializer{info.Serializer, info.StrictSerializer} {
				obj, _, err := Codecs.DecoderToVersion(serializer, internal).Decode(data, &defaultGVK, &kvstore.KeyValueStore{})
				if err != nil {
					continue
				}
				kvs, ok := obj.(*kvstore.KeyValueStore)
				if !ok {
					t.Fatalf("%s decoded to %T", mediaType, obj)
				}
				exerciseStore(t, ctx, strategy, statusStrategy, kvs)
			}
		}
	})
}

// exerciseStore runs what the registry runs on a decoded store.
func exerciseStore(t *testing.T, ctx context.Context, strategy kvsregistry.Strategy, statusStrategy kvsregistry.StatusStrategy, kvs *kvstore.KeyValueStore) {
	kvs.Namespace = "default"
	created := kvs.DeepCopy()
	createErr := rest.BeforeCreate(strategy, ctx, created)
	strategy.WarningsOnCreate(ctx, created)

	// An update of a stored example to the decoded store, and back.
	stored := storedExample()
	updated := kvs.DeepCopy()
	updated.Name, updated.ResourceVersion = stored.Name, stored.ResourceVersion
	_ = rest.BeforeUpdate(strategy, ctx, updated, stored.DeepCopy())
	strategy.WarningsOnUpdate(ctx, updated, stored)
	_ = rest.BeforeUpdate(statusStrategy, ctx, updated.DeepCopy(), stored.DeepCopy())
	back := stored.DeepCopy()
	_ = rest.BeforeUpdate(strategy, ctx, back, updated.DeepCopy())

	if _, err := (kvsregistry.TableConvertor{}).ConvertToTable(ctx, kvs, &metav1.TableOptions{}); err != nil {
		t.Errorf("table of a decoded store: %v", err)
	}
	if _, _, err := kvsregistry.GetAttrs(kvs); err != nil {
		t.Errorf("selectable fields of a decoded store: %v", err)
	}

	if createErr != nil {
		return
	}
	// What the server stores and serves must encode in every media type.
	for _, mediaType := range fuzzedMediaTypes {
		info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), mediaType)
		var buf bytes.Buffer
		encoder := Codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion)
		err := encoder.Encode(created, &buf)
		if err != nil && mediaType == runtime.ContentTypeYAML && metadataYAMLCannotCarry(created) {
			// The metadata's fault, as on every type; the rest of the
			// store must still encode.
			bare := created.DeepCopy()
			bare.ObjectMeta = metav1.ObjectMeta{Name: created.Name, Namespace: created.Namespace}
			err = encoder.Encode(bare, &bytes.Buffer{})
		}
		if err != nil {
			t.Errorf("encode a valid store as %s: %v", mediaType, err)
		}
	}
}

// metadataYAMLCannotCarry reports whether the store's metadata holds a
// character YAML cannot carry (DEL, C1 controls, U+FFFE, U+FFFF). Annotations
// and owner references take any string, as on every Kubernetes type, so such
// a store is served as JSON and protobuf only (kubernetes/kubectl#774);
// validation keeps these characters out of the spec.
func metadataYAMLCannotCarry(kvs *kvstore.KeyValueStore) bool {
	data, err := json.Marshal(kvs.ObjectMeta)
	return err == nil && strings.ContainsFunc(string(data), func(r rune) bool {
		return r == 0x7f || (r >= 0x80 && r <= 0x9f && r != 0x85) || r == 0xfffe || r == 0xffff
	})
}

// storedExample is a valid store as the registry stores it.
func storedExample() *kvstore.KeyValueStore {
	obj := &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{
			Name: "stored", Namespace: "default", UID: "11111111-2222-3333-4444-555555555555",
			ResourceVersion: "7", Generation: 1, Finalizers: []string{kvstore.TeardownFinalizer},
		},
		Spec: v1alpha1.KeyValueStoreSpec{Image: "redis:7.2"},
	}
	Scheme.Default(obj)
	out := &kvstore.KeyValueStore{}
	if err := Scheme.Convert(obj, out, nil); err != nil {
		panic(err)
	}
	return out
}

// TestMetadataYAMLCannotCarry checks the fuzz target's one exception: a DEL
// in an annotation is valid metadata that YAML cannot encode.
func TestMetadataYAMLCannotCarry(t *testing.T) {
	kvs := storedExample()
	if metadataYAMLCannotCarry(kvs) {
		t.Fatal("a plain store is reported as not encodable as YAML")
	}
	kvs.Annotations = map[string]string{"example.com/note": "a\x7fb"}
	if !metadataYAMLCannotCarry(kvs) {
		t.Fatal("a DEL in an annotation is not reported")
	}
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if err := Codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion).Encode(kvs, &bytes.Buffer{}); err == nil {
		t.Fatal("YAML now encodes a DEL: the fuzz target's exception can go")
	}
}
