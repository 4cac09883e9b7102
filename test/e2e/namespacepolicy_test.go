package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// Namespaces whose policies every Pod must meet: a store whose spec meets
// them runs every Pod it has (data replicas, proxy, the bootstrap Job, a
// backup Job and the teardown's final backup); one that does not gets no
// Pod, which shows the namespace does enforce.

// In a namespace that enforces the Pod Security Standard "restricted"
// (kube-apiserver's PodSecurity admission, on by default), with
// spec.securityContext.
func TestStoresRunInARestrictedNamespace(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	strict := storeOfEveryPod("strict")
	strict.Spec.SecurityContext = &v1alpha1.SecurityContext{RunAsUser: 999, RunAsGroup: ptr.To[int64](999)}
	requireRefusedAndRun(t, ns, strict, "violates PodSecurity", func() {
		// Taken away, the rollout it starts is refused and the store says
		// why; given back, the store gets Ready and stops saying it.
		ctx := context.Background()
		_, kvs := clients(t)
		setSecurityContext := func(sc string) {
			_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Patch(ctx, "strict", types.MergePatchType,
				[]byte(`{"spec":{"securityContext":`+sc+`}}`), metav1.PatchOptions{})
			require.NoError(t, err)
		}
		setSecurityContext("null")
		waitStore(t, kvs, ns, "strict", "ReplicaFailure naming Pod Security", func(k *v1alpha1.KeyValueStore) bool {
			c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure)
			return c != nil && strings.Contains(c.Message, "violates PodSecurity")
		})
		setSecurityContext(`{"runAsUser":999,"runAsGroup":999}`)
		waitStore(t, kvs, ns, "strict", "Ready again, without ReplicaFailure", func(k *v1alpha1.KeyValueStore) bool {
			return isReady(k) && k.Status.ProxyReadyReplicas == 1 && meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure) == nil
		})
	})
}

// In a namespace whose ResourceQuota limits cpu and memory (every Pod must
// then give them), with resources for each container. Requests equal to
// the limits put the data replicas in the Guaranteed QoS class.
func TestStoresRunUnderAComputeQuota(t *testing.T) {
	ctx := context.Background()
	kube, _ := clients(t)
	ns := computeQuotaNamespace(t)
	small := &v1alpha1.Resources{
		Requests: map[string]resource.Quantity{"cpu": resource.MustParse("100m")},
		Limits:   map[string]resource.Quantity{"memory": resource.MustParse("128Mi")},
	}
	sized := storeOfEveryPod("sized")
	sized.Spec.Resources = guaranteed
	sized.Spec.Proxy.Resources, sized.Spec.Backup.Resources, sized.Spec.Bootstrap.Resources = small, small, small
	requireRefusedAndRun(t, ns, sized, "must specify", func() {
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, "sized-0", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodQOSGuaranteed, pod.Status.QOSClass)
	})
}

// A backup whose Job's Pod the namespace refuses says why, on the backup
// and on its store, instead of "runs" until its deadline fails it.
func TestABackupRefusedByTheNamespaceSaysWhy(t *testing.T) {
	ctx := context.Background()
	_, kvs := clients(t)
	ns := computeQuotaNamespace(t)
	obj := store("sized", 1)
	obj.Spec.Resources = guaranteed
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK} // no resources: refused
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "sized", "Ready", isReady)
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("now", "sized"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitBackupRunning(t, kvs, ns, "now", "cannot create its Pod", "must specify")
	waitStore(t, kvs, ns, "sized", "ReplicaFailure naming the backup Job", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure)
		return c != nil && strings.HasPrefix(c.Message, "Job now-1: ") && strings.Contains(c.Message, "must specify")
	})
	assert.Contains(t, mustKubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=now,reason=FailedCreate", "-o", "name"), "event")
}

// guaranteed gives a container requests equal to its limits.
var guaranteed = &v1alpha1.Resources{
	Requests: map[string]resource.Quantity{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("512Mi")},
	Limits:   map[string]resource.Quantity{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("512Mi")},
}

// computeQuotaNamespace is a namespace of t's own whose ResourceQuota
// limits cpu and memory: every Pod must give them.
func computeQuotaNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	kube, _ := clients(t)
	ns := namespace(t)
	_, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("10"), corev1.ResourceLimitsMemory: resource.MustParse("10Gi"),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Quota admission refuses every Pod until kube-controller-manager has
	// computed the quota's status.
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(q.Status.Hard) == 0 {
			return fmt.Errorf("quota status not computed yet")
		}
		return nil
	}))
	return ns
}

// storeOfEveryPod is a store with a proxy, a bootstrap and backups.
func storeOfEveryPod(name string) *v1alpha1.KeyValueStore {
	obj := store(name, 3)
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageOK}
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK}
	return obj
}

// requireRefusedAndRun creates a plain store, whose StatefulSet's Pods the
// namespace refuses with refusal (its ReplicaFailure condition says so), and obj, whose Pods all run: it gets
// Ready with its proxy (whileReady then checks it), takes a backup, and
// is deleted with its final backup Completed.
func requireRefusedAndRun(t *testing.T, ns string, obj *v1alpha1.KeyValueStore, refusal string, whileReady func()) {
	t.Helper()
	ctx := context.Background()
	_, kvs := clients(t)
	stores := kvs.KvstoreV1alpha1().KeyValueStores(ns)
	_, err := stores.Create(ctx, store("plain", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = stores.Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)

	waitStore(t, kvs, ns, obj.Name, "Ready with its proxy", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ProxyReadyReplicas == 1
	})
	whileReady()
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("now", obj.Name), metav1.CreateOptions{})
	require.NoError(t, err)
	waitBackup(t, kvs, ns, "now", v1alpha1.BackupPhaseCompleted)
	// The refused store says why.
	waitStore(t, kvs, ns, "plain", "ReplicaFailure naming the refusal", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, refusal)
	})

	require.NoError(t, stores.Delete(ctx, obj.Name, metav1.DeleteOptions{}))
	waitGone(t, kvs, ns, obj.Name)
	requireFinalBackupCompleted(t, kvs, ns)
}

func requireFinalBackupCompleted(t *testing.T, kvs versioned.Interface, ns string) {
	t.Helper()
	list, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	final := 0
	for _, b := range list.Items {
		if b.Spec.Reason == v1alpha1.BackupReasonFinal {
			require.Equal(t, v1alpha1.BackupPhaseCompleted, b.Status.Phase, b.Status.Message)
			final++
		}
	}
	require.Equal(t, 1, final, "one final backup")
}
