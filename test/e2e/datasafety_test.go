package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// Deleting the StatefulSet of a live store (by hand, a GitOps prune) must
// never take the data with it, whatever the store's claim policy: the
// StatefulSet does not own claims, the controller recreates it, and the new
// one finds the same claims.
func TestDeletingTheStatefulSetKeepsClaims(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("keep", 2)
	obj.Spec.PersistentVolumeClaimRetentionPolicy = &v1alpha1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "keep", "Ready", isReady)

	claimUIDs := func() map[string]types.UID {
		claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=keep"})
		require.NoError(t, err)
		out := map[string]types.UID{}
		for _, c := range claims.Items {
			assert.Nil(t, c.DeletionTimestamp, "claim %s is being deleted", c.Name)
			for _, ref := range c.OwnerReferences {
				assert.NotEqual(t, "StatefulSet", ref.Kind, "claim %s is owned by its StatefulSet: deleting the StatefulSet would delete the data", c.Name)
			}
			out[c.Name] = c.UID
		}
		return out
	}
	before := claimUIDs()
	require.Len(t, before, 2)
	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "keep", metav1.GetOptions{})
	require.NoError(t, err)

	require.NoError(t, kube.AppsV1().StatefulSets(ns).Delete(ctx, "keep", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "keep", metav1.GetOptions{})
		if err != nil || s.UID == sts.UID {
			return fmt.Errorf("StatefulSet not recreated yet (err=%v)", err)
		}
		return nil
	}))
	waitStore(t, kvs, ns, "keep", "Ready again", isReady)
	// Give the garbage collector time to act on anything it would delete.
	time.Sleep(5 * time.Second)
	assert.Equal(t, before, claimUIDs(), "the same claims, none deleted or replaced")

	// The story is told in events: created objects and phase transitions (a
	// new store's first phase is not one).
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=keep,involvedObject.kind=KeyValueStore"})
	require.NoError(t, err)
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason)
	}
	assert.Subset(t, reasons, []string{"Created", "Ready"}, "events: %v", reasons)
}

// Orphaning a store's workloads would leave its data tier running with no
// teardown and no owner: the server refuses it, and the store is untouched.
func TestOrphanDeletionRefused(t *testing.T) {
	ns := demo(t)
	r := kubectl(t, "delete", "kvs", "demo", "-n", ns, "--cascade=orphan", "--wait=false")
	requireFails(t, r, "orphan")
	assert.Empty(t, field(t, ns, "demo", "{.metadata.deletionTimestamp}"), "the refused delete left no trace")
}

// The longest name the API accepts deletes cleanly through a final backup:
// every derived name (the backup Job's included) fits its limit.
func TestLongestNameTearsDown(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	name := "l" + strings.Repeat("o", 50) + "g" // 52, the maximum
	obj := store(name, 1)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: "kvstore.io/e2e-backup:ok", Command: []string{"/backup"}}
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, name, "Ready", func(k *v1alpha1.KeyValueStore) bool { return isReady(k) && k.Status.ProxyReadyReplicas == 1 })
	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	waitGone(t, kvs, ns, name)
	// The Job itself goes with the store (the garbage collector); its
	// events stay.
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FinalBackupSucceeded"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items, "the final backup ran")
	job := regexp.MustCompile(`Job (\S+) succeeded`).FindStringSubmatch(events.Items[0].Message)
	require.Len(t, job, 2, events.Items[0].Message)
	assert.LessOrEqual(t, len(job[1]), 63, job[1])
}

// controllerCounters reads the leader's reconcile and write counters.
func controllerCounters(t *testing.T) (reconciles, writes float64) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: adminTLS(t)}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", mainReplica.port))
	require.NoError(t, err)
	defer resp.Body.Close()
	metrics, err := framework.ParseMetrics(resp.Body)
	require.NoError(t, err)
	leader, err := metrics.Value("kvstore_controller_leader")
	require.NoError(t, err)
	require.Equal(t, 1.0, leader, "the stack's replica leads")
	reconciles = metrics.Sum("kvstore_controller_reconcile_total", "")[""]
	applied := metrics.Sum("kvstore_controller_apply_total", "outcome")
	writes = applied["created"] + applied["updated"]
	return reconciles, writes
}

// failedBackupEvents sums the FinalBackupFailed events of a store
// (the recorder folds repeats of one message into a count).
func failedBackupEvents(t *testing.T, ns string) int32 {
	t.Helper()
	kube, _ := clients(t)
	events, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=FinalBackupFailed,type=" + corev1.EventTypeWarning})
	require.NoError(t, err)
	var n int32
	for _, e := range events.Items {
		n += max(e.Count, 1)
	}
	return n
}

// backupFailedCondition is the store's BackupSucceeded condition once False/FinalBackupFailed.
func backupFailedCondition(k *v1alpha1.KeyValueStore) *metav1.Condition {
	c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBackupSucceeded)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "FinalBackupFailed" {
		return nil
	}
	return c
}
