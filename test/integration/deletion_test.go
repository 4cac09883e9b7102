package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	kvsclient "github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/typed/kvstore/v1alpha1"
)

// warnings collects the Warning headers of every response a client gets.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// warningClient is a KeyValueStores client of namespace whose responses'
// warnings land in the returned collector.
func warningClient(t *testing.T, namespace string) (kvsclient.KeyValueStoreInterface, *warnings) {
	t.Helper()
	w := &warnings{}
	c := rest.CopyConfig(config)
	c.WarningHandlerWithContext = w
	cs, err := versioned.NewForConfig(c)
	require.NoError(t, err)
	return cs.KvstoreV1alpha1().KeyValueStores(namespace), w
}

const foregroundWarning = "foreground deletion of a KeyValueStore runs its ordered teardown"

func requireTerminatingWithTeardownOnly(t *testing.T, kvsClient kvsclient.KeyValueStoreInterface, name string) *v1alpha1.KeyValueStore {
	t.Helper()
	got, err := kvsClient.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err, "the teardown finalizer must keep the object")
	assert.NotNil(t, got.DeletionTimestamp, "%s must be terminating", name)
	assert.Equal(t, []string{v1alpha1.TeardownFinalizer}, got.Finalizers,
		"only the teardown finalizer: foregroundDeletion would let the garbage collector race the teardown")
	return got
}

func requireUntouched(t *testing.T, kvsClient kvsclient.KeyValueStoreInterface, before *v1alpha1.KeyValueStore) {
	t.Helper()
	got, err := kvsClient.Get(context.Background(), before.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, got.DeletionTimestamp)
	assert.Equal(t, before.Finalizers, got.Finalizers)
	assert.Equal(t, before.ResourceVersion, got.ResourceVersion, "a refused delete must not write")
}

// TestForegroundDeleteRunsTheTeardown: a foreground delete is served as a
// background one, so the garbage collector never deletes the workloads while
// the teardown still needs them, and the client is told so.
func TestForegroundDeleteRunsTheTeardown(t *testing.T) {
	ctx := context.Background()
	kvsClient, warned := warningClient(t, ns(t))
	_, err := kvsClient.Create(ctx, newKVS("fg"), metav1.CreateOptions{})
	require.NoError(t, err)

	err = kvsClient.Delete(ctx, "fg", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	require.NoError(t, err)
	first := requireTerminatingWithTeardownOnly(t, kvsClient, "fg")
	require.Len(t, warned.get(), 1, "warnings: %q", warned.get())
	assert.Contains(t, warned.get()[0], foregroundWarning)

	// Deleting a terminating store again changes nothing, whatever the policy.
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationForeground, metav1.DeletePropagationBackground} {
		require.NoError(t, kvsClient.Delete(ctx, "fg", metav1.DeleteOptions{PropagationPolicy: ptr.To(policy)}))
		again := requireTerminatingWithTeardownOnly(t, kvsClient, "fg")
		assert.Equal(t, first.ResourceVersion, again.ResourceVersion, "a repeated %s delete must not write", policy)
		assert.Equal(t, first.DeletionTimestamp, again.DeletionTimestamp)
	}
	require.NoError(t, kvsClient.Delete(ctx, "fg", metav1.DeleteOptions{}))
	requireTerminatingWithTeardownOnly(t, kvsClient, "fg")

	removeFinalizer(t, ns(t), "fg")
	_, err = kvsClient.Get(ctx, "fg", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}

// TestForegroundAfterBackgroundDelete: a foreground delete of a store that is
// already terminating must not add foregroundDeletion either.
func TestForegroundAfterBackgroundDelete(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	_, err := kvsClient.Create(ctx, newKVS("bg-then-fg"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, kvsClient.Delete(ctx, "bg-then-fg", metav1.DeleteOptions{}))
	before := requireTerminatingWithTeardownOnly(t, kvsClient, "bg-then-fg")

	require.NoError(t, kvsClient.Delete(ctx, "bg-then-fg", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
	after := requireTerminatingWithTeardownOnly(t, kvsClient, "bg-then-fg")
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion)
}

func TestOrphanDeleteIsRefused(t *testing.T) {
	ctx := context.Background()
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(ns(t))
	created, err := kvsClient.Create(ctx, newKVS("orphan"), metav1.CreateOptions{})
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		opts  metav1.DeleteOptions
		field string
	}{
		"propagationPolicy Orphan": {metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}, "propagationPolicy"},
		//nolint:staticcheck // SA1019: old clients still send orphanDependents.
		"orphanDependents true": {metav1.DeleteOptions{OrphanDependents: ptr.To(true)}, "orphanDependents"},
	} {
		t.Run(name, func(t *testing.T) {
			err := kvsClient.Delete(ctx, "orphan", tc.opts)
			require.True(t, apierrors.IsBadRequest(err), "want 400 BadRequest, got %v", err)
			assert.Contains(t, err.Error(), tc.field)
			assert.Contains(t, err.Error(), "teardown")
			assert.Contains(t, err.Error(), "persistentVolumeClaimRetentionPolicy")
			requireUntouched(t, kvsClient, created)

			err = kvsClient.DeleteCollection(ctx, tc.opts, metav1.ListOptions{})
			require.True(t, apierrors.IsBadRequest(err), "deletecollection: want 400 BadRequest, got %v", err)
			requireUntouched(t, kvsClient, created)
		})
	}

	// orphanDependents=false is a plain background delete.
	//nolint:staticcheck // SA1019: old clients still send orphanDependents.
	require.NoError(t, kvsClient.Delete(ctx, "orphan", metav1.DeleteOptions{OrphanDependents: ptr.To(false)}))
	requireTerminatingWithTeardownOnly(t, kvsClient, "orphan")

	// Refused on a terminating store too: the answer does not depend on state.
	err = kvsClient.Delete(ctx, "orphan", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
	assert.True(t, apierrors.IsBadRequest(err), "want 400 BadRequest, got %v", err)
	requireTerminatingWithTeardownOnly(t, kvsClient, "orphan")
}

func TestForegroundDeleteCollection(t *testing.T) {
	ctx := context.Background()
	kvsClient, warned := warningClient(t, ns(t))
	for _, name := range []string{"coll-a", "coll-b"} {
		_, err := kvsClient.Create(ctx, newKVS(name), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	err := kvsClient.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}, metav1.ListOptions{})
	require.NoError(t, err)
	for _, name := range []string{"coll-a", "coll-b"} {
		requireTerminatingWithTeardownOnly(t, kvsClient, name)
	}
	require.Len(t, warned.get(), 1, "one warning per request, not per item: %q", warned.get())
	assert.Contains(t, warned.get()[0], foregroundWarning)
}

// TestGarbageCollectorFinalizersAreRefused: a client cannot ask for orphaning
// or foreground deletion through metadata.finalizers either.
func TestGarbageCollectorFinalizersAreRefused(t *testing.T) {
	ctx := context.Background()
	namespace := ns(t)
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(namespace)
	for _, f := range []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents} {
		obj := newKVS("create-" + f)
		obj.Finalizers = []string{f}
		_, err := kvsClient.Create(ctx, obj, metav1.CreateOptions{})
		requireInvalid(t, err, "metadata.finalizers")
	}

	created, err := kvsClient.Create(ctx, newKVS("gcfin"), metav1.CreateOptions{})
	require.NoError(t, err)

	withOrphan := created.DeepCopy()
	withOrphan.Finalizers = append(withOrphan.Finalizers, metav1.FinalizerOrphanDependents)
	_, err = kvsClient.Update(ctx, withOrphan, metav1.UpdateOptions{})
	requireInvalid(t, err, "metadata.finalizers")

	patch := `{"metadata":{"finalizers":["kvstore.io/teardown","foregroundDeletion"]}}`
	_, err = kvsClient.Patch(ctx, "gcfin", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	requireInvalid(t, err, "metadata.finalizers")
	requireUntouched(t, kvsClient, created)
}

// TestDeleteRemovesStoredGarbageCollectorFinalizers: a store that carries a
// garbage-collector finalizer from before they were refused can still be
// updated, and its deletion takes the finalizer away instead of orphaning or
// deleting in the foreground.
func TestDeleteRemovesStoredGarbageCollectorFinalizers(t *testing.T) {
	ctx := context.Background()
	namespace := ns(t)
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(namespace)
	for _, f := range []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents} {
		t.Run(f, func(t *testing.T) {
			name := "legacy-" + strings.ToLower(f)
			_, err := kvsClient.Create(ctx, newKVS(name), metav1.CreateOptions{})
			require.NoError(t, err)
			addFinalizerInEtcd(t, namespace, name, f)

			legacy, err := kvsClient.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, []string{v1alpha1.TeardownFinalizer, f}, legacy.Finalizers)
			legacy.Labels = map[string]string{"updated": "true"}
			_, err = kvsClient.Update(ctx, legacy, metav1.UpdateOptions{})
			require.NoError(t, err, "keeping a stored finalizer is not adding one")

			require.NoError(t, kvsClient.Delete(ctx, name, metav1.DeleteOptions{}))
			requireTerminatingWithTeardownOnly(t, kvsClient, name)
		})
	}
}

// addFinalizerInEtcd writes finalizer into the stored object behind the
// server's back, as an object written by an older server would have it.
func addFinalizerInEtcd(t *testing.T, namespace, name, finalizer string) {
	t.Helper()
	ctx := context.Background()
	ec, err := etcd.Client()
	require.NoError(t, err)
	defer ec.Close()
	key := fmt.Sprintf("%s/keyvaluestores/%s/%s", etcdPrefix, namespace, name)
	resp, err := ec.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "no object at %s", key)
	// Read in whatever version it is stored in, written back as v1alpha1.
	internal, _, err := apiserver.Codecs.UniversalDecoder().Decode(resp.Kvs[0].Value, nil, nil)
	require.NoError(t, err)
	obj, err := apiserver.Scheme.ConvertToVersion(internal, v1alpha1.SchemeGroupVersion)
	require.NoError(t, err)
	kvs := obj.(*v1alpha1.KeyValueStore)
	kvs.Finalizers = append(kvs.Finalizers, finalizer)

	info, ok := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	var buf bytes.Buffer
	require.NoError(t, apiserver.Codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion).Encode(kvs, &buf))
	_, err = ec.Put(ctx, key, buf.String())
	require.NoError(t, err)
}
