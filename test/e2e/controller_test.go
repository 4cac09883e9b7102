package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// Controller tests use Go clients through kube-apiserver (the aggregator path).

const readyTimeout = 2 * time.Minute

func clients(t *testing.T) (kubernetes.Interface, versioned.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", stack.Kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)
}

func store(name string, replicas int32) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.KeyValueStoreSpec{Image: "redis:7.2", Replicas: ptr.To(replicas)},
	}
}

// waitStore polls the store until cond accepts it.
func waitStore(t *testing.T, kvs versioned.Interface, ns, name string, what string, cond func(*v1alpha1.KeyValueStore) bool) *v1alpha1.KeyValueStore {
	t.Helper()
	var last *v1alpha1.KeyValueStore
	err := framework.WaitFor(context.Background(), readyTimeout, func(ctx context.Context) error {
		got, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = got
		if !cond(got) {
			return fmt.Errorf("%s/%s not %s yet: phase=%q ready=%d/%d", ns, name, what, got.Status.Phase, got.Status.ReadyReplicas, ptr.Deref(got.Spec.Replicas, 0))
		}
		return nil
	})
	require.NoError(t, err, "last seen: %+v", last)
	return last
}

func isReady(k *v1alpha1.KeyValueStore) bool {
	return k.Status.Phase == v1alpha1.PhaseReady && k.Status.ObservedGeneration == k.Generation &&
		k.Status.ReadyReplicas == ptr.Deref(k.Spec.Replicas, 0)
}

func waitGone(t *testing.T, kvs versioned.Interface, ns, name string) {
	t.Helper()
	require.NoError(t, framework.WaitFor(context.Background(), readyTimeout, func(ctx context.Context) error {
		_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s/%s still exists (err=%v)", ns, name, err)
	}))
}

func TestControllerCreateToReadyProxyAfterData(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("ready", 3)
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoyproxy/envoy:v1.31.0"}
	// The controller's cache drops foreign annotations and managedFields;
	// none of its writes may drop them from the stored object.
	obj.Labels = map[string]string{"team": "payments"}
	obj.Annotations = map[string]string{"example.com/owner": "payments-oncall"}
	created, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)

	// The proxy Deployment must never exist before the data tier is ready.
	// Reading the Deployment first and the StatefulSet second makes the check
	// sound: kwok Pods stay ready once ready.
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		_, derr := kube.AppsV1().Deployments(ns).Get(ctx, "ready-proxy", metav1.GetOptions{})
		sts, serr := kube.AppsV1().StatefulSets(ns).Get(ctx, "ready", metav1.GetOptions{})
		if derr == nil {
			require.NoError(t, serr, "proxy Deployment exists without a StatefulSet")
			require.Equal(t, int32(3), sts.Status.ReadyReplicas, "proxy Deployment created before the StatefulSet was ready")
			return nil
		}
		return fmt.Errorf("no proxy Deployment yet")
	}))

	got := waitStore(t, kvs, ns, "ready", "Ready", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ProxyReadyReplicas == 2
	})
	assert.Equal(t, int32(3), got.Status.Replicas)
	assert.Equal(t, "redis:7.2", got.Status.CurrentImage)
	assert.Equal(t, "app.kubernetes.io/component=data,app.kubernetes.io/instance=ready,app.kubernetes.io/name=keyvaluestore", got.Status.Selector)
	assert.Equal(t, "payments", got.Labels["team"])
	assert.Equal(t, "payments-oncall", got.Annotations["example.com/owner"])
	assert.Contains(t, got.Finalizers, v1alpha1.TeardownFinalizer)
	managers := map[string]bool{}
	for _, m := range got.ManagedFields {
		managers[m.Manager] = true
	}
	for _, m := range created.ManagedFields {
		assert.True(t, managers[m.Manager], "managedFields entry of %q lost; have %v", m.Manager, managers)
	}
	for _, c := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
		cond := meta.FindStatusCondition(got.Status.Conditions, c)
		require.NotNil(t, cond, c)
		assert.Equal(t, got.Generation, cond.ObservedGeneration, c)
	}
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionAvailable))

	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "ready", metav1.GetOptions{})
	require.NoError(t, err)
	owned := []metav1.Object{sts}
	for _, svc := range []string{"ready", "ready-headless"} {
		s, err := kube.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
		require.NoError(t, err, svc)
		owned = append(owned, s)
	}
	pdb, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "ready", metav1.GetOptions{})
	require.NoError(t, err)
	proxy, err := kube.AppsV1().Deployments(ns).Get(ctx, "ready-proxy", metav1.GetOptions{})
	require.NoError(t, err)
	for _, o := range append(owned, pdb, proxy) {
		assertControlledAsTheGarbageCollectorSeesIt(t, kube, o, "KeyValueStore", got.UID)
	}
}

// assertControlledAsTheGarbageCollectorSeesIt checks obj's controller
// reference names its owner in the group's preferred version: the garbage
// collector observes owners in that version, and verifies a dependent whose
// reference names another version by reading the owner back through the
// aggregator (one GET per dependent and event).
func assertControlledAsTheGarbageCollectorSeesIt(t *testing.T, kube kubernetes.Interface, obj metav1.Object, kind string, uid types.UID) {
	t.Helper()
	owner := metav1.GetControllerOf(obj)
	require.NotNil(t, owner, obj.GetName())
	assert.Equal(t, kind, owner.Kind, obj.GetName())
	assert.Equal(t, uid, owner.UID, obj.GetName())
	groups, err := kube.Discovery().ServerGroups()
	require.NoError(t, err)
	for _, g := range groups.Groups {
		if g.Name == v1alpha1.GroupName {
			assert.Equal(t, g.PreferredVersion.GroupVersion, owner.APIVersion, "%s's controller reference", obj.GetName())
			return
		}
	}
	t.Fatalf("group %s not discovered", v1alpha1.GroupName)
}

// phases records every phase a store's watch shows, in order.
func phases(t *testing.T, kvs versioned.Interface, ns, name string) (stop func() []v1alpha1.KeyValueStorePhase) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []v1alpha1.KeyValueStorePhase
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if k, ok := ev.Object.(*v1alpha1.KeyValueStore); ok {
				mu.Lock()
				if len(seen) == 0 || seen[len(seen)-1] != k.Status.Phase {
					seen = append(seen, k.Status.Phase)
				}
				mu.Unlock()
			}
		}
	}()
	return func() []v1alpha1.KeyValueStorePhase {
		cancel()
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func TestControllerScaleAndUpgrade(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	client := kvs.KvstoreV1alpha1().KeyValueStores(ns)
	_, err := client.Create(ctx, store("roll", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "roll", "Ready", isReady)

	patch := func(p string) {
		_, err := client.Patch(ctx, "roll", types.MergePatchType, []byte(p), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	patch(`{"spec":{"replicas":3}}`)
	waitStore(t, kvs, ns, "roll", "scaled up", func(k *v1alpha1.KeyValueStore) bool { return isReady(k) && k.Status.ReadyReplicas == 3 })

	stopWatch := phases(t, kvs, ns, "roll")
	patch(`{"spec":{"image":"redis:7.4"}}`)
	got := waitStore(t, kvs, ns, "roll", "upgraded", func(k *v1alpha1.KeyValueStore) bool { return isReady(k) && k.Status.CurrentImage == "redis:7.4" })
	seen := stopWatch()
	assert.Contains(t, seen, v1alpha1.PhaseUpgrading, "phases seen during the image change: %v", seen)
	assert.Equal(t, v1alpha1.PhaseReady, seen[len(seen)-1], "phases: %v", seen)
	assert.Equal(t, int32(3), got.Status.UpdatedReplicas)

	patch(`{"spec":{"replicas":1}}`)
	waitStore(t, kvs, ns, "roll", "scaled down", func(k *v1alpha1.KeyValueStore) bool { return isReady(k) && k.Status.Replicas == 1 })
	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "roll", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *sts.Spec.Replicas)
	assert.Equal(t, "redis:7.4", sts.Spec.Template.Spec.Containers[0].Image)
}

// createReady creates obj in ns and waits until it is Ready.
func createReady(t *testing.T, kvs versioned.Interface, ns string, obj *v1alpha1.KeyValueStore) {
	t.Helper()
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, obj.Name, "Ready", isReady)
}

func TestControllerRepairsDrift(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	createReady(t, kvs, ns, store("drift", 3))

	// A hand-edited replica count is put back.
	_, err := kube.AppsV1().StatefulSets(ns).Patch(ctx, "drift", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "someone"})
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "drift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *sts.Spec.Replicas != 3 {
			return fmt.Errorf("replicas still %d", *sts.Spec.Replicas)
		}
		return nil
	}))

	// A hand-edited Service selector is put back: a Service has no
	// metadata.generation, so its spec changes are seen otherwise.
	_, err = kube.CoreV1().Services(ns).Patch(ctx, "drift", types.MergePatchType, []byte(`{"spec":{"selector":{"app.kubernetes.io/component":"elsewhere"}}}`), metav1.PatchOptions{FieldManager: "someone"})
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "drift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := svc.Spec.Selector["app.kubernetes.io/component"]; got != "data" {
			return fmt.Errorf("Service selects component %q", got)
		}
		return nil
	}))
	// A removed label is put back (metadata: no new generation).
	_, err = kube.AppsV1().StatefulSets(ns).Patch(ctx, "drift", types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/component":null}}}`), metav1.PatchOptions{FieldManager: "someone"})
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "drift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := sts.Labels["app.kubernetes.io/component"]; got != "data" {
			return fmt.Errorf("StatefulSet labelled component %q", got)
		}
		return nil
	}))

	// A deleted StatefulSet and Service are recreated.
	old, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "drift", metav1.GetOptions{})
	require.NoError(t, err)
	oldSvc, err := kube.CoreV1().Services(ns).Get(ctx, "drift", metav1.GetOptions{})
	require.NoError(t, err)
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, kube.AppsV1().StatefulSets(ns).Delete(ctx, "drift", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	require.NoError(t, kube.CoreV1().Services(ns).Delete(ctx, "drift", metav1.DeleteOptions{}))
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "drift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sts.UID == old.UID {
			return fmt.Errorf("not recreated yet")
		}
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "drift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if svc.UID == oldSvc.UID {
			return fmt.Errorf("service not recreated yet")
		}
		return nil
	}))
	waitStore(t, kvs, ns, "drift", "Ready again", isReady)
}

func TestControllerLeavesPausedStoreAlone(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	client := kvs.KvstoreV1alpha1().KeyValueStores(ns)
	_, err := client.Create(ctx, store("paused", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "paused", "Ready", isReady)

	updated, err := client.Patch(ctx, "paused", types.MergePatchType, []byte(`{"spec":{"paused":true,"replicas":3,"image":"redis:7.4"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	// Once the controller has observed the new generation it has decided;
	// the StatefulSet must still be as before.
	waitStore(t, kvs, ns, "paused", "observed", func(k *v1alpha1.KeyValueStore) bool { return k.Status.ObservedGeneration == updated.Generation })
	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "paused", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *sts.Spec.Replicas)
	assert.Equal(t, "redis:7.2", sts.Spec.Template.Spec.Containers[0].Image)
	// What runs is ready, but it is not the spec: the store says so (it
	// read Ready, "all replicas run the current spec").
	got, err := client.Get(ctx, "paused", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhasePending, got.Status.Phase)
	if p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing); assert.NotNil(t, p) {
		assert.Equal(t, "Paused", p.Reason)
		assert.Contains(t, p.Message, "StatefulSet paused does not run the store's spec")
	}
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionAvailable), "its one replica is ready")

	// Unpausing applies the spec.
	_, err = client.Patch(ctx, "paused", types.MergePatchType, []byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "paused", "Ready at the new spec", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.ReadyReplicas == 3 && k.Status.CurrentImage == "redis:7.4"
	})
}

// A bad image, reverted, finishes rolling out by itself. kwok's
// pod-image-pull-backoff stage plays a kubelet that cannot pull the image:
// the real StatefulSet controller replaces the highest Pod with one that
// never starts, and after the revert it does not replace that Pod again
// (kubernetes#67250); the store's controller does.
func TestARevertedBadImageRollsOutByItself(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	client := kvs.KvstoreV1alpha1().KeyValueStores(ns)
	_, err := client.Create(ctx, store("revert", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "revert", "Ready", isReady)

	_, err = client.Patch(ctx, "revert", types.MergePatchType, []byte(`{"spec":{"image":"kvstore.io/e2e-image:cannot-pull"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	var stuck *corev1.Pod
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "revert-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			p.Status.ContainerStatuses[0].State.Waiting.Reason != "ImagePullBackOff" {
			return fmt.Errorf("revert-1 does not wait for its image yet")
		}
		stuck = p
		return nil
	}), "the StatefulSet replaces the highest Pod with one that cannot start")
	// While the bad image is the spec the Pod is left: a new one would run
	// the same image.
	time.Sleep(3 * time.Second)
	p, err := kube.CoreV1().Pods(ns).Get(ctx, "revert-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, stuck.UID, p.UID)

	_, err = client.Patch(ctx, "revert", types.MergePatchType, []byte(`{"spec":{"image":"redis:7.2"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "revert", "Ready on the reverted image", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.CurrentImage == "redis:7.2"
	})
	p, err = kube.CoreV1().Pods(ns).Get(ctx, "revert-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, stuck.UID, p.UID, "replaced")
	assert.Equal(t, "redis:7.2", p.Spec.Containers[0].Image)
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=revert,reason=ReplacedStuckPod"})
	require.NoError(t, err)
	assert.Len(t, events.Items, 1)
	_, err = kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-revert-1", metav1.GetOptions{})
	assert.NoError(t, err, "its claim is kept")
}

func TestControllerNoUpdateHotLoop(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("calm", 3)
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	ready := waitStore(t, kvs, ns, "calm", "Ready", func(k *v1alpha1.KeyValueStore) bool { return isReady(k) && k.Status.ProxyReadyReplicas == 1 })

	versions := func() map[string]string {
		sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "calm", metav1.GetOptions{})
		require.NoError(t, err)
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "calm-proxy", metav1.GetOptions{})
		require.NoError(t, err)
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "calm", metav1.GetOptions{})
		require.NoError(t, err)
		k, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Get(ctx, "calm", metav1.GetOptions{})
		require.NoError(t, err)
		return map[string]string{"statefulset": sts.ResourceVersion, "deployment": d.ResourceVersion, "service": svc.ResourceVersion, "keyvaluestore": k.ResourceVersion}
	}
	// The counters are the controller's, over every store: let the earlier
	// tests' namespaces finish their teardowns first.
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range list.Items {
			if n.Status.Phase == corev1.NamespaceTerminating {
				return fmt.Errorf("namespace %s still terminating", n.Name)
			}
		}
		return nil
	}))
	// ... and their last events (a store's deletion, its Pods' and claims'
	// going) to be reconciled: the counter must stand still for 10 s.
	var reconciles, writes float64
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		r0, _ := controllerCounters(t)
		time.Sleep(10 * time.Second)
		var r1 float64
		r1, writes = controllerCounters(t)
		if reconciles = r1; r1 != r0 {
			return fmt.Errorf("%v reconciles in 10 s: not quiet yet", r1-r0)
		}
		return nil
	}))
	before := versions()
	assert.Equal(t, ready.ResourceVersion, before["keyvaluestore"])
	// Stability over 30 s of a Ready store: a write loop would change a
	// resourceVersion many times in that window, and a reconcile loop that
	// writes nothing would still show in the counters.
	time.Sleep(30 * time.Second)
	assert.Equal(t, before, versions(), "a Ready store's objects must not be rewritten")
	reconcilesAfter, writesAfter := controllerCounters(t)
	assert.Zero(t, writesAfter-writes, "no apply sent while every store is settled")
	// A settled store is reconciled only when something changes. The counter
	// is global: delayed requeues that earlier tests' stores scheduled
	// (backoffs, schedule slots, the 30 s look-again) still fire after those
	// stores are gone, a few in a window (3 seen). A loop shows far more: the
	// rate limiter's error backoff alone retries about 13 times in 30 s.
	assert.LessOrEqual(t, reconcilesAfter-reconciles, 5.0, "reconciles in 30 s of quiet")
	t.Logf("in 30 s: %v reconciles, %v applies", reconcilesAfter-reconciles, writesAfter-writes)
}

func TestControllerTeardownRunsInOrder(t *testing.T) {
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) { testTeardownRunsInOrder(t, policy) })
	}
}

// testTeardownRunsInOrder: every propagation policy the server accepts runs
// the same ordered teardown (foreground must not let the garbage collector
// delete the data tier before the final backup).
func testTeardownRunsInOrder(t *testing.T, policy metav1.DeletionPropagation) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("order", 2)
	obj.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoyproxy/envoy:v1.31.0"}
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: "kvstore.io/e2e-backup:ok", Command: []string{"/backup"}}
	obj.Spec.PersistentVolumeClaimRetentionPolicy = &v1alpha1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "order", "Ready", func(k *v1alpha1.KeyValueStore) bool { return isReady(k) && k.Status.ProxyReadyReplicas == 2 })

	// kube-apiserver's resourceVersions come from one etcd revision counter,
	// so they order events across Pods and Jobs.
	rec := recordTeardown(t, kube, ns)
	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, "order", metav1.DeleteOptions{PropagationPolicy: &policy}))
	waitGone(t, kvs, ns, "order")
	ev := rec()

	require.NotZero(t, ev.clientServiceGone, "client Service never deleted")
	require.NotZero(t, ev.lastProxyPodGone, "proxy Pods never went away")
	require.NotZero(t, ev.jobCreated, "backup Job never created")
	require.NotZero(t, ev.jobSucceeded, "backup Job never succeeded")
	require.NotZero(t, ev.firstDataPodDeleting, "data Pods never deleted")
	assert.Less(t, ev.clientServiceGone, ev.lastProxyPodGone, "new clients cut off before the proxy goes")
	assert.Less(t, ev.lastProxyPodGone, ev.jobCreated, "proxy gone before the backup Job starts")
	assert.Less(t, ev.jobSucceeded, ev.firstDataPodDeleting, "backup done before the data tier scales down")

	claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=order"})
	require.NoError(t, err)
	for _, c := range claims.Items {
		assert.NotNil(t, c.DeletionTimestamp, "claim %s kept despite whenDeleted: Delete", c.Name)
	}
}

type teardownEvents struct {
	clientServiceGone, lastProxyPodGone, jobCreated, jobSucceeded, firstDataPodDeleting int64
}

func recordTeardown(t *testing.T, kube kubernetes.Interface, ns string) func() teardownEvents {
	ctx, cancel := context.WithCancel(context.Background())
	pods, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	jobs, err := kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	services, err := kube.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var ev teardownEvents
	var mu sync.Mutex
	var wg sync.WaitGroup
	rv := func(o metav1.Object) int64 { n, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64); return n }
	consume := func(w watch.Interface, f func(watch.Event)) {
		defer wg.Done()
		for e := range w.ResultChan() {
			mu.Lock()
			f(e)
			mu.Unlock()
		}
	}
	wg.Add(3)
	go consume(services, func(e watch.Event) {
		if s, ok := e.Object.(*corev1.Service); ok && e.Type == watch.Deleted && s.Spec.ClusterIP != corev1.ClusterIPNone {
			ev.clientServiceGone = rv(s)
		}
	})
	go consume(pods, func(e watch.Event) {
		p, ok := e.Object.(*corev1.Pod)
		if !ok {
			return
		}
		switch p.Labels["app.kubernetes.io/component"] {
		case "proxy":
			if e.Type == watch.Deleted && rv(p) > ev.lastProxyPodGone {
				ev.lastProxyPodGone = rv(p)
			}
		case "data":
			if p.DeletionTimestamp != nil && ev.firstDataPodDeleting == 0 {
				ev.firstDataPodDeleting = rv(p)
			}
		}
	})
	go consume(jobs, func(e watch.Event) {
		j, ok := e.Object.(*batchv1.Job)
		if !ok {
			return
		}
		if e.Type == watch.Added && ev.jobCreated == 0 {
			ev.jobCreated = rv(j)
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue && ev.jobSucceeded == 0 {
				ev.jobSucceeded = rv(j)
			}
		}
	})
	return func() teardownEvents {
		cancel()
		pods.Stop()
		jobs.Stop()
		services.Stop()
		wg.Wait()
		return ev
	}
}

func TestControllerFailingBackupHoldsDeletionUntilSkipped(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	client := kvs.KvstoreV1alpha1().KeyValueStores(ns)
	obj := store("nobackup", 1)
	// The local stack's kwok stages fail Job Pods of exactly this image.
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: "kvstore.io/e2e-backup:fail", ActiveDeadlineSeconds: ptr.To[int64](60)}
	_, err := client.Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "nobackup", "Ready", isReady)

	require.NoError(t, client.Delete(ctx, "nobackup", metav1.DeleteOptions{}))
	held := waitStore(t, kvs, ns, "nobackup", "holding after a failed backup", func(k *v1alpha1.KeyValueStore) bool {
		return backupFailedCondition(k) != nil
	})
	assert.Contains(t, backupFailedCondition(held).Message, "attempt 1 failed")
	// Backoff, not a loop: attempts start 10 s, 20 s, 40 s … after a failure,
	// so 30 s hold at most three failures (and their Warning events).
	time.Sleep(30 * time.Second)
	assert.LessOrEqual(t, failedBackupEvents(t, ns), int32(3), "failed-backup events in 30 s")
	jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=backup"})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(jobs.Items), 3, "backup attempts in 30 s")
	assert.Equal(t, v1alpha1.PhaseTerminating, held.Status.Phase)
	assert.Contains(t, held.Finalizers, v1alpha1.TeardownFinalizer)
	// The data tier is untouched while the backup has not succeeded.
	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "nobackup", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *sts.Spec.Replicas)
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FinalBackupFailed,type=Warning"})
		if err != nil {
			return err
		}
		if len(events.Items) == 0 {
			return fmt.Errorf("no Warning event yet")
		}
		return nil
	}))

	_, err = client.Patch(ctx, "nobackup", types.MergePatchType, []byte(`{"metadata":{"annotations":{"kvstore.io/skip-final-backup":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitGone(t, kvs, ns, "nobackup")
}

// Deleting a namespace releases its stores without the ordered waits: the
// namespace controller deletes Pods and claims itself, no backup Pod could
// start, and the StatefulSet controller may not be able to scale down there.
// A store with a (failing) backup would otherwise hold the namespace.
func TestControllerReleasesStoresOfATerminatingNamespace(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("doomed", 2)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: "kvstore.io/e2e-backup:fail", ActiveDeadlineSeconds: ptr.To[int64](60)}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "doomed", "Ready", isReady)

	// Watched from before the delete: once the namespace is gone, its Jobs
	// are too, whatever was attempted (a list then found nothing, always).
	jobs, err := kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer jobs.Stop()
	var mu sync.Mutex
	var jobsAdded []string
	go func() {
		for e := range jobs.ResultChan() {
			if j, ok := e.Object.(*batchv1.Job); ok && e.Type == watch.Added {
				mu.Lock()
				jobsAdded = append(jobsAdded, j.Name)
				mu.Unlock()
			}
		}
	}()
	require.NoError(t, kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		left, _ := kvs.KvstoreV1alpha1().KeyValueStores(ns).List(ctx, metav1.ListOptions{})
		return fmt.Errorf("namespace %s still exists (%d stores left, err=%v)", ns, len(left.Items), err)
	}))
	// No backup Job was attempted: none could have run.
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, jobsAdded)
}
