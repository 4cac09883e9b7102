package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// A ResourceQuota's count/keyvaluestores.kvstore.io is enforced by our
// server (kube-apiserver does not admit requests it proxies).
func TestResourceQuotaLimitsStores(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	const counted = corev1.ResourceName("count/keyvaluestores.kvstore.io")
	_, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "stores"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{counted: resource.MustParse("1")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// kube-controller-manager computes the usage first.
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, "stores", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := q.Status.Used[counted]; !ok {
			return fmt.Errorf("quota usage not computed yet")
		}
		return nil
	}))

	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, store("first", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, store("second", 1), metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "exceeded quota")
}
