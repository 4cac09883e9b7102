package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// poolKey labels and taints the node a test sets aside for its stores.
const poolKey = "kvstore.io/e2e-pool"

// A store's Pods run where spec.scheduling says, through the real
// kube-scheduler and kube-apiserver's Priority admission: on a node set
// aside for them (labelled and tainted), with the store's priority. A store
// without the toleration is not scheduled there until it is given it, and
// one naming a missing PriorityClass says why its Pods are refused.
func TestStoresRunWhereTheyAreScheduled(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	node := setAsideNode(t, kube, ns)
	_, err := kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns}, Value: 1000000}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = kube.SchedulingV1().PriorityClasses().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})

	placed := store("placed", 3)
	placed.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	placed.Spec.Scheduling = &v1alpha1.Scheduling{
		NodeSelector:      map[string]string{poolKey: ns},
		Tolerations:       []v1alpha1.Toleration{{Key: poolKey, Value: ns, Effect: v1alpha1.TaintEffectNoSchedule}},
		PriorityClassName: ns,
	}
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, placed, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "placed", "Ready with its proxy", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ProxyReadyReplicas == 1
	})
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=placed"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 4, "three data replicas and a proxy")
	for _, p := range pods.Items {
		assert.Equal(t, node, p.Spec.NodeName, p.Name)
		assert.Equal(t, int32(1000000), ptr.Deref(p.Spec.Priority, 0), p.Name)
	}
	// Applied once: a toleration read back differently would re-apply the
	// StatefulSet on every pass.
	updated := storeEvents(t, kube, ns, "placed", "Updated")
	mustKubectl(t, "label", "kvs", "placed", "-n", ns, "resync=1")
	time.Sleep(3 * time.Second)
	assert.Equal(t, updated, storeEvents(t, kube, ns, "placed", "Updated"), "no apply after the store settled")

	untolerated := store("untolerated", 1)
	untolerated.Spec.Scheduling = &v1alpha1.Scheduling{NodeSelector: map[string]string{poolKey: ns}}
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, untolerated, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "untolerated-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return nil
			}
		}
		return fmt.Errorf("pod untolerated-0 not reported unschedulable: %v", p.Status.Conditions)
	}))
	// Given the toleration, it runs: the Pod it was created with, on the
	// StatefulSet's first revision, is replaced (the StatefulSet itself
	// waits for it for ever).
	mustKubectl(t, "patch", "kvs", "untolerated", "-n", ns, "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"scheduling":{"tolerations":[{"key":%q,"value":%q,"effect":"NoSchedule"}]}}}`, poolKey, ns))
	waitStore(t, kvs, ns, "untolerated", "Ready once it tolerates the taint", isReady)

	unknown := store("unknown", 1)
	unknown.Spec.Scheduling = &v1alpha1.Scheduling{PriorityClassName: "missing-" + ns}
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, unknown, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "unknown", "ReplicaFailure naming the PriorityClass", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure)
		return c != nil && strings.Contains(c.Message, "no PriorityClass with name missing-"+ns)
	})
}

// setAsideNode labels and taints one kwok node with poolKey=value, for the
// test's time, and returns its name.
func setAsideNode(t *testing.T, kube kubernetes.Interface, value string) string {
	t.Helper()
	ctx := context.Background()
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	name := nodes.Items[0].Name
	taint := corev1.Taint{Key: poolKey, Value: value, Effect: corev1.TaintEffectNoSchedule}
	update := func(change func(*corev1.Node)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(n)
			_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
	}
	require.NoError(t, update(func(n *corev1.Node) {
		n.Labels[poolKey] = value
		n.Spec.Taints = append(n.Spec.Taints, taint)
	}))
	t.Cleanup(func() {
		assert.NoError(t, update(func(n *corev1.Node) {
			delete(n.Labels, poolKey)
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == poolKey })
		}))
	})
	return name
}

// storeEvents counts the events of reason on the store ns/name (each
// event's count: a repeated one is one object).
func storeEvents(t *testing.T, kube kubernetes.Interface, ns, name, reason string) int32 {
	t.Helper()
	events, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=KeyValueStore,involvedObject.name=" + name + ",reason=" + reason})
	require.NoError(t, err)
	var n int32
	for _, e := range events.Items {
		n += max(e.Count, 1)
	}
	return n
}
