package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestKubectlScale drives keyvaluestores/scale with the real kubectl through
// kube-apiserver, the path (aggregated discovery, the polymorphic scale
// client) a HorizontalPodAutoscaler takes too.
func TestKubectlScale(t *testing.T) {
	ns := demo(t) // 1 replica
	scaleField := func(jsonpath string) string {
		t.Helper()
		return mustKubectl(t, "get", "kvs", "demo", "-n", ns, "--subresource=scale", "-o", "jsonpath="+jsonpath)
	}

	out := mustKubectl(t, "scale", "kvs", "demo", "--replicas=3", "-n", ns)
	assert.Contains(t, out, "keyvaluestore.kvstore.io/demo scaled")
	assert.Equal(t, "3", field(t, ns, "demo", "{.spec.replicas}"))
	assert.Equal(t, "2", field(t, ns, "demo", "{.metadata.generation}"), "a scale is a spec change")
	assert.Equal(t, "redis:7.2", field(t, ns, "demo", "{.spec.image}"), "only spec.replicas changes")
	assert.Equal(t, []string{"kvstore.io/teardown"}, finalizers(t, ns, "demo"))

	assert.Equal(t, "autoscaling/v1 Scale demo 3", scaleField("{.apiVersion} {.kind} {.metadata.name} {.spec.replicas}"))

	// The controller reports the data replicas and their selector; /scale
	// shows the store's status.replicas and status.selector.
	var scaleStatus string
	err := framework.WaitFor(context.Background(), readyTimeout, func(context.Context) error {
		scaleStatus = scaleField("{.status.replicas} {.status.selector}")
		storeStatus := field(t, ns, "demo", "{.status.replicas} {.status.selector}")
		if scaleStatus != storeStatus || !strings.HasPrefix(scaleStatus, "3 ") || len(strings.Fields(scaleStatus)) != 2 {
			return fmt.Errorf("scale status %q, store status %q; want 3 replicas and a selector in both", scaleStatus, storeStatus)
		}
		return nil
	})
	require.NoError(t, err)
	// The selector is what an autoscaler lists the data replica Pods with.
	selector := strings.Fields(scaleStatus)[1]
	pods := strings.Fields(mustKubectl(t, "get", "pods", "-n", ns, "-l", selector, "-o", "name"))
	assert.Len(t, pods, 3, "pods selected by %q: %v", selector, pods)

	header, rows := table(t, mustKubectl(t, "get", "kvs", "demo", "-n", ns, "--subresource=scale"))
	assert.Equal(t, []string{"NAME", "DESIRED", "AVAILABLE", "AGE"}, header)
	require.Len(t, rows, 1)
	assert.Equal(t, "demo", rows[0]["NAME"])
	assert.Equal(t, "3", rows[0]["DESIRED"])
	assert.Equal(t, "3", rows[0]["AVAILABLE"])

	// --current-replicas is a precondition checked against the Scale.
	requireFails(t, kubectl(t, "scale", "kvs", "demo", "--current-replicas=1", "--replicas=5", "-n", ns),
		"Expected replicas to be 1, was 3")
	// The store's validation applies to a scale.
	for _, replicas := range []string{"0", "10"} {
		requireFails(t, kubectl(t, "scale", "kvs", "demo", "--replicas="+replicas, "-n", ns),
			"is invalid", "spec.replicas")
	}
	assert.Equal(t, "3", field(t, ns, "demo", "{.spec.replicas}"), "a refused scale changes nothing")

	out = mustKubectl(t, "scale", "kvs", "demo", "--current-replicas=3", "--replicas=1", "-n", ns)
	assert.Contains(t, out, "keyvaluestore.kvstore.io/demo scaled")
	assert.Equal(t, "1", scaleField("{.spec.replicas}"))

	requireFails(t, kubectl(t, "scale", "kvs", "missing", "--replicas=3", "-n", ns), "NotFound")
}

// TestBuiltinRolesGrantScale: the edit role may scale a store, the view role
// may only read its scale (artifacts/base/rbac-aggregated.yaml).
func TestBuiltinRolesGrantScale(t *testing.T) {
	ns := demo(t)
	const viewer, editor = "e2e-scale-viewer", "e2e-scale-editor"
	mustKubectl(t, "create", "rolebinding", viewer, "-n", ns, "--clusterrole=view", "--user="+viewer)
	mustKubectl(t, "create", "rolebinding", editor, "-n", ns, "--clusterrole=edit", "--user="+editor)

	waitCanI(t, ns, []canI{
		{viewer, "get", "yes"}, {viewer, "update", "no"}, {viewer, "patch", "no"},
		{editor, "get", "yes"}, {editor, "update", "yes"}, {editor, "patch", "yes"},
	}, "--subresource=scale")

	asViewer := framework.KubectlOptions{As: viewer}
	asEditor := framework.KubectlOptions{As: editor}
	r := kubectlWith(t, asViewer, "get", "kvs", "demo", "-n", ns, "--subresource=scale", "-o", "jsonpath={.spec.replicas}")
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Equal(t, "1", r.Stdout)
	requireFails(t, kubectlWith(t, asViewer, "scale", "kvs", "demo", "--replicas=3", "-n", ns),
		"Forbidden", `cannot patch resource "keyvaluestores/scale"`)

	r = kubectlWith(t, asEditor, "scale", "kvs", "demo", "--replicas=3", "-n", ns)
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Equal(t, "3", field(t, ns, "demo", "{.spec.replicas}"))
}

// TestScaleUpStopsBeforeAnotherStoresClaim: a claim kept (whenDeleted:
// Retain) from an earlier store of the same name with more replicas is not
// given to a new replica of a later store by a scale-up; once the user
// deletes it, the scale-up goes on. Real StatefulSet controller, real
// claims and their labels.
func TestScaleUpStopsBeforeAnotherStoresClaim(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	createReady(t, kvs, ns, store("grow", 2))
	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, "grow", metav1.DeleteOptions{}))
	waitGone(t, kvs, ns, "grow")
	// The first store's first claim goes; its second, with its data, stays.
	deleteClaim := func(name string) {
		t.Helper()
		require.NoError(t, kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}))
		require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
			_, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("claim %s still there (err=%v)", name, err)
		}))
	}
	deleteClaim("data-grow-0")

	createReady(t, kvs, ns, store("grow", 1))
	mustKubectl(t, "scale", "kvs", "grow", "--replicas=2", "-n", ns)
	k := waitStore(t, kvs, ns, "grow", "held before the kept claim", func(k *v1alpha1.KeyValueStore) bool {
		p := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionProgressing)
		return k.Status.ObservedGeneration == k.Generation && p != nil && p.Reason == "ObjectInTheWay"
	})
	p := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "data-grow-1")
	assert.Contains(t, p.Message, "the scale-up stops before Pod grow-1")
	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "grow", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), ptr.Deref(sts.Spec.Replicas, 0), "no replica started on the earlier store's claim")

	deleteClaim("data-grow-1")
	waitStore(t, kvs, ns, "grow", "Ready with 2 replicas", isReady)
}
