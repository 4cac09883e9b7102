package keyvaluestore

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// countExtractions counts k's extractions from here on.
func countExtractions[T metav1.Object, AC any](k *ownedKind[T, AC]) *int {
	n := 0
	extract := k.extract
	k.extract = func(o T) (AC, error) {
		n++
		return extract(o)
	}
	return &n
}

// created is a store reconciled once: its owned objects exist, and the
// caches hold them.
func created(t *testing.T) (*fixture, *v1alpha1.KeyValueStore) {
	t.Helper()
	kvs := newStore()
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.refreshCache(kvs.Namespace)
	return f, kvs
}

// settled is a created store reconciled once more, so that every owned
// object has been extracted and remembered.
func settled(t *testing.T) *fixture {
	f, kvs := created(t)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	require.Empty(t, kube)
	return f
}

func TestUnchangedObjectIsExtractedOnce(t *testing.T) {
	f := settled(t)
	extractions := countExtractions(&f.c.statefulSets)
	for range 3 {
		_, err := f.sync(f.stored(newStore()))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Empty(t, kube)
	}
	assert.Zero(t, *extractions, "a StatefulSet that has not changed since it matched is not extracted again")
}

// The memo never hides drift: each change the extraction would see makes
// the next reconcile extract again, and the apply repairs what differs.
func TestAppliedMemoSeesEveryChange(t *testing.T) {
	for name, tc := range map[string]struct {
		change    func(*appsv1.StatefulSet)
		store     func(*v1alpha1.KeyValueStore)
		reapplied bool
	}{
		// A spec change increments the generation on a real server (the fake
		// does not); managedFields are left as they were, as a writer
		// forging them would.
		"spec":            {change: func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1); s.Generation++ }, reapplied: true},
		"label":           {change: func(s *appsv1.StatefulSet) { s.Labels[LabelComponent] = "other" }, reapplied: true},
		"ownerReference":  {change: func(s *appsv1.StatefulSet) { s.OwnerReferences = nil }, reapplied: true},
		"managedFields":   {change: func(s *appsv1.StatefulSet) { s.ManagedFields = nil }, reapplied: true},
		"annotation":      {change: func(s *appsv1.StatefulSet) { s.Annotations = map[string]string{"a": "b"} }},
		"recreated (UID)": {change: func(s *appsv1.StatefulSet) { s.UID = "another" }},
		"desired":         {store: func(k *v1alpha1.KeyValueStore) { k.Spec.Replicas = ptr.To[int32](5) }, reapplied: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := settled(t)
			extractions := countExtractions(&f.c.statefulSets)
			if tc.change != nil {
				sts, err := f.c.statefulSets.cached("ns", "s")
				require.NoError(t, err)
				sts = sts.DeepCopy()
				tc.change(sts)
				f.cache(sts)
			}
			kvs := f.stored(newStore())
			if tc.store != nil {
				tc.store(kvs)
				f.cache(kvs)
			}
			_, err := f.sync(kvs)
			require.NoError(t, err)
			assert.Equal(t, 1, *extractions, "extracted again")
			kube, _ := f.writes()
			if tc.reapplied {
				assert.Contains(t, kube, "apply statefulsets s")
			} else {
				assert.Empty(t, kube)
			}
		})
	}
}

// A Service's generation says nothing about its spec (the server neither
// sets nor increments it): a selector changed under a constant generation,
// with managedFields as they were, is still seen and repaired.
func TestAppliedMemoOfServicesFollowsResourceVersion(t *testing.T) {
	f, kvs := created(t)
	setService := func(rv string, selector map[string]string) {
		svc, err := f.c.services.cached("ns", "s")
		require.NoError(t, err)
		svc = svc.DeepCopy()
		svc.Generation, svc.ResourceVersion = 7, rv
		if selector != nil {
			svc.Spec.Selector = selector
		}
		f.cache(svc)
	}
	setService("1", nil)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	require.Empty(t, kube)

	setService("2", map[string]string{LabelComponent: "elsewhere"})
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Equal(t, []string{"apply services s"}, kube)
}

// The memo holds only what the cache holds: a deletion, also one the
// informer learned of only by relisting, drops the object's entry.
func TestAppliedMemoForgetsDeletedObjects(t *testing.T) {
	m := newAppliedMemo(true)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u"}}
	for _, deleted := range []any{svc, cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: svc}} {
		d, ok := m.digest(svc, clientService(newStore(), ComponentData))
		require.True(t, ok)
		m.remember(svc, d)
		require.True(t, m.holds(svc, d))
		m.forget(deleted)
		assert.Empty(t, m.seen)
	}
}

// An image an admission webhook pinned to a digest in our own apply (the
// stored value, ours in managedFields, is "<image>@sha256:...") is what we
// applied: before the fix every reconcile applied the StatefulSet again and
// sent an "Updated" event.
func TestImagePinnedByAdmissionIsNotReapplied(t *testing.T) {
	f, kvs := created(t)
	pinned := statefulSet(kvs, 3)
	c := acDataContainer(pinned)
	c.WithImage(*c.Image + "@sha256:" + strings.Repeat("0", 64))
	f.applyAsOurs(pinned)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, kube, "apply statefulsets s")
}

// The same for the proxy Deployment's image (it was applied again, with an
// "Updated" event, on every reconcile; found by review).
func TestProxyImagePinnedByAdmissionIsNotReapplied(t *testing.T) {
	kvs := newStore(withProxy(1))
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs) // the proxy Deployment is created
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	require.Contains(t, kube, "apply deployments s-proxy")
	pinned := proxyDeployment(kvs, 1)
	c := &pinned.Spec.Template.Spec.Containers[0]
	c.WithImage(*c.Image + "@sha256:" + strings.Repeat("0", 64))
	_, err = f.kube.AppsV1().Deployments("ns").Apply(context.Background(), pinned, applyOptions)
	require.NoError(t, err)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.NotContains(t, kube, "apply deployments s-proxy")
}

// applyAsOurs puts sts on the fake server as the controller's own apply
// would have written it, and refreshes the caches.
func (f *fixture) applyAsOurs(sts *appsv1ac.StatefulSetApplyConfiguration) {
	f.t.Helper()
	_, err := f.kube.AppsV1().StatefulSets(*sts.Namespace).Apply(context.Background(), sts, applyOptions)
	require.NoError(f.t, err)
	f.refreshCache(*sts.Namespace)
}
