package keyvaluestore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// The selector the controller writes: labels.SelectorFromSet(...).String().
const dataSelector = "app.kubernetes.io/component=data,app.kubernetes.io/instance=demo"

// scaledKVS is storedKVS with a selector in its status, as the controller
// leaves it.
func scaledKVS() *kvstore.KeyValueStore {
	k := storedKVS()
	k.Status.Replicas = 2
	k.Status.Selector = dataSelector
	return k
}

func TestScaleFromKeyValueStore(t *testing.T) {
	kvs := scaledKVS()
	scale, err := scaleFromKeyValueStore(kvs)
	require.NoError(t, err)

	assert.Equal(t, metav1.ObjectMeta{
		Name:              kvs.Name,
		Namespace:         kvs.Namespace,
		UID:               kvs.UID,
		ResourceVersion:   kvs.ResourceVersion,
		CreationTimestamp: kvs.CreationTimestamp,
	}, scale.ObjectMeta, "only what addresses the store and carries a precondition")
	assert.Equal(t, int32(3), scale.Spec.Replicas, "spec.replicas")
	assert.Equal(t, int32(2), scale.Status.Replicas, "status.replicas")
	require.NotNil(t, scale.Status.Selector)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/component": "data",
		"app.kubernetes.io/instance":  "demo",
	}, scale.Status.Selector.MatchLabels)
	assert.Empty(t, scale.Status.Selector.MatchExpressions)
	assert.Equal(t, scaledKVS(), kvs, "the store must not change")
}

func TestScaleFromKeyValueStoreUnsetFields(t *testing.T) {
	kvs := newKVS()
	kvs.Spec.Replicas = nil
	scale, err := scaleFromKeyValueStore(kvs)
	require.NoError(t, err)
	assert.Equal(t, int32(0), scale.Spec.Replicas)
	assert.Equal(t, int32(0), scale.Status.Replicas)
	assert.Nil(t, scale.Status.Selector, "no selector until the controller reports one")
}

func TestScaleFromKeyValueStoreBadSelector(t *testing.T) {
	kvs := scaledKVS()
	kvs.Status.Selector = "app in demo"

	_, err := scaleFromKeyValueStore(kvs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `status.selector "app in demo"`)
	assert.Contains(t, err.Error(), "default/demo")

	// Read from storage, it is the server's fault, not the client's.
	_, err = scaleOrInternalError(kvs)
	assert.True(t, apierrors.IsInternalError(err), "got %v", err)
}

func TestApplyScale(t *testing.T) {
	kvs := scaledKVS()
	scale, err := scaleFromKeyValueStore(kvs)
	require.NoError(t, err)

	t.Run("only spec.replicas changes", func(t *testing.T) {
		in := scale.DeepCopy()
		in.Spec.Replicas = 5
		// Everything else a client may send in a Scale is ignored.
		in.Status.Replicas = 9
		in.Status.Selector = nil
		in.Labels = map[string]string{"team": "other"}
		in.Annotations = map[string]string{"note": "new"}

		got, err := applyScale(kvs, in)
		require.NoError(t, err)
		want := scaledKVS()
		want.Spec.Replicas = ptr.To[int32](5)
		assert.Equal(t, want, got)
		assert.Equal(t, scaledKVS(), kvs, "the stored object must not change")
	})

	t.Run("resourceVersion is kept as a precondition", func(t *testing.T) {
		in := scale.DeepCopy()
		in.ResourceVersion = "7"
		got, err := applyScale(kvs, in)
		require.NoError(t, err)
		assert.Equal(t, "7", got.ResourceVersion)
	})

	t.Run("no resourceVersion keeps the stored one", func(t *testing.T) {
		in := scale.DeepCopy()
		in.ResourceVersion = ""
		got, err := applyScale(kvs, in)
		require.NoError(t, err)
		assert.Equal(t, kvs.ResourceVersion, got.ResourceVersion)
	})

	t.Run("a UID of another object conflicts", func(t *testing.T) {
		in := scale.DeepCopy()
		in.UID = "other"
		got, err := applyScale(kvs, in)
		assert.True(t, apierrors.IsConflict(err), "got %v", err)
		assert.Nil(t, got)
	})

	t.Run("no UID is no precondition", func(t *testing.T) {
		in := scale.DeepCopy()
		in.UID = ""
		_, err := applyScale(kvs, in)
		require.NoError(t, err)
	})
}

// scaleRequest is what the handler hands the registry: a PUT body or a patch,
// made from the old Scale.
func scaleRequest(f func(old *scalescheme.Scale) runtime.Object) rest.UpdatedObjectInfo {
	return rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		return f(oldObj.(*scalescheme.Scale)), nil
	})
}

func TestScaleUpdatedObject(t *testing.T) {
	ctx := context.Background()

	t.Run("the new Scale's replicas reach the store", func(t *testing.T) {
		var seen *scalescheme.Scale
		info := &scaleUpdatedObjectInfo{name: "demo", reqObjInfo: scaleRequest(func(old *scalescheme.Scale) runtime.Object {
			seen = old.DeepCopy()
			scale := old.DeepCopy()
			scale.Spec.Replicas = 7
			return scale
		})}
		obj, err := info.UpdatedObject(ctx, scaledKVS())
		require.NoError(t, err)
		assert.Equal(t, int32(7), *obj.(*kvstore.KeyValueStore).Spec.Replicas)
		require.NotNil(t, seen)
		assert.Equal(t, int32(3), seen.Spec.Replicas, "the request starts from the stored replicas")
		assert.Equal(t, "10", seen.ResourceVersion)
	})

	t.Run("a missing store is a 404", func(t *testing.T) {
		info := &scaleUpdatedObjectInfo{name: "gone", reqObjInfo: scaleRequest(func(*scalescheme.Scale) runtime.Object {
			t.Fatal("the request must not run on a missing store")
			return nil
		})}
		_, err := info.UpdatedObject(ctx, &kvstore.KeyValueStore{})
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		assert.Contains(t, err.Error(), `keyvaluestores.kvstore.io "gone" not found`)
	})

	t.Run("a request that makes no Scale is a 400", func(t *testing.T) {
		info := &scaleUpdatedObjectInfo{name: "demo", reqObjInfo: scaleRequest(func(*scalescheme.Scale) runtime.Object {
			return scaledKVS()
		})}
		_, err := info.UpdatedObject(ctx, scaledKVS())
		assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
	})

	t.Run("managedFields: /scale takes spec.replicas from its applier", func(t *testing.T) {
		stored := scaledKVS()
		stored.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager:    "alice",
			Operation:  metav1.ManagedFieldsOperationApply,
			APIVersion: "kvstore.io/v1alpha1",
			FieldsType: "FieldsV1",
			FieldsV1:   &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:image":{},"f:replicas":{}}}`)},
		}}
		scaleUpdate := metav1.ManagedFieldsEntry{
			Manager:     "kubectl",
			Operation:   metav1.ManagedFieldsOperationUpdate,
			APIVersion:  "autoscaling/v1",
			FieldsType:  "FieldsV1",
			FieldsV1:    &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)},
			Subresource: "scale",
		}
		var seen []metav1.ManagedFieldsEntry
		info := &scaleUpdatedObjectInfo{name: "demo", reqObjInfo: scaleRequest(func(old *scalescheme.Scale) runtime.Object {
			seen = old.ManagedFields
			// What the field manager leaves after kubectl's update of
			// spec.replicas: alice no longer owns it, so her entry is gone.
			scale := old.DeepCopy()
			scale.Spec.Replicas = 5
			scale.ManagedFields = []metav1.ManagedFieldsEntry{scaleUpdate}
			return scale
		})}

		obj, err := info.UpdatedObject(ctx, stored)
		require.NoError(t, err)

		require.Len(t, seen, 1, "the request sees alice's replicas as a Scale's")
		assert.Equal(t, "alice", seen[0].Manager)
		assert.Equal(t, "autoscaling/v1", seen[0].APIVersion)
		assert.JSONEq(t, `{"f:spec":{"f:replicas":{}}}`, string(seen[0].FieldsV1.Raw))

		byManager := map[string]metav1.ManagedFieldsEntry{}
		for _, e := range obj.(*kvstore.KeyValueStore).ManagedFields {
			byManager[e.Manager] = e
		}
		require.Len(t, byManager, 2)
		assert.JSONEq(t, `{"f:spec":{"f:image":{}}}`, string(byManager["alice"].FieldsV1.Raw), "alice keeps the rest")
		kubectl := byManager["kubectl"]
		assert.Equal(t, "kvstore.io/v1alpha1", kubectl.APIVersion)
		assert.Equal(t, "scale", kubectl.Subresource)
		assert.JSONEq(t, `{"f:spec":{"f:replicas":{}}}`, string(kubectl.FieldsV1.Raw), "kubectl owns spec.replicas of the store")
	})
}

func TestRequestGroupVersion(t *testing.T) {
	gv, err := requestGroupVersion(context.Background())
	require.NoError(t, err)
	assert.Equal(t, schema.GroupVersion{Group: "kvstore.io", Version: "v1alpha1"}, gv, "default without request info")

	ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{APIGroup: "kvstore.io", APIVersion: "v1alpha1"})
	gv, err = requestGroupVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, schema.GroupVersion{Group: "kvstore.io", Version: "v1alpha1"}, gv)

	ctx = genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{APIGroup: "kvstore.io", APIVersion: "v2"})
	_, err = requestGroupVersion(ctx)
	assert.True(t, apierrors.IsInternalError(err), "got %v", err)
}

// Admission sees Scales, never stores.
func TestScaleValidationSeesScales(t *testing.T) {
	ctx := context.Background()
	oldKVS, newKVS := scaledKVS(), scaledKVS()
	newKVS.Spec.Replicas = ptr.To[int32](5)

	var gotNew, gotOld runtime.Object
	err := toScaleUpdateValidation(func(_ context.Context, obj, old runtime.Object) error {
		gotNew, gotOld = obj, old
		return nil
	})(ctx, newKVS, oldKVS)
	require.NoError(t, err)
	assert.Equal(t, int32(5), gotNew.(*scalescheme.Scale).Spec.Replicas)
	assert.Equal(t, int32(3), gotOld.(*scalescheme.Scale).Spec.Replicas)

	err = toScaleCreateValidation(func(_ context.Context, obj runtime.Object) error {
		gotNew = obj
		return nil
	})(ctx, newKVS)
	require.NoError(t, err)
	assert.IsType(t, &scalescheme.Scale{}, gotNew)

	bad := scaledKVS()
	bad.Status.Selector = "a>1"
	err = toScaleUpdateValidation(func(context.Context, runtime.Object, runtime.Object) error { return nil })(ctx, bad, oldKVS)
	assert.Error(t, err)
}

func TestScaleRESTKind(t *testing.T) {
	r := &ScaleREST{}
	assert.Equal(t, schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		r.GroupVersionKind(schema.GroupVersion{Group: "kvstore.io", Version: "v1alpha1"}))
	assert.IsType(t, &scalescheme.Scale{}, r.New())
}
