package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// A store's data replicas and proxy Pods spread over zones as its
// spec.scheduling.topologySpreadConstraints say, through the real
// kube-scheduler: on nodes of two zones set aside for the test, a
// constraint asking for three zones (minDomains) runs one replica in each
// zone and leaves the third Pending rather than double up; a node in a
// third zone lets it run there. The StatefulSet is applied once, and a
// constraint kube-apiserver would refuse is a 422 naming its field.
func TestStoresSpreadOverZones(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	pool := fmt.Sprintf("spread-%06x", time.Now().UnixNano()&0xffffff)
	zoneNode(t, kube, pool, "a")
	zoneNode(t, kube, pool, "b")
	ns := namespace(t)

	obj := store("spread", 3)
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoyproxy/envoy:v1.31.0"}
	obj.Spec.Scheduling = &v1alpha1.Scheduling{
		NodeSelector: map[string]string{poolKey: pool},
		Tolerations:  []v1alpha1.Toleration{{Key: poolKey, Value: pool, Effect: v1alpha1.TaintEffectNoSchedule}},
		TopologySpreadConstraints: []v1alpha1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: v1alpha1.DoNotSchedule, MinDomains: ptr.To[int32](3)}},
	}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "spread-2", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName == "" && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable
		}) {
			return nil
		}
		return fmt.Errorf("the third replica is not held Pending: node %q, %v", p.Spec.NodeName, p.Status.Conditions)
	}))
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, zonesOf(t, kube, ns, "data"), "one replica in each zone there is")

	zoneNode(t, kube, pool, "c")
	waitStore(t, kvs, ns, "spread", "Ready with its proxy", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ProxyReadyReplicas == 2
	})
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, zonesOf(t, kube, ns, "data"))
	proxies := zonesOf(t, kube, ns, "proxy")
	assert.Len(t, proxies, 2, "the proxy's two Pods in two zones: %v", proxies)

	// Applied once: a constraint read back differently would re-apply the
	// StatefulSet on every pass.
	updated := storeEvents(t, kube, ns, "spread", "Updated")
	mustKubectl(t, "label", "kvs", "spread", "-n", ns, "resync=1")
	time.Sleep(3 * time.Second)
	assert.Equal(t, updated, storeEvents(t, kube, ns, "spread", "Updated"), "no apply after the store settled")

	r := kubectl(t, "patch", "keyvaluestores.v1beta1.kvstore.io", "spread", "-n", ns, "--type=json", "-p",
		`[{"op":"replace","path":"/spec/scheduling/topologySpreadConstraints/0/whenUnsatisfiable","value":"ScheduleAnyway"}]`)
	requireFails(t, r, `spec.scheduling.topologySpreadConstraints[0].minDomains: Invalid value: 3: may be set only with whenUnsatisfiable DoNotSchedule`)

	// Gone before its nodes are.
	mustKubectl(t, "delete", "kvs", "spread", "-n", ns, "--timeout=2m")
}

// zoneNode adds a kwok Node in zone of the pool, labelled and tainted
// poolKey=pool so that only the test's stores run there, for the test's
// time, and waits for it to be Ready.
func zoneNode(t *testing.T, kube kubernetes.Interface, pool, zone string) {
	t.Helper()
	ctx := context.Background()
	name := pool + "-" + zone
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
	_, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				"type": "kwok", poolKey: pool, corev1.LabelTopologyZone: zone}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: poolKey, Value: pool, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
	require.NoError(t, framework.WaitFor(ctx, time.Minute, func(ctx context.Context) error {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == corev1.TaintNodeNotReady
			}) {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready: %v", name, n.Status.Conditions)
	}))
}

// zonesOf counts a component's scheduled Pods of the store in ns per zone.
func zonesOf(t *testing.T, kube kubernetes.Interface, ns, component string) map[string]int {
	t.Helper()
	ctx := context.Background()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=" + component})
	require.NoError(t, err)
	zones := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		n, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err)
		zones[n.Labels[corev1.LabelTopologyZone]]++
	}
	return zones
}
