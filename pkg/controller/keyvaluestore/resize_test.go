package keyvaluestore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// boundClaim is the data claim of ordinal i as the StatefulSet makes it and
// a provisioner binds it: asking for and holding size.
func boundClaim(kvs *v1alpha1.KeyValueStore, i int32, size string) *corev1.PersistentVolumeClaim {
	c := claimWithUID(kvs, i, string(kvs.UID))
	q := resource.MustParse(size)
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: q}
	c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: q}}
	return c
}

// putClaim writes pvc to the fake server and the cache.
func (f *fixture) putClaim(pvc *corev1.PersistentVolumeClaim) {
	f.t.Helper()
	claims := f.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	if _, err := claims.Get(context.Background(), pvc.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = claims.Create(context.Background(), pvc, metav1.CreateOptions{})
		require.NoError(f.t, err)
	} else {
		_, err = claims.Update(context.Background(), pvc, metav1.UpdateOptions{})
		require.NoError(f.t, err)
	}
	f.cache(pvc)
}

// claim is the data claim of ordinal i on the fake server.
func (f *fixture) claim(kvs *v1alpha1.KeyValueStore, i int32) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	pvc, err := f.kube.CoreV1().PersistentVolumeClaims(kvs.Namespace).Get(context.Background(), dataClaimName(kvs, i), metav1.GetOptions{})
	require.NoError(f.t, err)
	return pvc
}

// resync runs one reconcile of the store on refreshed caches, the
// labelled claims' too.
func (f *fixture) resync(kvs *v1alpha1.KeyValueStore) (result, error) {
	f.t.Helper()
	f.refreshCache(kvs.Namespace)
	claims, err := f.kube.CoreV1().PersistentVolumeClaims(kvs.Namespace).List(f.t.Context(), metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range claims.Items {
		if claims.Items[i].Labels[LabelManagedBy] == ManagedBy {
			f.cache(&claims.Items[i])
		}
	}
	return f.sync(f.stored(kvs))
}

// storageResized is the store's stored StorageResized condition, or nil.
func (f *fixture) storageResized(kvs *v1alpha1.KeyValueStore) *metav1.Condition {
	return meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionStorageResized)
}

// grownStore is a settled store of three replicas on bound 1Gi claims whose
// spec then asks for size.
func grownStore(t *testing.T, size string) (*fixture, *v1alpha1.KeyValueStore) {
	t.Helper()
	kvs := newStore()
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	for i := range int32(3) {
		f.putClaim(boundClaim(kvs, i, "1Gi"))
	}
	f.markReady(kvs)
	_, err = f.resync(kvs)
	require.NoError(t, err)
	assert.Nil(t, f.storageResized(kvs), "no growth asked: no condition")
	f.events()
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Storage.VolumeSize = resource.MustParse(size) })
	return f, kvs
}

// A store's storage grows: the StatefulSet's immutable claim template
// keeps its size (an apply of another would be refused on every pass),
// each claim is asked for the new size, once, with its resourceVersion, and
// the store says how far the growth is until every claim holds it.
func TestClaimsGrowWithTheStore(t *testing.T) {
	f, kvs := grownStore(t, "2Gi")
	_, err := f.resync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Equal(t, []string{
		"patch persistentvolumeclaims data-s-0",
		"patch persistentvolumeclaims data-s-1",
		"patch persistentvolumeclaims data-s-2",
	}, kube, "no apply of the StatefulSet")
	for _, a := range f.kube.Actions() {
		if p, ok := a.(core.PatchAction); ok {
			var body map[string]any
			require.NoError(t, json.Unmarshal(p.GetPatch(), &body))
			assert.Equal(t, map[string]any{
				"metadata": map[string]any{"resourceVersion": "7"},
				"spec":     map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "2Gi"}}},
			}, body)
		}
	}
	tmpl := f.statefulSet(kvs).Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	assert.Zero(t, tmpl.Cmp(resource.MustParse("1Gi")), "the template keeps its size, not %s", tmpl.String())
	cond := f.storageResized(kvs)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, ReasonResizing, cond.Reason)
	assert.Equal(t, "claim data-s-0: asked for 2Gi; claim data-s-1: asked for 2Gi; claim data-s-2: asked for 2Gi", cond.Message)
	assert.Equal(t, int64(2), cond.ObservedGeneration)
	assert.Equal(t, v1alpha1.PhaseReady, f.stored(kvs).Status.Phase, "a growing store stays Ready")
	assert.Contains(t, strings.Join(f.events(), "\n"), "Normal ResizingClaim Asked claim data-s-0 for 2Gi (it asked for 1Gi)")

	// The resizer works on the claims: nothing is asked again.
	for i := range int32(3) {
		pvc := f.claim(kvs, i)
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress}
		f.putClaim(pvc)
	}
	_, err = f.resync(kvs)
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Empty(t, kube)
	assert.Contains(t, f.storageResized(kvs).Message, "claim data-s-0: holds 1Gi of 2Gi (ControllerResizeInProgress)")

	// Done: every claim holds the new size (or more, as a provider rounds).
	for i, held := range []string{"2Gi", "2Gi", "3Gi"} {
		pvc := f.claim(kvs, int32(i))
		pvc.Status.Capacity[corev1.ResourceStorage] = resource.MustParse(held)
		pvc.Status.AllocatedResourceStatuses = nil
		f.putClaim(pvc)
	}
	_, err = f.resync(kvs)
	require.NoError(t, err)
	cond = f.storageResized(kvs)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, ReasonResized, cond.Reason)
	assert.Equal(t, "every data claim holds 2Gi", cond.Message)
	assert.Equal(t, []string{"Normal Resized every data claim holds 2Gi"}, f.events())
	_, err = f.resync(kvs)
	require.NoError(t, err)
	kube, own := f.writes()
	assert.Empty(t, kube)
	assert.Empty(t, own, "settled again")
	assert.Empty(t, f.events())
}

// Only claims of the store's running replicas that can grow are asked: a
// claim that asks for more already (grown by hand) is never lowered, one
// not yet bound waits (kube-apiserver refuses to change its request), and
// one being deleted or of another store's lineage is not touched. A claim
// the StatefulSet makes after the growth (a scale-up, from the template's
// old size) is grown like the others.
func TestOnlyClaimsThatCanGrowAreAsked(t *testing.T) {
	f, kvs := grownStore(t, "2Gi")
	byHand := boundClaim(kvs, 0, "1Gi")
	byHand.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("5Gi")
	f.putClaim(byHand)
	pending := boundClaim(kvs, 1, "1Gi")
	pending.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	f.putClaim(pending)
	gone := boundClaim(kvs, 2, "1Gi")
	gone.DeletionTimestamp = &metav1.Time{Time: testNow}
	gone.Finalizers = []string{"kubernetes.io/pvc-protection"}
	f.putClaim(gone)
	_, err := f.resync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Empty(t, kube)
	assert.Equal(t, "claim data-s-0: holds 1Gi of 2Gi; claim data-s-1: Pending, grown once bound", f.storageResized(kvs).Message)

	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Replicas = ptr.To[int32](5) })
	f.putClaim(boundClaim(kvs, 3, "1Gi"))
	f.putClaim(claimWithUID(kvs, 4, "another-store"))
	_, err = f.resync(kvs)
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Contains(t, kube, "patch persistentvolumeclaims data-s-3", "a new replica's claim grows")
	assert.NotContains(t, kube, "patch persistentvolumeclaims data-s-4", "another store's data is never touched")
	assert.Equal(t, int32(4), f.statefulSetReplicas(kvs), "the scale-up stops before another store's claim")
}

// A claim the cluster cannot grow: a refusal (no allowVolumeExpansion, a
// quota) is told once and tried again now and then without the error
// backoff; a resizer's infeasible answer is told with its reason.
func TestAGrowthTheClusterRefusesIsTold(t *testing.T) {
	const why = `persistentvolumeclaims "data-s-0" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	f, kvs := grownStore(t, "2Gi")
	f.kube.PrependReactor("patch", "persistentvolumeclaims", func(a core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, a.(core.PatchAction).GetName(),
			errorString("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	})
	for pass := range 2 {
		res, err := f.resync(kvs)
		require.NoError(t, err, "a refusal is not an error to back off from")
		assert.Equal(t, waitFallback, res.requeueAfter)
		cond := f.storageResized(kvs)
		assert.Equal(t, ReasonResizeRefused, cond.Reason)
		assert.True(t, strings.HasPrefix(cond.Message, "claim data-s-0: "+why+"; claim data-s-1: "), cond.Message)
		events := f.events()
		if pass == 0 {
			require.Len(t, events, 1)
			assert.True(t, strings.HasPrefix(events[0], "Warning ResizeRefused claim data-s-0: "+why), events[0])
		} else {
			assert.Empty(t, events, "told once")
		}
	}

	f.kube.ReactionChain = f.kube.ReactionChain[1:]
	for i := range int32(3) {
		pvc := boundClaim(kvs, i, "1Gi")
		pvc.ResourceVersion = f.claim(kvs, i).ResourceVersion
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible}
		pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimControllerResizeError,
			Status: corev1.ConditionTrue, Message: "disk too large for zone"}}
		f.putClaim(pvc)
	}
	res, err := f.resync(kvs)
	require.NoError(t, err)
	assert.Zero(t, res.requeueAfter, "an infeasible growth waits for the claim or the spec to change")
	cond := f.storageResized(kvs)
	assert.Equal(t, ReasonResizeInfeasible, cond.Reason)
	assert.True(t, strings.HasPrefix(cond.Message,
		"claim data-s-0: holds 1Gi of 2Gi (ControllerResizeInfeasible); ControllerResizeError: disk too large for zone; claim data-s-1:"), cond.Message)
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A claim changed since the cache saw it (grown by hand, replaced) is not
// patched over: the conflict is retried with the informer's copy.
func TestAGrowthRetriesAClaimChangedSinceRead(t *testing.T) {
	f, kvs := grownStore(t, "2Gi")
	f.kube.PrependReactor("patch", "persistentvolumeclaims", func(a core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumeclaims"}, a.(core.PatchAction).GetName(), errorString("the object has been modified"))
	})
	_, err := f.resync(kvs)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
}

// A paused store's claims are not grown: nothing of the spec is applied,
// and the store reads Pending, naming the claims that wait (found by review:
// it read Ready, "all replicas run the current spec").
func TestAPausedStoreDoesNotGrow(t *testing.T) {
	f, kvs := grownStore(t, "2Gi")
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Paused = true })
	_, err := f.resync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Empty(t, kube)
	assert.Nil(t, f.storageResized(kvs))
	stored := f.stored(kvs)
	assert.Equal(t, v1alpha1.PhasePending, stored.Status.Phase)
	progressing := meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, progressing.Message, "claims data-s-0, data-s-1, data-s-2 are to grow to 2Gi")
}

// Lowering spec.storage shrinks nothing and lowers no claim's request: it
// is how a growth the storage cannot make is given up (with the claims'
// requests lowered by hand, as Kubernetes allows down to their capacity).
// Before, the size could never be lowered again, and a request lowered by
// hand was raised back (found by review).
func TestLoweringTheStorageLowersNoClaim(t *testing.T) {
	f, kvs := grownStore(t, "10Gi")
	_, err := f.resync(kvs)
	require.NoError(t, err)
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Storage.VolumeSize = resource.MustParse("2Gi") })
	byHand := f.claim(kvs, 0)
	byHand.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	f.putClaim(byHand)
	_, err = f.resync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Empty(t, kube, "no claim is lowered, nor raised back")
	cond := f.storageResized(kvs)
	assert.Equal(t, ReasonResizing, cond.Reason, "still below 2Gi")
	assert.Equal(t, "claim data-s-0: holds 1Gi of 2Gi; claim data-s-1: holds 1Gi of 2Gi; claim data-s-2: holds 1Gi of 2Gi", cond.Message)

	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Storage.VolumeSize = resource.MustParse("1Gi") })
	_, err = f.resync(kvs)
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Empty(t, kube)
	assert.Equal(t, ReasonResized, f.storageResized(kvs).Reason, "every claim holds what is asked for now")
}

// A StatefulSet recreated after a growth (deleted by hand with
// --cascade=orphan, pruned) has a claim template at the new size; claims
// that have not grown yet are still grown, and the growth still reported
// (found by review: they were left at the old size, without a condition).
func TestClaimsGrowAfterTheStatefulSetIsRecreated(t *testing.T) {
	f, kvs := grownStore(t, "2Gi")
	f.deleteStatefulSet(kvs)
	_, err := f.resync(kvs) // recreates it
	require.NoError(t, err)
	tmpl, _ := claimTemplateSize(f.statefulSet(kvs))
	require.Zero(t, tmpl.Cmp(resource.MustParse("2Gi")))
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Contains(t, kube, "patch persistentvolumeclaims data-s-0")
	assert.Equal(t, ReasonResizing, f.storageResized(kvs).Reason)
}

// A claim made by hand is not in the cache, so no event of it brings the
// store back: while it has not grown, the store looks again now and then
// (found by review: StorageResized stayed Resizing after the growth).
func TestAGrowingClaimMadeByHandIsPolled(t *testing.T) {
	f, kvs := storeOnAClaimMadeByHand(t)
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Storage.VolumeSize = resource.MustParse("2Gi") })
	res, err := f.resync(kvs)
	require.NoError(t, err)
	assert.Equal(t, waitFallback, res.requeueAfter)
	assert.Equal(t, "2Gi", ptr.To(f.claim(kvs, 0).Spec.Resources.Requests[corev1.ResourceStorage]).String(), "grown too")
}

// storeOnAClaimMadeByHand is a synced store of three on bound 1Gi claims,
// the first made by hand: none of our labels, so never in the cache.
func storeOnAClaimMadeByHand(t *testing.T) (*fixture, *v1alpha1.KeyValueStore) {
	t.Helper()
	kvs := newStore()
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	byHand := boundClaim(kvs, 0, "1Gi")
	byHand.Labels = nil
	_, err = f.kube.CoreV1().PersistentVolumeClaims("ns").Create(t.Context(), byHand, metav1.CreateOptions{})
	require.NoError(t, err)
	f.putClaim(boundClaim(kvs, 1, "1Gi"))
	f.putClaim(boundClaim(kvs, 2, "1Gi"))
	return f, kvs
}

// A claim that holds the new size already (bound to a larger volume) is
// not asked for it: where its class cannot expand, the request would be
// refused for ever though nothing is missing (found by review).
func TestAClaimThatHoldsEnoughIsNotAsked(t *testing.T) {
	f, kvs := grownStore(t, "5Gi")
	for i := range int32(3) {
		pvc := f.claim(kvs, i)
		pvc.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("10Gi")
		f.putClaim(pvc)
	}
	_, err := f.resync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Empty(t, kube)
	assert.Equal(t, ReasonResized, f.storageResized(kvs).Reason)
}

// A claim made by hand is grown also once the StatefulSet was recreated at
// the new size: it is read from the server while its replica runs (found
// by review: it was left small, and the store read Resized).
func TestAClaimMadeByHandGrowsAfterTheStatefulSetIsRecreated(t *testing.T) {
	f, kvs := storeOnAClaimMadeByHand(t)
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Storage.VolumeSize = resource.MustParse("2Gi") })
	f.deleteStatefulSet(kvs)
	_, err := f.resync(kvs) // recreates it at 2Gi
	require.NoError(t, err)
	f.markReady(kvs) // it adopts the running Pods
	_, err = f.resync(kvs)
	require.NoError(t, err)
	assert.Equal(t, "2Gi", ptr.To(f.claim(kvs, 0).Spec.Resources.Requests[corev1.ResourceStorage]).String())
	assert.Equal(t, ReasonResizing, f.storageResized(kvs).Reason)
}

// A replica that runs on a claim of another store's lineage (never
// touched) keeps the condition from saying every claim holds the size
// (found by review).
func TestAClaimOfAnotherStoreIsNotGrownAndSaysSo(t *testing.T) {
	f, kvs := grownStore(t, "2Gi")
	other := f.claim(kvs, 2)
	other.Labels[LabelStoreUID] = "another-store"
	f.putClaim(other)
	_, err := f.resync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, kube, "patch persistentvolumeclaims data-s-2")
	cond := f.storageResized(kvs)
	assert.Equal(t, ReasonClaimOfAnotherStore, cond.Reason)
	assert.Equal(t, "claim data-s-2: holds the data of another store (uid another-store), not grown", cond.Message)
}

// A claim's updates enqueue its store while it grows or should, and the
// update that completes a growth does too.
func TestClaimUpdatesThatMatterToAGrowth(t *testing.T) {
	kvs := newStore(func(k *v1alpha1.KeyValueStore) { k.Spec.Storage.VolumeSize = resource.MustParse("2Gi") })
	f := newFixture(t, kvs)
	small := boundClaim(kvs, 0, "1Gi")
	asked := small.DeepCopy()
	asked.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	held := asked.DeepCopy()
	held.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
	unbound := asked.DeepCopy()
	unbound.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	assert.True(t, f.c.claimGrowing(small), "asks for less than the store")
	assert.True(t, f.c.claimGrowing(asked), "holds less than it asks for")
	assert.False(t, f.c.claimGrowing(held), "grown")
	assert.False(t, f.c.claimGrowing(unbound), "not bound: binding brings the capacity")
	other := boundClaim(kvs, 0, "1Gi")
	other.Labels[LabelInstance] = "other"
	assert.False(t, f.c.claimGrowing(other), "no such store")
	f = newFixture(t, newStore())
	assert.False(t, f.c.claimGrowing(boundClaim(newStore(), 0, "1Gi")), "a store that was never grown")
}
