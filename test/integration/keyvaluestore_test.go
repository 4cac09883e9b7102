package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	kvsapply "github.com/kvstore-io/kvstore-apiserver/pkg/generated/applyconfiguration/kvstore/v1alpha1"
)

var gvr = v1alpha1.SchemeGroupVersion.WithResource("keyvaluestores")

func newKVS(name string) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.KeyValueStoreSpec{Image: "redis:7.2"},
	}
}

// ns gives each test its own namespace so tests do not see each other's objects.
func ns(t *testing.T) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

// removeFinalizer releases a store the way the controller does after teardown.
func removeFinalizer(t *testing.T, namespace, name string) {
	t.Helper()
	patch := `[{"op":"test","path":"/metadata/finalizers","value":["kvstore.io/teardown"]},{"op":"remove","path":"/metadata/finalizers"}]`
	_, err := client.KvstoreV1alpha1().KeyValueStores(namespace).Patch(context.Background(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

func TestCRUDAndDefaulting(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))

	in := newKVS("crud")
	in.Status.Phase = v1alpha1.PhaseReady // must be dropped
	created, err := kvsClient.Create(ctx, in, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Generation)
	assert.Equal(t, []string{v1alpha1.TeardownFinalizer}, created.Finalizers)
	assert.Empty(t, created.Status.Phase, "status sent on create must be wiped")

	got, err := kvsClient.Get(ctx, "crud", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](3), got.Spec.Replicas)
	assert.Equal(t, int32(6379), got.Spec.Port)
	assert.True(t, resource.MustParse("1Gi").Equal(got.Spec.Storage.VolumeSize), "storage.size = %s", got.Spec.Storage.VolumeSize.String())
	require.NotNil(t, got.Spec.PersistentVolumeClaimRetentionPolicy)
	assert.Equal(t, v1alpha1.RetainPersistentVolumeClaimRetentionPolicyType, got.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)

	got.Spec.Replicas = ptr.To[int32](5)
	updated, err := kvsClient.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(5), *updated.Spec.Replicas)

	list, err := kvsClient.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	require.NoError(t, kvsClient.Delete(ctx, "crud", metav1.DeleteOptions{}))
	removeFinalizer(t, ns(t), "crud")
	_, err = kvsClient.Get(ctx, "crud", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func TestGenerationOnlyOnSpecChange(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	created, err := kvsClient.Create(ctx, newKVS("gen"), metav1.CreateOptions{})
	require.NoError(t, err)

	created.Labels = map[string]string{"team": "a"}
	labelled, err := kvsClient.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), labelled.Generation, "a metadata change must not bump generation")

	labelled.Spec.Image = "redis:7.4"
	changed, err := kvsClient.Update(ctx, labelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), changed.Generation)
}

func TestStatusIsolation(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	created, err := kvsClient.Create(ctx, newKVS("status"), metav1.CreateOptions{})
	require.NoError(t, err)

	// The main endpoint ignores status.
	created.Status.Phase = v1alpha1.PhaseReady
	afterMain, err := kvsClient.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Empty(t, afterMain.Status.Phase)

	// /status writes status and ignores spec.
	afterMain.Status = v1alpha1.KeyValueStoreStatus{Phase: v1alpha1.PhaseCreating, Replicas: 3, ReadyReplicas: 1, ObservedGeneration: 1}
	afterMain.Spec.Image = "redis:9"
	afterStatus, err := kvsClient.UpdateStatus(ctx, afterMain, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseCreating, afterStatus.Status.Phase)
	assert.Equal(t, "redis:7.2", afterStatus.Spec.Image, "/status must not change spec")
	assert.Equal(t, int64(1), afterStatus.Generation)

	// Invalid status is refused with the field named, and nothing changes.
	afterStatus.Status.ReadyReplicas = 7
	_, err = kvsClient.UpdateStatus(ctx, afterStatus, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.readyReplicas")
	afterStatus.Status.ReadyReplicas = 1
	afterStatus.Status.Phase = "Sleeping"
	_, err = kvsClient.UpdateStatus(ctx, afterStatus, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.phase")
	stored, err := kvsClient.Get(ctx, "status", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), stored.Status.ReadyReplicas)
	assert.Equal(t, v1alpha1.PhaseCreating, stored.Status.Phase)
}

func requireInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	status, ok := err.(apierrors.APIStatus)
	require.True(t, ok)
	var got []string
	for _, c := range status.Status().Details.Causes {
		got = append(got, c.Field)
	}
	for _, f := range fields {
		assert.Contains(t, got, f, "error causes: %v", err)
	}
}

func TestValidationRejectsAndStoresNothing(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	cases := []struct {
		name   string
		mutate func(*v1alpha1.KeyValueStore)
		fields []string
	}{
		{"missing image", func(k *v1alpha1.KeyValueStore) { k.Spec.Image = "" }, []string{"spec.image"}},
		{"bad image", func(k *v1alpha1.KeyValueStore) { k.Spec.Image = "Redis Latest" }, []string{"spec.image"}},
		{"too many replicas", func(k *v1alpha1.KeyValueStore) { k.Spec.Replicas = ptr.To[int32](10) }, []string{"spec.replicas"}},
		{"port", func(k *v1alpha1.KeyValueStore) { k.Spec.Port = 70000 }, []string{"spec.port"}},
		{"size", func(k *v1alpha1.KeyValueStore) { k.Spec.Storage.VolumeSize = resource.MustParse("-1") }, []string{"spec.storage.size"}},
		{"proxy without image", func(k *v1alpha1.KeyValueStore) { k.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2)} }, []string{"spec.proxy.image"}},
		{"proxy replicas", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](21), Image: "envoy:1"}
		}, []string{"spec.proxy.replicas"}},
		{"retention", func(k *v1alpha1.KeyValueStore) {
			k.Spec.PersistentVolumeClaimRetentionPolicy = &v1alpha1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: "Shred"}
		}, []string{"spec.persistentVolumeClaimRetentionPolicy.whenDeleted"}},
		{"backup", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Backup = &v1alpha1.BackupSpec{ActiveDeadlineSeconds: ptr.To[int64](-1)}
		},
			[]string{"spec.backup.image", "spec.backup.activeDeadlineSeconds"}},
		{"backup command too long", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Backup = &v1alpha1.BackupSpec{Image: "backup:1", Command: []string{"/backup", strings.Repeat("x", 4097)}}
		}, []string{"spec.backup.command[1]"}},
		{"backup command too many entries", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Backup = &v1alpha1.BackupSpec{Image: "backup:1", Command: make([]string, 65)}
		}, []string{"spec.backup.command"}},
		{"backup schedule", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Backup = &v1alpha1.BackupSpec{Image: "backup:1", Schedule: "every night"}
		}, []string{"spec.backup.schedule"}},
		{"backup keep and time zone", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Backup = &v1alpha1.BackupSpec{Image: "backup:1", Schedule: "0 3 * * *", Keep: ptr.To[int32](0), TimeZone: ptr.To("Mars/Base")}
		}, []string{"spec.backup.keep", "spec.backup.timeZone"}},
		{"bootstrap", func(k *v1alpha1.KeyValueStore) {
			k.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: "Not_A_Name"}
		}, []string{"spec.bootstrap.image", "spec.bootstrap.fromBackup"}},
		{"name too long", func(k *v1alpha1.KeyValueStore) { k.Name = strings.Repeat("a", 53) }, []string{"metadata.name"}},
		{"several at once", func(k *v1alpha1.KeyValueStore) { k.Spec.Image = ""; k.Spec.Port = -1 }, []string{"spec.image", "spec.port"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := newKVS(fmt.Sprintf("invalid-%d", i))
			tc.mutate(obj)
			_, err := kvsClient.Create(ctx, obj, metav1.CreateOptions{})
			requireInvalid(t, err, tc.fields...)
		})
	}
	list, err := kvsClient.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "a refused object must not be stored")

	// Invalid updates leave the stored object as it was.
	created, err := kvsClient.Create(ctx, newKVS("valid"), metav1.CreateOptions{})
	require.NoError(t, err)
	created.Spec.Storage.VolumeSize = resource.MustParse("-1Gi")
	_, err = kvsClient.Update(ctx, created, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec.storage.size")
	stored, err := kvsClient.Get(ctx, "valid", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1Gi", stored.Spec.Storage.VolumeSize.String())
	assert.Equal(t, created.ResourceVersion, stored.ResourceVersion)

	// spec.bootstrap is given at create only.
	stored.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "restore:1"}
	_, err = kvsClient.Update(ctx, stored, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec.bootstrap")
}

func TestScheduleAndBootstrapDefaults(t *testing.T) {
	ctx := context.Background()
	obj := newKVS("scheduled")
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: "backup:1", Schedule: "@daily", TimeZone: ptr.To("Europe/Berlin")}
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "restore:1", FromBackup: "nightly"}
	created, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(7), *created.Spec.Backup.Keep)
	assert.Equal(t, int64(600), *created.Spec.Bootstrap.ActiveDeadlineSeconds)
	assert.Equal(t, "Europe/Berlin", *created.Spec.Backup.TimeZone)
}

func TestStaleUpdateConflicts(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	created, err := kvsClient.Create(ctx, newKVS("stale"), metav1.CreateOptions{})
	require.NoError(t, err)
	first := created.DeepCopy()
	first.Spec.Port = 7000
	_, err = kvsClient.Update(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)

	second := created.DeepCopy() // still at the old resourceVersion
	second.Spec.Port = 8000
	_, err = kvsClient.Update(ctx, second, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "want 409, got %v", err)
	stored, err := kvsClient.Get(ctx, "stale", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(7000), stored.Spec.Port)
}

func TestFinalizerHoldsDeletion(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	obj := newKVS("final")
	obj.Finalizers = []string{"example.com/keep"}
	created, err := kvsClient.Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/keep", v1alpha1.TeardownFinalizer}, created.Finalizers, "user finalizers kept, ours appended")

	// A client cannot strip our finalizer from a live store.
	created.Finalizers = []string{"example.com/keep"}
	updated, err := kvsClient.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Contains(t, updated.Finalizers, v1alpha1.TeardownFinalizer)

	require.NoError(t, kvsClient.Delete(ctx, "final", metav1.DeleteOptions{}))
	terminating, err := kvsClient.Get(ctx, "final", metav1.GetOptions{})
	require.NoError(t, err, "the finalizer must keep the object")
	assert.NotNil(t, terminating.DeletionTimestamp)

	terminating.Finalizers = nil
	_, err = kvsClient.Update(ctx, terminating, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = kvsClient.Get(ctx, "final", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "once every finalizer is gone the object is deleted, got %v", err)
}

func TestPagination(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	const n = 7
	for i := 0; i < n; i++ {
		_, err := kvsClient.Create(ctx, newKVS(fmt.Sprintf("page-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	opts := metav1.ListOptions{Limit: 3}
	pages := 0
	for {
		list, err := kvsClient.List(ctx, opts)
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(list.Items), 3)
		for _, item := range list.Items {
			assert.False(t, seen[item.Name], "duplicate %s", item.Name)
			seen[item.Name] = true
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	assert.Len(t, seen, n)
	assert.Equal(t, 3, pages)
}

func TestWatchFromResourceVersionInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	created, err := kvsClient.Create(ctx, newKVS("watched"), metav1.CreateOptions{})
	require.NoError(t, err)

	for _, port := range []int32{7001, 7002, 7003} {
		cur, err := kvsClient.Get(ctx, "watched", metav1.GetOptions{})
		require.NoError(t, err)
		cur.Spec.Port = port
		_, err = kvsClient.Update(ctx, cur, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	w, err := kvsClient.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	var ports []int32
	for len(ports) < 3 {
		select {
		case ev := <-w.ResultChan():
			require.Equal(t, watch.Modified, ev.Type, "event %+v", ev)
			ports = append(ports, ev.Object.(*v1alpha1.KeyValueStore).Spec.Port)
		case <-ctx.Done():
			t.Fatalf("only %d events before timeout", len(ports))
		}
	}
	assert.Equal(t, []int32{7001, 7002, 7003}, ports)
}

func TestLabelAndFieldSelectors(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	a := newKVS("sel-a")
	a.Labels = map[string]string{"tier": "gold"}
	b := newKVS("sel-b")
	b.Spec.Image = "valkey/valkey:8.0"
	for _, o := range []*v1alpha1.KeyValueStore{a, b} {
		_, err := kvsClient.Create(ctx, o, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cur, err := kvsClient.Get(ctx, "sel-b", metav1.GetOptions{})
	require.NoError(t, err)
	cur.Status.Phase = v1alpha1.PhaseReady
	_, err = kvsClient.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)

	names := func(opts metav1.ListOptions) []string {
		list, err := kvsClient.List(ctx, opts)
		require.NoError(t, err)
		var out []string
		for _, i := range list.Items {
			out = append(out, i.Name)
		}
		return out
	}
	assert.Equal(t, []string{"sel-a"}, names(metav1.ListOptions{LabelSelector: "tier=gold"}))
	assert.Equal(t, []string{"sel-b"}, names(metav1.ListOptions{FieldSelector: "status.phase=Ready"}))
	assert.Equal(t, []string{"sel-b"}, names(metav1.ListOptions{FieldSelector: "spec.image=valkey/valkey:8.0"}))
	assert.Equal(t, []string{"sel-a"}, names(metav1.ListOptions{FieldSelector: "metadata.name=sel-a"}))
	assert.Empty(t, names(metav1.ListOptions{FieldSelector: "status.phase=Ready", LabelSelector: "tier=gold"}))

	_, err = kvsClient.List(ctx, metav1.ListOptions{FieldSelector: "spec.port=6379"})
	assert.True(t, apierrors.IsBadRequest(err), "unsupported field selector must be a 400, got %v", err)
}

func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	cfg := kvsapply.KeyValueStore("ssa", ns(t)).WithSpec(kvsapply.KeyValueStoreSpec().WithImage("redis:7.2").WithReplicas(3))
	applied, err := kvsClient.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)
	managers := map[string]bool{}
	for _, mf := range applied.ManagedFields {
		managers[mf.Manager] = true
	}
	assert.True(t, managers["alice"], "managedFields: %+v", applied.ManagedFields)

	other := kvsapply.KeyValueStore("ssa", ns(t)).WithSpec(kvsapply.KeyValueStoreSpec().WithImage("redis:7.2").WithReplicas(5))
	_, err = kvsClient.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "bob"})
	require.True(t, apierrors.IsConflict(err), "want a conflict on spec.replicas, got %v", err)
	assert.Contains(t, err.Error(), ".spec.replicas")

	forced, err := kvsClient.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "bob", Force: true})
	require.NoError(t, err)
	assert.Equal(t, int32(5), *forced.Spec.Replicas)

	// Status applied through /status is owned there and leaves spec alone.
	st := kvsapply.KeyValueStore("ssa", ns(t)).WithStatus(kvsapply.KeyValueStoreStatus().WithPhase(v1alpha1.PhaseCreating))
	withStatus, err := kvsClient.ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "controller", Force: true})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseCreating, withStatus.Status.Phase)
	assert.Equal(t, int32(5), *withStatus.Spec.Replicas)
}

// The generated Extract helpers return only what the field manager owns,
// as client-go's do for built-in types: a controller that extracts its
// status, changes it and applies it back must not take over another
// manager's conditions (or, from metadata, the teardown finalizer). They
// returned every condition while the client's schema was untyped (found by
// review).
func TestExtractReturnsOnlyTheManagersFields(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	_, err := kvsClient.Apply(ctx, kvsapply.KeyValueStore("extract", ns(t)).WithSpec(kvsapply.KeyValueStoreSpec().WithImage("redis:7.2").WithReplicas(1)),
		metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)
	condition := func(typ string) *metav1ac.ConditionApplyConfiguration {
		return metav1ac.Condition().WithType(typ).WithStatus(metav1.ConditionTrue).WithReason("Test").WithMessage(typ).
			WithLastTransitionTime(metav1.Now())
	}
	for manager, typ := range map[string]string{"ctrl-a": "Available", "ctrl-b": "Degraded"} {
		_, err := kvsClient.ApplyStatus(ctx, kvsapply.KeyValueStore("extract", ns(t)).WithStatus(kvsapply.KeyValueStoreStatus().WithConditions(condition(typ))),
			metav1.ApplyOptions{FieldManager: manager, Force: true})
		require.NoError(t, err)
	}
	stored, err := kvsClient.Get(ctx, "extract", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, stored.Status.Conditions, 2)

	mine, err := kvsapply.ExtractKeyValueStoreStatus(stored, "ctrl-a")
	require.NoError(t, err)
	require.NotNil(t, mine.Status)
	require.Len(t, mine.Status.Conditions, 1, "only ctrl-a's condition")
	assert.Equal(t, "Available", *mine.Status.Conditions[0].Type)

	spec, err := kvsapply.ExtractKeyValueStore(stored, "alice")
	require.NoError(t, err)
	assert.Equal(t, "redis:7.2", *spec.Spec.Image)
	assert.Nil(t, spec.Status, "alice owns no status")
}

func TestStrictFieldValidation(t *testing.T) {
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kvstore.io/v1alpha1",
		"kind":       "KeyValueStore",
		"metadata":   map[string]interface{}{"name": "strict"},
		"spec":       map[string]interface{}{"image": "redis:7.2", "replicaz": int64(3)},
	}}
	_, err := dynClient.Resource(gvr).Namespace(ns(t)).Create(ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
	require.Error(t, err)
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
	assert.Contains(t, err.Error(), `unknown field "spec.replicaz"`)

	_, err = dynClient.Resource(gvr).Namespace(ns(t)).Get(ctx, "strict", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}

func TestTableOutput(t *testing.T) {
	ctx := context.Background()
	_, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Create(ctx, newKVS("table"), metav1.CreateOptions{})
	require.NoError(t, err)

	rc, err := rest.RESTClientFor(restConfigFor())
	require.NoError(t, err)
	raw, err := rc.Get().AbsPath("/apis/kvstore.io/v1alpha1/namespaces", ns(t), "keyvaluestores").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	assert.Equal(t, []string{"Name", "Replicas", "Ready", "Phase", "Age", "Image", "Capacity", "Last Backup"}, cols)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []interface{}{"table", float64(3), "0/3", "Pending"}, table.Rows[0].Cells[:4])
	assert.Equal(t, []interface{}{"redis:7.2", "1Gi", "<none>"}, table.Rows[0].Cells[5:])
}

func TestOpenAPIV3HasSchemaWithDescriptions(t *testing.T) {
	rc, err := rest.RESTClientFor(restConfigFor())
	require.NoError(t, err)
	raw, err := rc.Get().AbsPath("/openapi/v3/apis/kvstore.io/v1alpha1").DoRaw(context.Background())
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Description string                            `json:"description"`
				Properties  map[string]map[string]interface{} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	spec, ok := doc.Components.Schemas["io.kvstore.v1alpha1.KeyValueStoreSpec"]
	require.True(t, ok, "schemas: %v", keys(doc.Components.Schemas))
	assert.Contains(t, spec.Properties["replicas"]["description"], "number of data replicas")
	assert.EqualValues(t, 3, spec.Properties["replicas"]["default"])
	kvs := doc.Components.Schemas["io.kvstore.v1alpha1.KeyValueStore"]
	assert.Contains(t, kvs.Description, "replicated key-value store")

	rawV2, err := rc.Get().AbsPath("/openapi/v2").DoRaw(context.Background())
	require.NoError(t, err)
	assert.Contains(t, string(rawV2), "io.kvstore.v1alpha1.KeyValueStore")
}

func TestStoredInEtcdUnderExpectedKey(t *testing.T) {
	ctx := context.Background()
	_, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Create(ctx, newKVS("inetcd"), metav1.CreateOptions{})
	require.NoError(t, err)
	ec, err := etcd.Client()
	require.NoError(t, err)
	defer ec.Close()
	key := fmt.Sprintf("%s/keyvaluestores/%s/inetcd", etcdPrefix, ns(t))
	resp, err := ec.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "no object at %s", key)
	// Stored as protobuf (the "k8s\x00" envelope) in the storage version.
	raw := resp.Kvs[0].Value
	require.True(t, bytes.HasPrefix(raw, []byte("k8s\x00")), "not protobuf: %q", raw[:min(len(raw), 16)])
	obj, gvk, err := apiserver.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, v1beta1.SchemeGroupVersion.WithKind("KeyValueStore"), *gvk, "stored as the storage version")
	assert.Equal(t, "redis:7.2", obj.(*v1beta1.KeyValueStore).Spec.Image)
}

func restConfigFor() *rest.Config {
	c := rest.CopyConfig(config)
	c.GroupVersion = &v1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = unstructuredSerializer()
	return c
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
