package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	kvsapply "github.com/kvstore-io/kvstore-apiserver/pkg/generated/applyconfiguration/kvstore/v1alpha1"
)

// The selector the controller writes into status.selector.
const scaleSelector = "app.kubernetes.io/component=data,app.kubernetes.io/instance=scaled"

var kvsResource = v1alpha1.SchemeGroupVersion.WithResource("keyvaluestores").GroupResource()

// scaledStore creates a store (3 replicas by default) with the status the
// controller would report for 2 existing replicas, and returns it.
func scaledStore(t *testing.T, name string) *v1alpha1.KeyValueStore {
	t.Helper()
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	created, err := kvsClient.Create(ctx, newKVS(name), metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status = v1alpha1.KeyValueStoreStatus{
		Phase:              v1alpha1.PhaseCreating,
		ObservedGeneration: 1,
		Replicas:           2,
		ReadyReplicas:      1,
		Selector:           scaleSelector,
	}
	withStatus, err := kvsClient.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	return withStatus
}

// patchScale sends a patch of the given type to /scale.
func patchScale(ctx context.Context, namespace, name string, pt types.PatchType, body string, opts metav1.PatchOptions) (*autoscalingv1.Scale, error) {
	out := &autoscalingv1.Scale{}
	err := client.KvstoreV1alpha1().RESTClient().Patch(pt).
		Namespace(namespace).Resource("keyvaluestores").Name(name).SubResource("scale").
		VersionedParams(&opts, metav1.ParameterCodec).
		Body([]byte(body)).Do(ctx).Into(out)
	return out, err
}

// requireOnlyReplicasChanged requires the stored store to be before with
// spec.replicas = replicas and one more generation: status, finalizers and
// the rest of the spec as they were.
func requireOnlyReplicasChanged(t *testing.T, before *v1alpha1.KeyValueStore, replicas int32) *v1alpha1.KeyValueStore {
	t.Helper()
	got, err := client.KvstoreV1alpha1().KeyValueStores(before.Namespace).Get(context.Background(), before.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, replicas, *got.Spec.Replicas, "spec.replicas")
	assert.Equal(t, before.Generation+1, got.Generation, "a replicas change bumps the generation")
	assert.Equal(t, before.Status, got.Status, "/scale never writes status")
	assert.Equal(t, before.Finalizers, got.Finalizers, "the teardown finalizer stays")
	wantSpec := before.Spec.DeepCopy()
	wantSpec.Replicas = &replicas
	assert.Equal(t, *wantSpec, got.Spec, "only spec.replicas changes")
	return got
}

func TestScaleGet(t *testing.T) {
	ctx := context.Background()
	store := scaledStore(t, "scaled")

	// The generated client asks for protobuf.
	got, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).GetScale(ctx, "scaled", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "scaled", got.Name)
	assert.Equal(t, ns(t), got.Namespace)
	assert.Equal(t, store.UID, got.UID)
	assert.Equal(t, store.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, autoscalingv1.ScaleSpec{Replicas: 3}, got.Spec, "spec.replicas")
	assert.Equal(t, autoscalingv1.ScaleStatus{Replicas: 2, Selector: scaleSelector}, got.Status, "status.replicas and status.selector")

	// JSON, as kubectl and the HorizontalPodAutoscaler read it.
	resp, body := rawGet(t, fmt.Sprintf("/apis/kvstore.io/v1alpha1/namespaces/%s/keyvaluestores/scaled/scale", ns(t)), "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var raw map[string]interface{}
	require.NoError(t, json.Unmarshal(body, &raw))
	assert.Equal(t, "autoscaling/v1", raw["apiVersion"])
	assert.Equal(t, "Scale", raw["kind"])
	assert.Equal(t, map[string]interface{}{"replicas": float64(3)}, raw["spec"])
	assert.Equal(t, map[string]interface{}{"replicas": float64(2), "selector": scaleSelector}, raw["status"])
}

func TestScaleTable(t *testing.T) {
	scaledStore(t, "table")
	resp, body := rawGet(t, fmt.Sprintf("/apis/kvstore.io/v1alpha1/namespaces/%s/keyvaluestores/table/scale", ns(t)),
		"application/json;as=Table;v=v1;g=meta.k8s.io")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(body, &table))
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	assert.Equal(t, []string{"Name", "Desired", "Available", "Age"}, cols)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []interface{}{"table", float64(3), float64(2)}, table.Rows[0].Cells[:3])
}

func TestScaleUpdate(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	store := scaledStore(t, "put")

	in, err := kvsClient.GetScale(ctx, "put", metav1.GetOptions{})
	require.NoError(t, err)
	in.Spec.Replicas = 5
	in.Status = autoscalingv1.ScaleStatus{Replicas: 9, Selector: "app=elsewhere"} // ignored
	out, err := kvsClient.UpdateScale(ctx, "put", in, metav1.UpdateOptions{FieldManager: "scaler"})
	require.NoError(t, err)
	assert.Equal(t, int32(5), out.Spec.Replicas)
	assert.Equal(t, autoscalingv1.ScaleStatus{Replicas: 2, Selector: scaleSelector}, out.Status, "the answer shows the stored status")
	assert.NotEqual(t, in.ResourceVersion, out.ResourceVersion)

	got := requireOnlyReplicasChanged(t, store, 5)
	assert.Equal(t, out.ResourceVersion, got.ResourceVersion)

	// Without a resourceVersion the write is unconditional, as for the store.
	unconditional := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "put"}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
	_, err = kvsClient.UpdateScale(ctx, "put", unconditional, metav1.UpdateOptions{})
	require.NoError(t, err)
	got = requireOnlyReplicasChanged(t, got, 7)

	// The store's update warnings come with a scale.
	warnClient, warned := warningClient(t, ns(t))
	even, err := warnClient.GetScale(ctx, "put", metav1.GetOptions{})
	require.NoError(t, err)
	even.Spec.Replicas = 4
	_, err = warnClient.UpdateScale(ctx, "put", even, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"spec.replicas: 4 is even; an odd number tolerates the same number of failures with one replica fewer"}, warned.get())
	got = requireOnlyReplicasChanged(t, got, 4)

	// The same replicas again is no change: no new generation.
	same, err := kvsClient.GetScale(ctx, "put", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = kvsClient.UpdateScale(ctx, "put", same, metav1.UpdateOptions{})
	require.NoError(t, err)
	again, err := kvsClient.Get(ctx, "put", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, got.Generation, again.Generation)
	assert.Equal(t, int32(4), *again.Spec.Replicas)
}

func TestScalePatch(t *testing.T) {
	ctx := context.Background()
	namespace := ns(t)
	store := scaledStore(t, "patch")

	for _, tc := range []struct {
		name     string
		pt       types.PatchType
		body     string
		replicas int32
	}{
		{"merge, as kubectl scale sends", types.MergePatchType, `{"spec":{"replicas":5}}`, 5},
		{"strategic merge", types.StrategicMergePatchType, `{"spec":{"replicas":7}}`, 7},
		{"json", types.JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":7},{"op":"replace","path":"/spec/replicas","value":1}]`, 1},
		{"status is ignored", types.MergePatchType, `{"spec":{"replicas":3},"status":{"replicas":9}}`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := patchScale(ctx, namespace, "patch", tc.pt, tc.body, metav1.PatchOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.replicas, out.Spec.Replicas)
			assert.Equal(t, int32(2), out.Status.Replicas)
			store = requireOnlyReplicasChanged(t, store, tc.replicas)
		})
	}
}

func TestScaleRefusesInvalidReplicas(t *testing.T) {
	ctx := context.Background()
	namespace := ns(t)
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(namespace)
	store := scaledStore(t, "invalid")

	for _, replicas := range []int32{0, 10, -1} {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			in, err := kvsClient.GetScale(ctx, "invalid", metav1.GetOptions{})
			require.NoError(t, err)
			in.Spec.Replicas = replicas
			_, err = kvsClient.UpdateScale(ctx, "invalid", in, metav1.UpdateOptions{})
			requireInvalid(t, err, "spec.replicas")

			_, err = patchScale(ctx, namespace, "invalid", types.MergePatchType, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas), metav1.PatchOptions{})
			requireInvalid(t, err, "spec.replicas")
		})
	}
	got, err := kvsClient.Get(ctx, "invalid", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, store.ResourceVersion, got.ResourceVersion, "a refused scale must not write")
}

func TestScaleStaleResourceVersionConflicts(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	scaledStore(t, "stale")

	stale, err := kvsClient.GetScale(ctx, "stale", metav1.GetOptions{})
	require.NoError(t, err)
	cur, err := kvsClient.Get(ctx, "stale", metav1.GetOptions{})
	require.NoError(t, err)
	cur.Spec.Port = 7000
	_, err = kvsClient.Update(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)

	stale.Spec.Replicas = 5
	_, err = kvsClient.UpdateScale(ctx, "stale", stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "want 409, got %v", err)

	_, err = patchScale(ctx, ns(t), "stale", types.MergePatchType,
		fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"replicas":5}}`, stale.ResourceVersion), metav1.PatchOptions{})
	assert.True(t, apierrors.IsConflict(err), "want 409, got %v", err)

	// A UID precondition of another object conflicts too.
	fresh, err := kvsClient.GetScale(ctx, "stale", metav1.GetOptions{})
	require.NoError(t, err)
	fresh.UID = "00000000-0000-0000-0000-000000000000"
	fresh.Spec.Replicas = 5
	_, err = kvsClient.UpdateScale(ctx, "stale", fresh, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "want 409, got %v", err)

	got, err := kvsClient.Get(ctx, "stale", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *got.Spec.Replicas)
}

func TestScaleOfMissingStore(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))

	_, err := kvsClient.GetScale(ctx, "missing", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "GET: want 404, got %v", err)

	in := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "missing"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	_, err = kvsClient.UpdateScale(ctx, "missing", in, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "PUT: want 404, got %v", err)

	for _, pt := range []types.PatchType{types.MergePatchType, types.StrategicMergePatchType} {
		_, err = patchScale(ctx, ns(t), "missing", pt, `{"spec":{"replicas":3}}`, metav1.PatchOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s: want 404, got %v", pt, err)
	}
	_, err = patchScale(ctx, ns(t), "missing", types.JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":3}]`, metav1.PatchOptions{})
	assert.True(t, apierrors.IsNotFound(err), "json patch: want 404, got %v", err)

	_, err = kvsClient.Get(ctx, "missing", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "/scale must never create a store")
}

// TestScaleManagedFields: a write through /scale is recorded as ownership of
// the store's spec.replicas, so server-side apply of the store conflicts with
// it, as with kube's own workloads.
func TestScaleManagedFields(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	cfg := kvsapply.KeyValueStore("owned", ns(t)).WithSpec(kvsapply.KeyValueStoreSpec().WithImage("redis:7.2").WithReplicas(3))
	_, err := kvsClient.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)

	_, err = patchScale(ctx, ns(t), "owned", types.MergePatchType, `{"spec":{"replicas":5}}`, metav1.PatchOptions{FieldManager: "autoscaler"})
	require.NoError(t, err)

	got, err := kvsClient.Get(ctx, "owned", metav1.GetOptions{})
	require.NoError(t, err)
	entries := map[string]metav1.ManagedFieldsEntry{}
	for _, e := range got.ManagedFields {
		entries[e.Manager] = e
	}
	scaler, ok := entries["autoscaler"]
	require.True(t, ok, "managedFields: %+v", got.ManagedFields)
	assert.Equal(t, "scale", scaler.Subresource)
	assert.Equal(t, metav1.ManagedFieldsOperationUpdate, scaler.Operation)
	assert.Equal(t, "kvstore.io/v1alpha1", scaler.APIVersion, "recorded in the store's version, not autoscaling/v1")
	assert.JSONEq(t, `{"f:spec":{"f:replicas":{}}}`, string(scaler.FieldsV1.Raw))
	require.Contains(t, entries, "alice")
	assert.NotContains(t, string(entries["alice"].FieldsV1.Raw), "f:replicas", "alice lost spec.replicas to the autoscaler")
	assert.Contains(t, string(entries["alice"].FieldsV1.Raw), "f:image")

	// alice re-applying her replicas now conflicts with the autoscaler.
	_, err = kvsClient.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "alice"})
	require.True(t, apierrors.IsConflict(err), "want a conflict on spec.replicas, got %v", err)
	assert.Contains(t, err.Error(), ".spec.replicas")
	assert.Contains(t, err.Error(), "autoscaler")

	// Server-side apply through /scale records its owner the same way.
	applied, err := patchScale(ctx, ns(t), "owned", types.ApplyPatchType,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"owned"},"spec":{"replicas":7}}`,
		metav1.PatchOptions{FieldManager: "bob", Force: ptr.To(true)})
	require.NoError(t, err)
	assert.Equal(t, int32(7), applied.Spec.Replicas)
	got, err = kvsClient.Get(ctx, "owned", metav1.GetOptions{})
	require.NoError(t, err)
	var bob *metav1.ManagedFieldsEntry
	for i, e := range got.ManagedFields {
		if e.Manager == "bob" {
			bob = &got.ManagedFields[i]
		}
		assert.NotEqual(t, "autoscaler", e.Manager, "the forced apply took spec.replicas from the autoscaler")
	}
	require.NotNil(t, bob, "managedFields: %+v", got.ManagedFields)
	assert.Equal(t, metav1.ManagedFieldsOperationApply, bob.Operation)
	assert.Equal(t, "scale", bob.Subresource)
	assert.JSONEq(t, `{"f:spec":{"f:replicas":{}}}`, string(bob.FieldsV1.Raw))
}

// TestScaleThroughScaleClient reads and writes /scale with client-go's
// polymorphic scale client, found through discovery: what `kubectl scale`
// and the HorizontalPodAutoscaler controller use.
func TestScaleThroughScaleClient(t *testing.T) {
	ctx := context.Background()
	scaledStore(t, "hpa")

	disco := discovery.NewDiscoveryClientForConfigOrDie(config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	scales, err := scale.NewForConfig(config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disco))
	require.NoError(t, err)

	got, err := scales.Scales(ns(t)).Get(ctx, kvsResource, "hpa", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), got.Spec.Replicas)
	assert.Equal(t, int32(2), got.Status.Replicas)
	assert.Equal(t, scaleSelector, got.Status.Selector)

	got.Spec.Replicas = 5
	updated, err := scales.Scales(ns(t)).Update(ctx, kvsResource, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(5), updated.Spec.Replicas)

	gvr := v1alpha1.SchemeGroupVersion.WithResource("keyvaluestores")
	patched, err := scales.Scales(ns(t)).Patch(ctx, gvr, "hpa", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), patched.Spec.Replicas)

	stored, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Get(ctx, "hpa", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *stored.Spec.Replicas)
}

func TestScaleDiscovery(t *testing.T) {
	disco := discovery.NewDiscoveryClientForConfigOrDie(config)
	list, err := disco.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	require.NoError(t, err)
	var scaleResource *metav1.APIResource
	for i := range list.APIResources {
		if list.APIResources[i].Name == "keyvaluestores/scale" {
			scaleResource = &list.APIResources[i]
		}
	}
	require.NotNil(t, scaleResource, "resources: %+v", list.APIResources)
	assert.Equal(t, schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		schema.GroupVersionKind{Group: scaleResource.Group, Version: scaleResource.Version, Kind: scaleResource.Kind})
	assert.True(t, scaleResource.Namespaced)
	verbs := slices.Clone([]string(scaleResource.Verbs))
	slices.Sort(verbs)
	assert.Equal(t, []string{"get", "patch", "update"}, verbs)

	// Aggregated discovery, which kubectl and kube-apiserver's aggregator read.
	resp, body := rawGet(t, "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var groups apidiscoveryv2.APIGroupDiscoveryList
	require.NoError(t, json.Unmarshal(body, &groups))
	var sub *apidiscoveryv2.APISubresourceDiscovery
	for _, g := range groups.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				for i := range r.Subresources {
					if g.Name == "kvstore.io" && r.Resource == "keyvaluestores" && r.Subresources[i].Subresource == "scale" {
						sub = &r.Subresources[i]
					}
				}
			}
		}
	}
	require.NotNil(t, sub, "aggregated discovery: %s", body)
	assert.Equal(t, &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, sub.ResponseKind)
}

// TestStatusSelectorMustBeALabelSelector: /scale hands status.selector to
// autoscalers as a label selector, so /status refuses one that is not.
func TestStatusSelectorMustBeALabelSelector(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	store := scaledStore(t, "selector")
	store.Status.Selector = "app in demo"
	_, err := kvsClient.UpdateStatus(ctx, store, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.selector")

	got, err := kvsClient.GetScale(ctx, "selector", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, scaleSelector, got.Status.Selector)
}

// TestScaleOpenAPI: the subresource is published with the autoscaling/v1
// Scale schema, whose only kind is autoscaling/v1 Scale.
func TestScaleOpenAPI(t *testing.T) {
	resp, body := rawGet(t, "/openapi/v3/apis/kvstore.io/v1alpha1", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Paths      map[string]map[string]interface{} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]interface{}   `json:"properties"`
				GVK        []map[string]interface{} `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	path, ok := doc.Paths["/apis/kvstore.io/v1alpha1/namespaces/{namespace}/keyvaluestores/{name}/scale"]
	require.True(t, ok, "paths: %v", keys(doc.Paths))
	for _, verb := range []string{"get", "put", "patch"} {
		assert.Contains(t, path, verb)
	}
	s, ok := doc.Components.Schemas["io.k8s.api.autoscaling.v1.Scale"]
	require.True(t, ok, "schemas: %v", keys(doc.Components.Schemas))
	assert.Contains(t, s.Properties, "spec")
	assert.Equal(t, []map[string]interface{}{{"group": "autoscaling", "version": "v1", "kind": "Scale"}}, s.GVK)
}
