package keyvaluestore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// settledWithCountedExtractions is a store whose owned objects exist and
// match, with the StatefulSet's extractions counted from here on.
func settledWithCountedExtractions(t *testing.T) (*fixture, *int) {
	kvs := newStore()
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.refreshCache(kvs.Namespace)
	extractions := 0
	extract := f.c.statefulSets.extract
	f.c.statefulSets.extract = func(s *appsv1.StatefulSet) (*appsv1ac.StatefulSetApplyConfiguration, error) {
		extractions++
		return extract(s)
	}
	return f, &extractions
}

func TestUnchangedObjectIsExtractedOnce(t *testing.T) {
	f, extractions := settledWithCountedExtractions(t)
	for range 3 {
		_, err := f.sync(f.stored(newStore()))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Empty(t, kube)
	}
	assert.Equal(t, 1, *extractions, "the StatefulSet is extracted once while it does not change")
}

// The memo never hides drift: each change the extraction would see makes
// the next reconcile extract again, and the apply repairs it.
func TestAppliedMemoSeesEveryChange(t *testing.T) {
	for name, change := range map[string]func(*appsv1.StatefulSet){
		// A spec change increments the generation on a real server (the fake
		// does not); managedFields left as they were, as a writer forging
		// them would.
		"spec":           func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1); s.Generation++ },
		"label":          func(s *appsv1.StatefulSet) { s.Labels[LabelComponent] = "other" },
		"ownerReference": func(s *appsv1.StatefulSet) { s.OwnerReferences = nil },
		"managedFields":  func(s *appsv1.StatefulSet) { s.ManagedFields = nil },
	} {
		t.Run(name, func(t *testing.T) {
			f, extractions := settledWithCountedExtractions(t)
			_, err := f.sync(f.stored(newStore()))
			require.NoError(t, err)
			require.Equal(t, 1, *extractions)

			sts, err := f.c.statefulSets.cached("ns", "s")
			require.NoError(t, err)
			sts = sts.DeepCopy()
			change(sts)
			f.cache(sts)
			_, err = f.sync(f.stored(newStore()))
			require.NoError(t, err)
			kube, _ := f.writes()
			assert.Equal(t, []string{"apply statefulsets s"}, kube)
			assert.Equal(t, 2, *extractions)
		})
	}
}

// The memo holds only what the cache holds: a deletion, also one the
// informer learned of only by relisting, drops the object's entry.
func TestAppliedMemoForgetsDeletedObjects(t *testing.T) {
	m := newAppliedMemo()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u"}}
	for _, deleted := range []any{sts, cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: sts}} {
		d, ok := appliedDigest(sts, statefulSet(newStore(), 3))
		require.True(t, ok)
		m.remember(sts, d)
		require.True(t, m.holds(sts, d))
		m.forget(deleted)
		assert.Empty(t, m.seen)
	}
}
