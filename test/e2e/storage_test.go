package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// A store's storage grows through kubectl: every data claim is asked for
// the new size, in place (the same claims, the same Pods), also the claim
// of a replica added after the growth, and the store reports the growth
// until every claim holds it. It never shrinks.
//
// The local stack's StorageClass (hostPath, allowVolumeExpansion) has no
// resizer: kube-controller-manager leaves the growth "to an external
// controller", which this test plays (as kwok plays the kubelet) by giving
// each volume and claim the capacity asked for, as a CSI resizer does.
func TestStorageGrows(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, store("grow", 3), metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "grow", "Ready", isReady)
	before := claimUIDs(t, kube, ns, "grow", 3)
	pods := podUIDs(t, kube, ns, "grow", 3)

	r := kubectl(t, "patch", "kvs", "grow", "-n", ns, "--type=merge", "-p", `{"spec":{"storage":{"capacity":"2Gi"}}}`)
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Contains(t, r.Stderr, "Warning: spec.storage: every data replica's claim is asked for 2Gi, and a claim does not shrink back")
	waitClaimsAsk(t, kube, ns, "grow", 3, "2Gi")
	waitStore(t, kvs, ns, "grow", "StorageResized False (Resizing)", storageResizedIs(metav1.ConditionFalse, "Resizing"))
	playResizer(t, kube, ns, "grow", 3)
	mustKubectl(t, "wait", "kvs/grow", "-n", ns, "--for=condition=StorageResized", "--timeout=60s")
	assert.Equal(t, before, claimUIDs(t, kube, ns, "grow", 3), "the same claims")
	assert.Equal(t, pods, podUIDs(t, kube, ns, "grow", 3), "grown under the running replicas")
	assert.Equal(t, "Ready", field(t, ns, "grow", "{.status.phase}"))

	// Lowered, nothing shrinks; raised again, nothing is asked.
	r = kubectl(t, "patch", "kvs", "grow", "-n", ns, "--type=merge", "-p", `{"spec":{"storage":{"capacity":"1Gi"}}}`)
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Contains(t, r.Stderr, "Warning: spec.storage: lowered to 1Gi, which shrinks no claim")
	waitStore(t, kvs, ns, "grow", "Resized at 1Gi", storageResizedIs(metav1.ConditionTrue, "Resized"))
	waitClaimsAsk(t, kube, ns, "grow", 3, "2Gi")
	mustKubectl(t, "patch", "kvs", "grow", "-n", ns, "--type=merge", "-p", `{"spec":{"storage":{"capacity":"2Gi"}}}`)
	waitStore(t, kvs, ns, "grow", "Resized at 2Gi", storageResizedIs(metav1.ConditionTrue, "Resized"))

	// A replica added later gets a claim from the StatefulSet's template,
	// which keeps the size the store was created with: it is grown too.
	mustKubectl(t, "scale", "kvs", "grow", "-n", ns, "--replicas=4")
	waitClaimsAsk(t, kube, ns, "grow", 4, "2Gi")
	playResizer(t, kube, ns, "grow", 4)
	waitStore(t, kvs, ns, "grow", "Ready with 4 replicas and every claim grown", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && storageResizedIs(metav1.ConditionTrue, "Resized")(k)
	})
}

// A StorageClass that does not allow expansion: kube-apiserver refuses to
// grow the claims, which keep their size, and the store says why; the size
// set back, it says the claims hold it.
func TestStorageGrowthRefusedByTheStorageClass(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns}, Provisioner: "kubernetes.io/host-path",
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	_, err := kube.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kube.StorageV1().StorageClasses().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	fixed := store("fixed", 1)
	fixed.Spec.Storage.StorageClassName = ptr.To(ns)
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, fixed, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "fixed", "Ready", isReady)

	mustKubectl(t, "patch", "kvs", "fixed", "-n", ns, "--type=merge", "-p", `{"spec":{"storage":{"capacity":"2Gi"}}}`)
	got := waitStore(t, kvs, ns, "fixed", "StorageResized False (ResizeRefused)", storageResizedIs(metav1.ConditionFalse, "ResizeRefused"))
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStorageResized).Message, "must support resize")
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-fixed-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1Gi", ptr.To(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).String())
	assert.Equal(t, "Ready", field(t, ns, "fixed", "{.status.phase}"), "the store runs on")
	assert.Contains(t, mustKubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=ResizeRefused", "-o", "name"), "event")

	mustKubectl(t, "patch", "kvs", "fixed", "-n", ns, "--type=merge", "-p", `{"spec":{"storage":{"capacity":"1Gi"}}}`)
	waitStore(t, kvs, ns, "fixed", "StorageResized True", storageResizedIs(metav1.ConditionTrue, "Resized"))
}

// storageResizedIs says the store's StorageResized condition has status
// and reason at its generation.
func storageResizedIs(status metav1.ConditionStatus, reason string) func(*v1alpha1.KeyValueStore) bool {
	return func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionStorageResized)
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == k.Generation
	}
}

// waitClaimsAsk waits until the first n data claims of store ask for size.
func waitClaimsAsk(t *testing.T, kube kubernetes.Interface, ns, store string, n int, size string) {
	t.Helper()
	want := resource.MustParse(size)
	require.NoError(t, framework.WaitFor(context.Background(), readyTimeout, func(ctx context.Context) error {
		for i := range n {
			pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, fmt.Sprintf("data-%s-%d", store, i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(want) != 0 {
				return fmt.Errorf("claim %s asks for %s", pvc.Name, got.String())
			}
		}
		return nil
	}))
}

// playResizer gives the volumes and claims of the first n data claims of
// store the capacity their claims ask for, as a CSI resizer does (volume
// first, then the claim's status).
func playResizer(t *testing.T, kube kubernetes.Interface, ns, store string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, fmt.Sprintf("data-%s-%d", store, i), metav1.GetOptions{})
		require.NoError(t, err)
		size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		patch := []byte(fmt.Sprintf(`{"spec":{"capacity":{"storage":%q}}}`, size.String()))
		_, err = kube.CoreV1().PersistentVolumes().Patch(ctx, pvc.Spec.VolumeName, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
		patch = []byte(fmt.Sprintf(`{"status":{"capacity":{"storage":%q}}}`, size.String()))
		_, err = kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		require.NoError(t, err)
	}
}

// claimUIDs are the UIDs of the first n data claims of store.
func claimUIDs(t *testing.T, kube kubernetes.Interface, ns, store string, n int) []types.UID {
	t.Helper()
	return uids(t, n, func(ctx context.Context, i int) (metav1.Object, error) {
		return kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, fmt.Sprintf("data-%s-%d", store, i), metav1.GetOptions{})
	})
}

// podUIDs are the UIDs of the first n data Pods of store.
func podUIDs(t *testing.T, kube kubernetes.Interface, ns, store string, n int) []types.UID {
	t.Helper()
	return uids(t, n, func(ctx context.Context, i int) (metav1.Object, error) {
		return kube.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("%s-%d", store, i), metav1.GetOptions{})
	})
}

// uids are the UIDs of the objects get returns for 0 to n-1.
func uids(t *testing.T, n int, get func(context.Context, int) (metav1.Object, error)) []types.UID {
	t.Helper()
	var out []types.UID
	for i := range n {
		obj, err := get(context.Background(), i)
		require.NoError(t, err)
		out = append(out, obj.GetUID())
	}
	return out
}
