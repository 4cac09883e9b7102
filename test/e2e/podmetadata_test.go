package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Every Pod of a store carries its spec.podMetadata and pulls with its
// spec.imagePullSecrets: the data replicas, the proxy and the backup Job's
// Pod, admitted by the real kube-apiserver; the data replicas run with
// spec.args and spec.envFrom.
// It is applied once, and changing an annotation (with kubectl, in
// v1beta1) rolls the data replicas to it; a reserved label is refused with
// a 422 naming it.
func TestPodsCarryTheStoresMetadata(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("tagged", 2)
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK}
	obj.Spec.PodMetadata = &v1alpha1.PodMetadata{
		Labels:      map[string]string{"team": "payments"},
		Annotations: map[string]string{"sidecar.istio.io/inject": "false"},
	}
	obj.Spec.ImagePullSecrets = []v1alpha1.LocalSecretReference{{Name: "registry"}}
	obj.Spec.Args = []string{"--maxmemory", "1gb", "--requirepass", "$(PASSWORD)"}
	obj.Spec.EnvFrom = []v1alpha1.EnvFromSource{{SecretRef: &v1alpha1.EnvSourceReference{Name: "redis", Optional: ptr.To(true)}}}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "tagged", "Ready with its proxy", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ProxyReadyReplicas == 1
	})
	takeBackup(t, kvs, ns, "now", "tagged")

	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "team=payments"})
	require.NoError(t, err)
	components := map[string]int{}
	for _, p := range pods.Items {
		components[p.Labels["app.kubernetes.io/component"]]++
		assert.Equal(t, "false", p.Annotations["sidecar.istio.io/inject"], p.Name)
		assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry"}}, p.Spec.ImagePullSecrets, p.Name)
		c := p.Spec.Containers[0]
		if p.Labels["app.kubernetes.io/component"] != "data" {
			assert.Empty(t, c.Args, p.Name)
			continue
		}
		assert.Equal(t, []string{"--maxmemory", "1gb", "--requirepass", "$(PASSWORD)"}, c.Args, p.Name)
		assert.Equal(t, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Optional: ptr.To(true)}}}, c.EnvFrom, p.Name)
	}
	assert.Equal(t, map[string]int{"data": 2, "proxy": 1, "backup": 1}, components)

	// Applied once: metadata read back differently would re-apply the
	// workloads on every pass.
	updated := storeEvents(t, kube, ns, "tagged", "Updated")
	mustKubectl(t, "label", "kvs", "tagged", "-n", ns, "resync=1")
	time.Sleep(3 * time.Second)
	assert.Equal(t, updated, storeEvents(t, kube, ns, "tagged", "Updated"), "no apply after the store settled")

	mustKubectl(t, "patch", "keyvaluestores.v1beta1.kvstore.io", "tagged", "-n", ns, "--type=merge",
		"-p", `{"spec":{"podMetadata":{"annotations":{"sidecar.istio.io/inject":null,"example.com/owner":"payments"}}}}`)
	waitStore(t, kvs, ns, "tagged", "Ready on the new metadata", func(k *v1alpha1.KeyValueStore) bool {
		if !isReady(k) || k.Status.ObservedGeneration != k.Generation {
			return false
		}
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "team=payments,app.kubernetes.io/component=data"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if _, old := p.Annotations["sidecar.istio.io/inject"]; old || p.Annotations["example.com/owner"] != "payments" {
				return false
			}
		}
		return true
	})

	r := kubectl(t, "patch", "kvs", "tagged", "-n", ns, "--type=merge",
		"-p", `{"spec":{"podMetadata":{"labels":{"app.kubernetes.io/instance":"other"}}}}`)
	requireFails(t, r, `spec.podMetadata.labels[app.kubernetes.io/instance]: Forbidden`)
}
