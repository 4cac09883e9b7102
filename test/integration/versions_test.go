package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// Both versions are served from the same objects, v1beta1 preferred.
func TestDiscoveryServesBothVersions(t *testing.T) {
	groups, err := client.Discovery().ServerGroups()
	require.NoError(t, err)
	var versions []string
	preferred := ""
	for _, g := range groups.Groups {
		if g.Name == "kvstore.io" {
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
			preferred = g.PreferredVersion.Version
		}
	}
	assert.Equal(t, []string{"v1beta1", "v1alpha1"}, versions)
	assert.Equal(t, "v1beta1", preferred)

	for _, gv := range []string{"kvstore.io/v1alpha1", "kvstore.io/v1beta1"} {
		resources, err := client.Discovery().ServerResourcesForGroupVersion(gv)
		require.NoError(t, err)
		var names []string
		for _, r := range resources.APIResources {
			names = append(names, r.Name)
			if r.Name == "keyvaluestores" {
				assert.Equal(t, []string{"kvs"}, r.ShortNames, gv)
			}
		}
		assert.ElementsMatch(t, []string{"keyvaluestores", "keyvaluestores/status", "keyvaluestores/scale", "keyvaluestorebackups", "keyvaluestorebackups/status"}, names, gv)
	}
}

func TestOpenAPIBothVersions(t *testing.T) {
	rc, err := rest.RESTClientFor(restConfigFor())
	require.NoError(t, err)
	raw, err := rc.Get().AbsPath("/openapi/v3/apis/kvstore.io/v1beta1").DoRaw(context.Background())
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]interface{} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	storage, ok := doc.Components.Schemas["io.kvstore.v1beta1.StorageSpec"]
	require.True(t, ok, "schemas: %v", keys(doc.Components.Schemas))
	assert.Contains(t, storage.Properties, "capacity")
	assert.NotContains(t, storage.Properties, "size")
	status := doc.Components.Schemas["io.kvstore.v1beta1.KeyValueStoreStatus"]
	assert.NotContains(t, status.Properties, "currentImage")
	assert.Contains(t, status.Properties, "observedGeneration")

	rawV2, err := rc.Get().AbsPath("/openapi/v2").DoRaw(context.Background())
	require.NoError(t, err)
	assert.Contains(t, string(rawV2), "io.kvstore.v1alpha1.KeyValueStore")
	assert.Contains(t, string(rawV2), "io.kvstore.v1beta1.KeyValueStore")
}

// What one version writes the other reads, and defaults are the same
// whichever version created the object.
func TestCrossVersionReadWrite(t *testing.T) {
	ctx := context.Background()
	alpha := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	beta := client.KvstoreV1beta1().KeyValueStores(ns(t))

	_, err := alpha.Create(ctx, &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "from-alpha"},
		Spec:       v1alpha1.KeyValueStoreSpec{Image: "redis:7.2", Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("3Gi")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := beta.Get(ctx, "from-alpha", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "3Gi", got.Spec.Storage.Capacity.String())

	minimal, err := beta.Create(ctx, &v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "from-beta"},
		Spec:       v1beta1.KeyValueStoreSpec{Image: "redis:7.2"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3, *minimal.Spec.Replicas)
	assert.EqualValues(t, 6379, minimal.Spec.Port)
	assert.Equal(t, "1Gi", minimal.Spec.Storage.Capacity.String())
	assert.Equal(t, v1beta1.RetainPersistentVolumeClaimRetentionPolicyType, minimal.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
	assert.Equal(t, []string{v1beta1.TeardownFinalizer}, minimal.Finalizers)
	assert.EqualValues(t, 1, minimal.Generation)
	asAlpha, err := alpha.Get(ctx, "from-beta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1Gi", asAlpha.Spec.Storage.VolumeSize.String())

	// Written back by a v1alpha1 client, read again by v1beta1: nothing moved.
	asAlpha.Spec.Image = "redis:7.4"
	_, err = alpha.Update(ctx, asAlpha, metav1.UpdateOptions{})
	require.NoError(t, err)
	again, err := beta.Get(ctx, "from-beta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "redis:7.4", again.Spec.Image)
	assert.EqualValues(t, 2, again.Generation)
	again.Spec.Image, minimal.Spec.Image = "", ""
	assert.Equal(t, minimal.Spec, again.Spec)

	// Status written through v1alpha1 with currentImage, read through
	// v1beta1 and written back there: currentImage survives, and Ready follows
	// the phase.
	asAlpha, err = alpha.Get(ctx, "from-beta", metav1.GetOptions{})
	require.NoError(t, err)
	asAlpha.Status = v1alpha1.KeyValueStoreStatus{Phase: v1alpha1.PhaseReady, ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, CurrentImage: "redis:7.4"}
	_, err = alpha.UpdateStatus(ctx, asAlpha, metav1.UpdateOptions{})
	require.NoError(t, err)
	b, err := beta.Get(ctx, "from-beta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "redis:7.4", b.Annotations["kvstore.io/v1alpha1-status-current-image"])
	ready := meta.FindStatusCondition(b.Status.Conditions, v1beta1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.EqualValues(t, 2, ready.ObservedGeneration)
	b.Status.ProxyReadyReplicas = 0
	b.Status.UpdatedReplicas = 3
	_, err = beta.UpdateStatus(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	a, err := alpha.Get(ctx, "from-beta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "redis:7.4", a.Status.CurrentImage)
	assert.EqualValues(t, 3, a.Status.UpdatedReplicas)
	assert.NotContains(t, a.Annotations, "kvstore.io/v1alpha1-status-current-image")

	// The annotation is the server's: a v1alpha1 client may not set it.
	a.Annotations = map[string]string{"kvstore.io/v1alpha1-status-current-image": "forged"}
	_, err = alpha.Update(ctx, a, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
}

// Validation answers the same 422 in both versions, with the field path
// of the version the client sent.
func TestValidationInBothVersions(t *testing.T) {
	ctx := context.Background()
	_, err := client.KvstoreV1beta1().KeyValueStores(ns(t)).Create(ctx, &v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       v1beta1.KeyValueStoreSpec{Image: "redis:7.2", Replicas: ptr.To[int32](10), Storage: v1beta1.StorageSpec{Capacity: resource.MustParse("-1Gi")}},
	}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.ElementsMatch(t, []string{"spec.replicas", "spec.storage.capacity"}, causeFields(err))

	_, err = client.KvstoreV1alpha1().KeyValueStores(ns(t)).Create(ctx, &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       v1alpha1.KeyValueStoreSpec{Image: "redis:7.2", Replicas: ptr.To[int32](10), Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("-1Gi")}},
	}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.ElementsMatch(t, []string{"spec.replicas", "spec.storage.size"}, causeFields(err))

	// Storage may change size through either version (the controller only
	// ever grows claims); its class is immutable, named as the version
	// spells it.
	created, err := client.KvstoreV1beta1().KeyValueStores(ns(t)).Create(ctx, &v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "good"}, Spec: v1beta1.KeyValueStoreSpec{Image: "redis:7.2"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Spec.Storage.Capacity = resource.MustParse("2Gi")
	grown, err := client.KvstoreV1beta1().KeyValueStores(ns(t)).Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2Gi", grown.Spec.Storage.Capacity.String())
	assert.Equal(t, created.Generation+1, grown.Generation, "a new size is a new generation")
	grown.Spec.Storage.Capacity = resource.MustParse("-2Gi")
	_, err = client.KvstoreV1beta1().KeyValueStores(ns(t)).Update(ctx, grown, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Equal(t, []string{"spec.storage.capacity"}, causeFields(err))
	assert.Contains(t, err.Error(), `spec.storage.capacity: Invalid value: "-2Gi": must be greater than zero`, "the value as the client wrote it")
	old, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Get(ctx, "good", metav1.GetOptions{})
	require.NoError(t, err)
	old.Spec.Storage.VolumeSize = resource.MustParse("1Gi")
	lowered, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Update(ctx, old, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1Gi", lowered.Spec.Storage.VolumeSize.String())
	lowered.Spec.Storage.StorageClassName = ptr.To("fast")
	_, err = client.KvstoreV1alpha1().KeyValueStores(ns(t)).Update(ctx, lowered, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Equal(t, []string{"spec.storage.storageClassName"}, causeFields(err))
}

func causeFields(err error) []string {
	var fields []string
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Details != nil {
		for _, c := range s.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return fields
}

// Field selectors and the table are the same in both versions.
func TestFieldSelectorsAndTableInBothVersions(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"one", "two"} {
		_, err := client.KvstoreV1beta1().KeyValueStores(ns(t)).Create(ctx, &v1beta1.KeyValueStore{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.KeyValueStoreSpec{Image: "redis:" + name},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	a, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).List(ctx, metav1.ListOptions{FieldSelector: "spec.image=redis:one"})
	require.NoError(t, err)
	b, err := client.KvstoreV1beta1().KeyValueStores(ns(t)).List(ctx, metav1.ListOptions{FieldSelector: "spec.image=redis:one"})
	require.NoError(t, err)
	require.Len(t, a.Items, 1)
	require.Len(t, b.Items, 1)
	assert.Equal(t, a.Items[0].Name, b.Items[0].Name)
	_, err = client.KvstoreV1beta1().KeyValueStores(ns(t)).List(ctx, metav1.ListOptions{FieldSelector: "spec.storage.capacity=1Gi"})
	require.True(t, apierrors.IsBadRequest(err), "got %v", err)

	tables := map[string]metav1.Table{}
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		rc, err := rest.RESTClientFor(restConfigFor())
		require.NoError(t, err)
		raw, err := rc.Get().AbsPath("/apis/kvstore.io", version, "namespaces", ns(t), "keyvaluestores").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		require.NoError(t, err)
		var table metav1.Table
		require.NoError(t, json.Unmarshal(raw, &table))
		require.Len(t, table.Rows, 2)
		table.ListMeta = metav1.ListMeta{}
		for i := range table.Rows {
			table.Rows[i].Object.Raw = nil // carries the object in its own version
		}
		tables[version] = table
	}
	assert.Equal(t, tables["v1alpha1"], tables["v1beta1"])
}

// Server-side apply tracks ownership across versions: a field applied in
// one version conflicts with an applier in the other, and the main and
// /status endpoints own the same fields in both.
func TestServerSideApplyAcrossVersions(t *testing.T) {
	ctx := context.Background()
	apply := func(version, manager, subresource, body string, force bool) error {
		rc, err := rest.RESTClientFor(restConfigFor())
		require.NoError(t, err)
		req := rc.Patch(types.ApplyPatchType).AbsPath("/apis/kvstore.io", version, "namespaces", ns(t), "keyvaluestores", "ssa").
			Param("fieldManager", manager).Body([]byte(fmt.Sprintf(`{"apiVersion":"kvstore.io/%s","kind":"KeyValueStore","metadata":{"name":"ssa"},%s}`, version, body)))
		if subresource != "" {
			req = req.SubResource(subresource)
		}
		if force {
			req = req.Param("force", "true")
		}
		return req.Do(ctx).Error()
	}

	require.NoError(t, apply("v1alpha1", "alice", "", `"spec":{"image":"redis:7.2","replicas":3,"storage":{"size":"2Gi"}}`, false))

	// bob, in v1beta1, conflicts with alice's v1alpha1 ownership.
	err := apply("v1beta1", "bob", "", `"spec":{"replicas":5}`, false)
	require.True(t, apierrors.IsConflict(err), "got %v", err)
	assert.Contains(t, err.Error(), "alice")
	assert.Contains(t, err.Error(), ".spec.replicas")
	err = apply("v1beta1", "bob", "", `"spec":{"storage":{"capacity":"3Gi"}}`, false)
	require.True(t, apierrors.IsConflict(err), "the renamed field is the same field: %v", err)
	assert.Contains(t, err.Error(), "alice")

	// alice re-applies the same intent in v1beta1: no conflict with herself.
	require.NoError(t, apply("v1beta1", "alice", "", `"spec":{"image":"redis:7.2","replicas":3,"storage":{"capacity":"2Gi"}}`, false))

	require.NoError(t, apply("v1beta1", "bob", "", `"spec":{"replicas":5}`, true))
	got, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Get(ctx, "ssa", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 5, *got.Spec.Replicas)
	owners := map[string]string{}
	for _, mf := range got.ManagedFields {
		owners[mf.Manager] = mf.APIVersion
		if mf.Manager == "bob" {
			assert.Contains(t, string(mf.FieldsV1.Raw), `"f:replicas"`)
		}
	}
	assert.Equal(t, "kvstore.io/v1beta1", owners["bob"])

	// Status through the main endpoint is reset in v1beta1 too; /status in
	// v1beta1 owns it and leaves spec alone.
	require.NoError(t, apply("v1beta1", "carol", "", `"status":{"phase":"Ready"}`, true))
	got, err = client.KvstoreV1alpha1().KeyValueStores(ns(t)).Get(ctx, "ssa", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Status.Phase)
	require.NoError(t, apply("v1beta1", "controller", "status", `"spec":{"replicas":1},"status":{"phase":"Creating"}`, true))
	got, err = client.KvstoreV1alpha1().KeyValueStores(ns(t)).Get(ctx, "ssa", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseCreating, got.Status.Phase)
	assert.EqualValues(t, 5, *got.Spec.Replicas)
	for _, mf := range got.ManagedFields {
		if mf.Manager == "controller" {
			assert.False(t, strings.Contains(string(mf.FieldsV1.Raw), `"f:spec"`), "status owns no spec: %s", mf.FieldsV1.Raw)
		}
	}
}
