package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// In a namespace that enforces the Pod Security Standard "restricted"
// (kube-apiserver's PodSecurity admission, on by default), every Pod of a
// store with spec.securityContext is admitted: data replicas, proxy, the
// bootstrap Job, a backup Job and the final backup's at deletion. A store
// without one gets no Pod, which shows the namespace does enforce.
func TestStoresRunInARestrictedNamespace(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	mustKubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	stores := kvs.KvstoreV1alpha1().KeyValueStores(ns)

	strict := store("strict", 2)
	strict.Spec.SecurityContext = &v1alpha1.SecurityContext{RunAsUser: 999, RunAsGroup: ptr.To[int64](999)}
	strict.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	strict.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageOK}
	strict.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK}
	_, err := stores.Create(ctx, strict, metav1.CreateOptions{})
	require.NoError(t, err)
	plain := store("plain", 1)
	_, err = stores.Create(ctx, plain, metav1.CreateOptions{})
	require.NoError(t, err)

	waitStore(t, kvs, ns, "strict", "Ready with its proxy", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ProxyReadyReplicas == 1
	})
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("now", "strict"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitBackup(t, kvs, ns, "now", v1alpha1.BackupPhaseCompleted)

	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=plain,reason=FailedCreate"})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if strings.Contains(e.Message, "violates PodSecurity") {
				return nil
			}
		}
		return fmt.Errorf("no FailedCreate event for PodSecurity on StatefulSet plain yet")
	}))

	// The teardown's final backup runs under the same rules.
	require.NoError(t, stores.Delete(ctx, "strict", metav1.DeleteOptions{}))
	waitGone(t, kvs, ns, "strict")
	list, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(ctx, metav1.ListOptions{})
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
