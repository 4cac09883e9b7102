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
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/pkg/storagemigration"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// oldStore is a store as the v1alpha1-only server left it in etcd: created,
// defaulted, given the finalizer and a Ready status with currentImage.
func oldStore(namespace, name string) *v1alpha1.KeyValueStore {
	when := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: types.UID("uid-" + name), Generation: 1,
			CreationTimestamp: when, Finalizers: []string{v1alpha1.TeardownFinalizer},
			Labels: map[string]string{"team": "storage"},
		},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To[int32](3), Image: "redis:7.2", Port: 6379,
			Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("2Gi")},
			Backup:  &v1alpha1.BackupSpec{Image: "backup:1", ActiveDeadlineSeconds: ptr.To[int64](600), Keep: ptr.To[int32](7)},
			PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1alpha1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
		Status: v1alpha1.KeyValueStoreStatus{
			Phase: v1alpha1.PhaseReady, ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3,
			CurrentImage: "redis:7.2", Selector: "app.kubernetes.io/instance=" + name,
			Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: when, Reason: "AllReplicasReady", Message: "3/3 data replicas ready",
			}},
		},
	}
}

// latin1 is "café" in ISO 8859-1: not valid UTF-8.
const latin1 = "caf\xe9"

// putOld writes obj into etcd encoded as v1alpha1, as the old server did
// (protobuf, or JSON as a server before the protobuf switch did).
func putOld(t *testing.T, ec *clientv3.Client, key string, obj runtime.Object, mediaType string) {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok)
	var buf bytes.Buffer
	require.NoError(t, apiserver.Codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion).Encode(obj, &buf))
	require.Contains(t, buf.String(), "kvstore.io/v1alpha1")
	_, err := ec.Put(context.Background(), key, buf.String())
	require.NoError(t, err)
}

// storedVersion is the version and encoding of the object at key.
func storedVersion(t *testing.T, ec *clientv3.Client, key string) string {
	t.Helper()
	resp, err := ec.Get(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "no object at %s", key)
	raw := resp.Kvs[0].Value
	_, gvk, err := apiserver.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	require.NoError(t, err)
	encoding := "json"
	if bytes.HasPrefix(raw, []byte("k8s\x00")) {
		encoding = "protobuf"
	}
	return gvk.Version + "/" + encoding
}

// TestUpgradeFromV1alpha1Storage starts today's server on an etcd that the
// v1alpha1-only server populated, and checks that those objects keep
// working through both versions (read, field selectors, update, status
// write, /scale, delete with the finalizer, watches opened before any
// rewrite), then migrates them to v1beta1 storage with the migrate-storage
// code, twice.
func TestUpgradeFromV1alpha1Storage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("/registry/kvstore.io-upgrade-%d", time.Now().UnixNano())
	namespace := "upgrade"
	key := func(resource, name string) string {
		return fmt.Sprintf("%s/%s/%s/%s", prefix, resource, namespace, name)
	}

	ec, err := etcd.Client()
	require.NoError(t, err)
	defer ec.Close()

	stores := []string{"kept", "json", "status", "updated", "deleted"}
	for _, name := range stores {
		mediaType := runtime.ContentTypeProtobuf
		if name == "json" {
			mediaType = runtime.ContentTypeJSON
		}
		old := oldStore(namespace, name)
		if name == "kept" {
			// Bytes that are not UTF-8, as a protobuf client could store
			// them: JSON would serve them as U+FFFD.
			old.Annotations = map[string]string{"note": latin1}
		}
		putOld(t, ec, key("keyvaluestores", name), old, mediaType)
	}
	backup := &v1alpha1.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: namespace, UID: "uid-nightly", Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
		Spec:   v1alpha1.KeyValueStoreBackupSpec{StoreName: "kept", Reason: v1alpha1.BackupReasonManual},
		Status: v1alpha1.KeyValueStoreBackupStatus{Phase: v1alpha1.BackupPhaseCompleted, JobName: "kept-backup-nightly", Attempts: 1},
	}
	putOld(t, ec, key("keyvaluestorebackups", "nightly"), backup, runtime.ContentTypeProtobuf)

	// A second server in this process: the logging flags are the same as
	// the first one's, which may then be applied again.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	srv, err := framework.StartAPIServer(ctx, etcd.URL, prefix)
	require.NoError(t, err)
	defer srv.Stop()
	c := versioned.NewForConfigOrDie(srv.Config)
	alpha := c.KvstoreV1alpha1().KeyValueStores(namespace)
	beta := c.KvstoreV1beta1().KeyValueStores(namespace)

	// Watches opened before any object is rewritten, one per version.
	list, err := alpha.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, len(stores))
	alphaWatch, err := alpha.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer alphaWatch.Stop()
	betaWatch, err := beta.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer betaWatch.Stop()

	// Reads in both versions.
	for _, name := range []string{"kept", "json"} {
		a, err := alpha.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "2Gi", a.Spec.Storage.VolumeSize.String())
		assert.Equal(t, "redis:7.2", a.Status.CurrentImage)
		assert.Equal(t, []string{v1alpha1.TeardownFinalizer}, a.Finalizers)
		b, err := beta.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "2Gi", b.Spec.Storage.Capacity.String())
		assert.Equal(t, "redis:7.2", b.Annotations["kvstore.io/v1alpha1-status-current-image"])
		assert.Equal(t, "storage", b.Labels["team"])
		assert.Equal(t, v1beta1.PhaseReady, b.Status.Phase)
		assert.Equal(t, a.ResourceVersion, b.ResourceVersion)
	}
	ready, err := beta.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Ready,spec.image=redis:7.2"})
	require.NoError(t, err)
	assert.Len(t, ready.Items, len(stores), "field selectors over old objects, through v1beta1")
	backups, err := c.KvstoreV1beta1().KeyValueStoreBackups(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.storeName=kept"})
	require.NoError(t, err)
	require.Len(t, backups.Items, 1)
	assert.Equal(t, "kept-backup-nightly", backups.Items[0].Status.JobName)

	// A status write through v1alpha1, as the controller makes it.
	st, err := alpha.Get(ctx, "status", metav1.GetOptions{})
	require.NoError(t, err)
	st.Status.Phase = v1alpha1.PhaseDegraded
	st.Status.ReadyReplicas = 2
	st, err = alpha.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "redis:7.2", st.Status.CurrentImage)
	assert.Equal(t, "v1beta1/protobuf", storedVersion(t, ec, key("keyvaluestores", "status")), "a write stores the storage version")
	assert.Equal(t, "v1alpha1/protobuf", storedVersion(t, ec, key("keyvaluestores", "kept")), "no write, no rewrite")

	// A spec update and a scale through v1beta1.
	up, err := beta.Get(ctx, "updated", metav1.GetOptions{})
	require.NoError(t, err)
	up.Spec.Image = "redis:7.4"
	up, err = beta.Update(ctx, up, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 2, up.Generation)
	scale, err := beta.GetScale(ctx, "updated", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3, scale.Spec.Replicas)
	scale.Spec.Replicas = 5
	_, err = beta.UpdateScale(ctx, "updated", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	upAlpha, err := alpha.Get(ctx, "updated", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "redis:7.4", upAlpha.Spec.Image)
	assert.EqualValues(t, 5, *upAlpha.Spec.Replicas)
	assert.Equal(t, "redis:7.2", upAlpha.Status.CurrentImage, "status survives a v1beta1 spec write")

	// Delete through v1beta1: the finalizer holds the store until the
	// teardown (here: a v1alpha1 client, as the controller) releases it.
	require.NoError(t, beta.Delete(ctx, "deleted", metav1.DeleteOptions{}))
	del, err := alpha.Get(ctx, "deleted", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, del.DeletionTimestamp)
	_, err = alpha.Patch(ctx, "deleted", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/metadata/finalizers","value":["kvstore.io/teardown"]},{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = beta.Get(ctx, "deleted", metav1.GetOptions{})
	require.Error(t, err)

	// The migration, with small pages so it follows continue tokens, over
	// protobuf as migrate-storage speaks.
	protoConfig := rest.CopyConfig(srv.Config)
	protoConfig.ContentType = runtime.ContentTypeProtobuf
	protoConfig.AcceptContentTypes = runtime.ContentTypeProtobuf
	proto := versioned.NewForConfigOrDie(protoConfig)
	var out strings.Builder
	results, err := storagemigration.Run(ctx, proto, storagemigration.Options{PageSize: 2, Out: &out})
	require.NoError(t, err, out.String())
	t.Log(out.String())
	require.Len(t, results, 2)
	assert.Equal(t, 2, results[0].Rewritten, "kept and json: %+v", results[0])
	assert.Equal(t, 2, results[0].Unchanged, "status and updated were written already: %+v", results[0])
	assert.Equal(t, 1, results[1].Rewritten, "the backup: %+v", results[1])
	for _, name := range []string{"kept", "json", "status", "updated"} {
		assert.Equal(t, "v1beta1/protobuf", storedVersion(t, ec, key("keyvaluestores", name)), name)
	}
	assert.Equal(t, "v1beta1/protobuf", storedVersion(t, ec, key("keyvaluestorebackups", "nightly")))

	// Nothing was lost on the way.
	kept, err := alpha.Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	want := oldStore(namespace, "kept")
	assert.Equal(t, want.Spec.Image, kept.Spec.Image)
	assert.Equal(t, "2Gi", kept.Spec.Storage.VolumeSize.String())
	assert.Equal(t, want.Spec.Backup, kept.Spec.Backup)
	assert.Equal(t, want.Status.CurrentImage, kept.Status.CurrentImage)
	assert.Equal(t, want.Status.Phase, kept.Status.Phase)
	assert.Equal(t, want.Finalizers, kept.Finalizers)
	assert.EqualValues(t, 1, kept.Generation, "a rewrite is not a spec change")
	keptProto, err := proto.KvstoreV1alpha1().KeyValueStores(namespace).Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, latin1, keptProto.Annotations["note"], "the rewrite keeps bytes JSON cannot carry")

	// A second run writes nothing.
	rvBefore := kept.ResourceVersion
	results, err = storagemigration.Run(ctx, proto, storagemigration.Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, results[0].Rewritten+results[1].Rewritten, "%+v", results)
	assert.Equal(t, 4, results[0].Unchanged)
	kept, err = alpha.Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rvBefore, kept.ResourceVersion)

	// Both watches, opened on v1alpha1 storage, saw the rewrites in their
	// own version and are still open.
	for _, w := range []struct {
		name  string
		watch watch.Interface
		check func(t *testing.T, obj runtime.Object)
	}{
		{"v1alpha1", alphaWatch, func(t *testing.T, obj runtime.Object) {
			kvs := obj.(*v1alpha1.KeyValueStore)
			assert.Equal(t, "2Gi", kvs.Spec.Storage.VolumeSize.String())
			assert.Equal(t, "redis:7.2", kvs.Status.CurrentImage)
		}},
		{"v1beta1", betaWatch, func(t *testing.T, obj runtime.Object) {
			kvs := obj.(*v1beta1.KeyValueStore)
			assert.Equal(t, "2Gi", kvs.Spec.Storage.Capacity.String())
			assert.Equal(t, "redis:7.2", kvs.Annotations["kvstore.io/v1alpha1-status-current-image"])
		}},
	} {
		t.Run(w.name+" watch", func(t *testing.T) {
			rewritten := map[string]bool{}
			timeout := time.After(30 * time.Second)
			for len(rewritten) < 2 {
				select {
				case ev, ok := <-w.watch.ResultChan():
					require.True(t, ok, "the watch ended")
					require.NotEqual(t, watch.Error, ev.Type, "%v", ev.Object)
					meta, err := metaOf(ev.Object)
					require.NoError(t, err)
					if ev.Type == watch.Modified && (meta.GetName() == "kept" || meta.GetName() == "json") {
						w.check(t, ev.Object)
						rewritten[meta.GetName()] = true
					}
				case <-timeout:
					t.Fatalf("saw the rewrite of only %v", rewritten)
				}
			}
		})
	}
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// TestStorageVersionFlag: during a rolling upgrade a new server can keep
// writing v1alpha1, which the replicas of the old one can read, while it
// serves both versions; an unserved version is refused.
func TestStorageVersionFlag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged

	_, err := framework.StartAPIServer(ctx, etcd.URL, "/registry/kvstore.io-unused", "--storage-version=v2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--storage-version "v2" is not a served version of kvstore.io: v1beta1, v1alpha1`)

	prefix := fmt.Sprintf("/registry/kvstore.io-storage-version-%d", time.Now().UnixNano())
	srv, err := framework.StartAPIServer(ctx, etcd.URL, prefix, "--storage-version=v1alpha1")
	require.NoError(t, err)
	defer srv.Stop()
	c := versioned.NewForConfigOrDie(srv.Config)
	_, err = c.KvstoreV1beta1().KeyValueStores("default").Create(ctx, &v1beta1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "rolling"},
		Spec:       v1beta1.KeyValueStoreSpec{Image: "redis:7.2", Storage: v1beta1.StorageSpec{Capacity: resource.MustParse("2Gi")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	ec, err := etcd.Client()
	require.NoError(t, err)
	defer ec.Close()
	assert.Equal(t, "v1alpha1/protobuf", storedVersion(t, ec, prefix+"/keyvaluestores/default/rolling"))
	a, err := c.KvstoreV1alpha1().KeyValueStores("default").Get(ctx, "rolling", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2Gi", a.Spec.Storage.VolumeSize.String())
}

// A store whose size was stored before the quantity guard existed
// (1e2147483647) cannot have its whole object sent back: the guard refuses
// the size before decoding. Its status is still written by a JSON patch of
// /status, which carries no size, with the resourceVersion as precondition:
// the controller's fallback (updateStatus), without which such a store's
// status never changed and a teardown with spec.backup waited forever.
func TestStatusOfAStoreWithASizeFromBeforeTheGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("/registry/kvstore.io-absurd-%d", time.Now().UnixNano())
	ec, err := etcd.Client()
	require.NoError(t, err)
	defer ec.Close()
	old := oldStore("legacy", "absurd")
	old.Spec.Storage.VolumeSize = resource.MustParse("1e2147483647")
	putOld(t, ec, prefix+"/keyvaluestores/legacy/absurd", old, runtime.ContentTypeProtobuf)

	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	srv, err := framework.StartAPIServer(ctx, etcd.URL, prefix)
	require.NoError(t, err)
	defer srv.Stop()
	stores := versioned.NewForConfigOrDie(srv.Config).KvstoreV1alpha1().KeyValueStores("legacy")
	got, err := stores.Get(ctx, "absurd", metav1.GetOptions{})
	require.NoError(t, err)
	size := got.Spec.Storage.VolumeSize.String()

	got.Status.Phase = v1alpha1.PhaseTerminating
	_, err = stores.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "the whole object is refused for its size: %v", err)

	patch := func(rv string) error {
		body, err := json.Marshal([]map[string]any{
			{"op": "replace", "path": "/metadata/resourceVersion", "value": rv},
			{"op": "replace", "path": "/status", "value": got.Status},
		})
		require.NoError(t, err)
		_, err = stores.Patch(ctx, "absurd", types.JSONPatchType, body, metav1.PatchOptions{}, "status")
		return err
	}
	require.NoError(t, patch(got.ResourceVersion))
	now, err := stores.Get(ctx, "absurd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseTerminating, now.Status.Phase)
	assert.Equal(t, size, now.Spec.Storage.VolumeSize.String(), "the stored size is left as it was")
	assert.True(t, apierrors.IsConflict(patch(got.ResourceVersion)), "a stale resourceVersion is a conflict, as for an update")
}
