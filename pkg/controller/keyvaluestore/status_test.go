package keyvaluestore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// wasReadyAt marks a store as having been fully ready at generation gen.
func wasReadyAt(kvs *v1alpha1.KeyValueStore, gen int64) {
	kvs.Status.CurrentImage = "redis:7.2"
	meta.SetStatusCondition(&kvs.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonRolloutComplete, ObservedGeneration: gen})
}

func TestObservePhases(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "s", field.ErrorList{field.Invalid(field.NewPath("spec"), "", "bad")})
	tests := []struct {
		name     string
		setup    func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error)
		want     v1alpha1.KeyValueStorePhase
		degraded bool
	}{
		{"no statefulset yet", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return nil, nil }, v1alpha1.PhaseCreating, false},
		{"partly ready, never ready", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			s := readySts("redis:7.2", 3)
			s.Status.ReadyReplicas = 1
			return s, nil
		}, v1alpha1.PhaseCreating, false},
		{"ready", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return readySts("redis:7.2", 3), nil }, v1alpha1.PhaseReady, false},
		{"new generation rolling after ready", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			k.Generation = 2
			k.Spec.Image = "redis:7.4"
			return readySts("redis:7.2", 3), nil
		}, v1alpha1.PhaseUpgrading, false},
		{"lost replicas at the ready generation", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			s := readySts("redis:7.2", 3)
			s.Status.ReadyReplicas = 2
			return s, nil
		}, v1alpha1.PhaseDegraded, true},
		{"refused by the cluster", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return nil, invalid }, v1alpha1.PhaseFailed, false},
		{"transient error is not failure", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return nil, errors.New("timeout") }, v1alpha1.PhaseCreating, false},
		{"paused before anything exists", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			k.Spec.Paused = true
			return nil, nil
		}, v1alpha1.PhasePending, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kvs := newStore()
			sts, err := tc.setup(kvs)
			st := observe(kvs, sts, nil, err, bootstrapState{done: true})
			assert.Equal(t, tc.want, st.Phase)
			assert.Equal(t, kvs.Generation, st.ObservedGeneration)
			assert.Equal(t, tc.degraded, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded))
			for _, c := range st.Conditions {
				assert.Equal(t, kvs.Generation, c.ObservedGeneration, c.Type)
			}
			assert.LessOrEqual(t, st.ReadyReplicas, st.Replicas)
		})
	}
}

func TestObserveReadyRecordsImageAndWaitsForProxy(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptrInt32(2), Image: "envoy:1"}
	st := observe(kvs, readySts("redis:7.2", 3), nil, nil, bootstrapState{done: true})
	assert.Equal(t, v1alpha1.PhaseCreating, st.Phase, "not Ready while the proxy tier is missing")
	assert.Empty(t, st.CurrentImage, "currentImage is recorded once the whole store is Ready")
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable))

	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptrInt32(2)},
		Status: appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}}
	st = observe(kvs, readySts("redis:7.2", 3), d, nil, bootstrapState{done: true})
	assert.Equal(t, v1alpha1.PhaseReady, st.Phase)
	assert.Equal(t, "redis:7.2", st.CurrentImage)
	assert.Equal(t, int32(2), st.ProxyReadyReplicas)
}

func ptrInt32(v int32) *int32 { return &v }

// A status write that conflicts because the store was deleted and created
// again under the same name (the cache still holds the old one) must not
// carry on with the new store: before the fix the conflict handler took the
// fresh read whatever its UID, wrote the old store's status (Terminating,
// BackupSucceeded) onto the new one and left the caller, a teardown, working
// on it.
func TestUpdateStatusNeverSwitchesToAnotherStore(t *testing.T) {
	old := newStore(deleting)
	recreated := newStore(func(k *v1alpha1.KeyValueStore) { k.UID = "uid-2" })
	f := newFixture(t, recreated)
	conflicted := false
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicted {
			return false, nil, nil
		}
		conflicted = true
		return true, nil, apierrors.NewConflict(v1alpha1.Resource("keyvaluestores"), "s", errors.New("the object has been modified"))
	})
	stale := old.DeepCopy()
	err := f.c.updateStatus(context.Background(), stale, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseTerminating
		return st
	})
	assert.Error(t, err)
	assert.Equal(t, old.UID, stale.UID, "the caller keeps the store it was working on")
	assert.Empty(t, f.stored(recreated).Status.Phase, "the recreated store's status is not written")
}

// A store whose size was stored before the quantity guard existed is
// refused (422 on its size) when its whole object is sent back: its status
// goes as a JSON patch of /status instead. Before, its status never changed
// and a teardown waiting on it (the final backup's outcome) waited forever
// (found by review).
func TestStatusOfAStoreWithASizeFromBeforeTheGuard(t *testing.T) {
	kvs := newStore()
	f := newFixture(t, kvs)
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("KeyValueStore").GroupKind(), "s", field.ErrorList{
			field.Invalid(field.NewPath("spec", "storage", "size"), "10e2147483646", "the exponent must be between -1000 and 1000")})
	})
	err := f.c.updateStatus(context.Background(), kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseTerminating
		return st
	})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseTerminating, f.stored(kvs).Status.Phase)
	assert.Equal(t, v1alpha1.PhaseTerminating, kvs.Status.Phase, "the caller sees what was written")
}
