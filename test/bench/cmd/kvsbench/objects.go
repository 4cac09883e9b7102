package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

const (
	// benchGroup is the CRD's group: kvstore.io itself is kvstore-apiserver's.
	benchGroup = "bench.kvstore.io"
	// labelSet names the batch of objects a workload created, for cleanup.
	labelSet = "bench.kvstore.io/set"
	// annRev changes on every update; annPad brings an object to objectSize.
	annRev = "bench.kvstore.io/rev"
	annPad = "bench.kvstore.io/pad"
	// objectSize is the target size of a create request's JSON body.
	objectSize = 1024
)

var (
	kvsGVR = v1alpha1.SchemeGroupVersion.WithResource("keyvaluestores")
	crGVR  = schema.GroupVersionResource{Group: benchGroup, Version: "v1alpha1", Resource: "keyvaluestores"}
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// padLen is how many padding characters bring a store to objectSize bytes of
// JSON; computed once from a store with an empty pad.
var padLen = func() int {
	o := baseKVS("ns", "name-000000", "set")
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	// 7-digit names and set labels of a similar length keep it within a few bytes.
	return max(0, objectSize-len(b))
}()

// baseKVS is a paused store: the controller then creates no workloads for it
// (it still writes status once). Replicas, port, storage size and retention
// policy are given explicitly so that server defaulting adds nothing and the
// CRD copy carries the same fields.
func baseKVS(namespace, name, set string) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "KeyValueStore"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":    "kvsbench",
				"app.kubernetes.io/part-of": "kvstore-bench",
				"tier":                      "cache",
				labelSet:                    set,
			},
			Annotations: map[string]string{annRev: "00000000", annPad: ""},
		},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To[int32](3),
			Image:    "registry.example.com/platform/kvstore/redis:7.2.4",
			Port:     6379,
			Storage: v1alpha1.StorageSpec{
				VolumeSize:       resource.MustParse("1Gi"),
				StorageClassName: ptr.To("standard"),
			},
			Proxy: &v1alpha1.ProxySpec{Replicas: ptr.To[int32](0), Image: "registry.example.com/platform/kvstore/envoy:v1.31.0"},
			PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1alpha1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Paused: true,
		},
	}
}

// newKVS is a bench store of about objectSize bytes of JSON.
func newKVS(namespace, name, set string) *v1alpha1.KeyValueStore {
	o := baseKVS(namespace, name, set)
	o.Annotations[annPad] = strings.Repeat("x", padLen)
	return o
}

// newCR is the same store as a custom resource of the CRD. It carries the
// teardown finalizer in the request, as kvstore-apiserver adds it at create:
// the objects are then the same size and DELETE only marks them in both APIs.
func newCR(namespace, name, set string) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newKVS(namespace, name, set))
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(crGVR.GroupVersion().String())
	u.SetKind("KeyValueStore")
	u.SetFinalizers([]string{v1alpha1.TeardownFinalizer})
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u
}

// loadCRD reads the CRD manifest as an unstructured object.
func loadCRD(path string) (*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var m map[string]interface{}
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&m); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() != "CustomResourceDefinition" || u.GetName() != crGVR.Resource+"."+benchGroup {
		return nil, fmt.Errorf("%s: want CustomResourceDefinition %s.%s, got %s %s", path, crGVR.Resource, benchGroup, u.GetKind(), u.GetName())
	}
	return u, nil
}

// checkCRDMatchesTypes fails when the CRD's spec or status properties differ
// from the JSON fields of the v1alpha1 Go types, at every depth.
func checkCRDMatchesTypes(crd *unstructured.Unstructured) error {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 1 {
		return fmt.Errorf("CRD: want exactly one version, got %d", len(versions))
	}
	root, _, _ := unstructured.NestedMap(versions[0].(map[string]interface{}), "schema", "openAPIV3Schema", "properties")
	var problems []string
	for _, part := range []struct {
		name string
		t    reflect.Type
	}{
		{"spec", reflect.TypeOf(v1alpha1.KeyValueStoreSpec{})},
		{"status", reflect.TypeOf(v1alpha1.KeyValueStoreStatus{})},
	} {
		sch, _ := root[part.name].(map[string]interface{})
		compareSchema(part.name, sch, part.t, &problems)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("artifacts/bench CRD does not match pkg/apis/kvstore/v1alpha1:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

var (
	quantityType = reflect.TypeOf(resource.Quantity{})
	timeType     = reflect.TypeOf(metav1.Time{})
)

func compareSchema(path string, sch map[string]interface{}, t reflect.Type, problems *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			items, _ := sch["items"].(map[string]interface{})
			if sch["type"] != "array" || items == nil {
				*problems = append(*problems, path+": not an array with items")
				return
			}
			sch, path = items, path+"[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == quantityType || t == timeType {
		return
	}
	props, _ := sch["properties"].(map[string]interface{})
	want := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		want[name] = f.Type
	}
	for name, ft := range want {
		sub, ok := props[name].(map[string]interface{})
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s.%s: in the Go type, missing from the CRD", path, name))
			continue
		}
		compareSchema(path+"."+name, sub, ft, problems)
	}
	for name := range props {
		if _, ok := want[name]; !ok {
			*problems = append(*problems, fmt.Sprintf("%s.%s: in the CRD, not in the Go type", path, name))
		}
	}
}

// jsonSize is the length of v's JSON encoding.
func jsonSize(v interface{}) int {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return -1
	}
	return b.Len() - 1
}
