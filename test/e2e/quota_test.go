package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// A ResourceQuota's count/keyvaluestores.kvstore.io is enforced by our
// server (kube-apiserver does not admit requests it proxies).
func TestResourceQuotaLimitsStores(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	countQuota(t, kube, ns, "stores", "count/keyvaluestores.kvstore.io", 1)

	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, store("first", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, store("second", 1), metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "exceeded quota")
}

// countQuota sets a ResourceQuota of name on the count of resource in ns,
// and waits for kube-controller-manager to have computed its usage (until
// then every create is refused).
func countQuota(t *testing.T, kube kubernetes.Interface, ns, name, resourceName string, limit int) {
	t.Helper()
	ctx := context.Background()
	counted := corev1.ResourceName(resourceName)
	_, err := kube.CoreV1().ResourceQuotas(ns).Apply(ctx, corev1ac.ResourceQuota(name, ns).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(corev1.ResourceList{counted: *resource.NewQuantity(int64(limit), resource.DecimalSI)})),
		metav1.ApplyOptions{FieldManager: "e2e", Force: true})
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hard, ok := q.Status.Hard[counted]; !ok || hard.Value() != int64(limit) {
			return fmt.Errorf("quota limit not seen yet")
		}
		if _, ok := q.Status.Used[counted]; !ok {
			return fmt.Errorf("quota usage not computed yet")
		}
		return nil
	}))
}

// A scheduled backup refused by a quota on backups is told on its store,
// through the real ResourceQuota admission (kvstore-apiserver's) and
// kube-controller-manager's usage: ScheduledBackupSucceeded False with
// the refusal, and a Warning event; once the quota allows it, the slot's
// backup is created within the 30 s retry.
func TestAScheduledBackupRefusedByAQuotaIsTold(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	countQuota(t, kube, ns, "backups", "count/keyvaluestorebackups.kvstore.io", 0)
	obj := store("quoted", 1)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK, Schedule: "* * * * *"}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "quoted", "its scheduled backup refused", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "ScheduledBackupRefused" &&
			strings.Contains(c.Message, "exceeded quota: backups")
	})
	assert.Equal(t, int32(1), storeEvents(t, kube, ns, "quoted", "ScheduledBackupRefused"))

	countQuota(t, kube, ns, "backups", "count/keyvaluestorebackups.kvstore.io", 5)
	waitStore(t, kvs, ns, "quoted", "the refusal gone once a backup is created", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
		return c == nil || c.Reason != "ScheduledBackupRefused"
	})
	backups, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, backups.Items)
}
