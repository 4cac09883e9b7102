package keyvaluestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// A status write gets a Ready condition that follows status.phase, keeps
// its lastTransitionTime while its status stays, and is overridden if a
// writer sends one that disagrees.
func TestStatusUpdateDerivesReady(t *testing.T) {
	s := NewStatusStrategy(testStrategy())
	ctx := context.Background()
	write := func(old *kvstore.KeyValueStore, phase kvstore.KeyValueStorePhase, gen int64, sent ...metav1.Condition) *kvstore.KeyValueStore {
		obj := old.DeepCopy()
		obj.Status.Phase = phase
		obj.Status.ObservedGeneration = gen
		for _, c := range sent {
			meta.SetStatusCondition(&obj.Status.Conditions, c)
		}
		s.PrepareForUpdate(ctx, obj, old)
		return obj
	}

	empty := newKVS()
	empty.ResourceVersion = "1"
	empty.Status = kvstore.KeyValueStoreStatus{}
	noPhase := write(empty, "", 0)
	assert.Nil(t, meta.FindStatusCondition(noPhase.Status.Conditions, kvstore.ConditionReady), "nothing observed yet")

	creating := write(noPhase, kvstore.PhaseCreating, 1)
	ready := meta.FindStatusCondition(creating.Status.Conditions, kvstore.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "Creating", ready.Reason)
	assert.EqualValues(t, 1, ready.ObservedGeneration)
	assert.False(t, ready.LastTransitionTime.IsZero())

	// A writer claiming Ready=True while the phase says otherwise is overridden.
	liar := write(creating, kvstore.PhaseCreating, 2, metav1.Condition{Type: kvstore.ConditionReady, Status: metav1.ConditionTrue, Reason: "Trust"})
	ready = meta.FindStatusCondition(liar.Status.Conditions, kvstore.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.EqualValues(t, 2, ready.ObservedGeneration)

	now := write(liar, kvstore.PhaseReady, 2)
	ready = meta.FindStatusCondition(now.Status.Conditions, kvstore.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, "Ready", ready.Reason)

	// The same status again keeps the transition time.
	transition := metav1.NewTime(ready.LastTransitionTime.Add(-3600e9))
	meta.FindStatusCondition(now.Status.Conditions, kvstore.ConditionReady).LastTransitionTime = transition
	again := write(now, kvstore.PhaseReady, 3)
	ready = meta.FindStatusCondition(again.Status.Conditions, kvstore.ConditionReady)
	require.NotNil(t, ready)
	assert.True(t, ready.LastTransitionTime.Equal(&transition))
	assert.EqualValues(t, 3, ready.ObservedGeneration)

	// Validation accepts what was derived.
	assert.Empty(t, s.ValidateUpdate(ctx, again, now))
}

// Ready's lastTransitionTime follows the stored Ready, not what the request
// carries: a status write that leaves Ready out (a controller rebuilding its
// conditions, a merge patch of the list) or sends a wrong one does not move
// it, and an otherwise unchanged write stays a no-op (found by review).
func TestReadyTransitionFollowsTheStoredCondition(t *testing.T) {
	s := NewStatusStrategy(testStrategy())
	t0 := metav1.NewTime(metav1.Now().Add(-3600e9).Truncate(1e9))
	stored := func(phase kvstore.KeyValueStorePhase) *kvstore.KeyValueStore {
		old := newKVS()
		old.ResourceVersion = "1"
		old.Status = kvstore.KeyValueStoreStatus{Phase: phase, ObservedGeneration: 1}
		setReadyCondition(&old.Status, nil)
		meta.FindStatusCondition(old.Status.Conditions, kvstore.ConditionReady).LastTransitionTime = t0
		return old
	}
	for name, tc := range map[string]struct {
		old  *kvstore.KeyValueStore
		sent []metav1.Condition
	}{
		"left out": {old: stored(kvstore.PhaseReady)},
		"wrong":    {old: stored(kvstore.PhaseCreating), sent: []metav1.Condition{{Type: kvstore.ConditionReady, Status: metav1.ConditionTrue, Reason: "Trust", LastTransitionTime: metav1.Now()}}},
	} {
		t.Run(name, func(t *testing.T) {
			obj := tc.old.DeepCopy()
			obj.Status.Conditions = tc.sent
			s.PrepareForUpdate(context.Background(), obj, tc.old)
			ready := meta.FindStatusCondition(obj.Status.Conditions, kvstore.ConditionReady)
			require.NotNil(t, ready)
			assert.True(t, ready.LastTransitionTime.Equal(&t0), "lastTransitionTime %v, stored %v", ready.LastTransitionTime, t0)
			assert.Equal(t, tc.old.Status, obj.Status, "an unchanged status stays unchanged")
		})
	}
}

// What the server derives is not held against the writer: an invalid phase
// is one error, on status.phase, not a second on a Ready condition the
// client never sent; and the bound on conditions counts the writer's, not
// the Ready the server adds (16 sent were refused as 17; found by review).
func TestDerivedReadyIsNotHeldAgainstTheWriter(t *testing.T) {
	s := NewStatusStrategy(testStrategy())
	ctx := context.Background()
	old := newKVS()
	old.ResourceVersion = "1"
	old.Status = kvstore.KeyValueStoreStatus{}

	badPhase := old.DeepCopy()
	badPhase.Status.Phase = "not a phase"
	s.PrepareForUpdate(ctx, badPhase, old)
	errs := s.ValidateUpdate(ctx, badPhase, old)
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, "status.phase", errs[0].Field)

	sixteen := old.DeepCopy()
	sixteen.Status.Phase = kvstore.PhaseCreating
	for i := range 16 {
		meta.SetStatusCondition(&sixteen.Status.Conditions, metav1.Condition{Type: fmt.Sprintf("Custom%d", i),
			Status: metav1.ConditionTrue, Reason: "Set", LastTransitionTime: metav1.Now()})
	}
	s.PrepareForUpdate(ctx, sixteen, old)
	require.NotNil(t, meta.FindStatusCondition(sixteen.Status.Conditions, kvstore.ConditionReady))
	assert.Empty(t, s.ValidateUpdate(ctx, sixteen, old))

	seventeen := sixteen.DeepCopy()
	meta.SetStatusCondition(&seventeen.Status.Conditions, metav1.Condition{Type: "Custom16",
		Status: metav1.ConditionTrue, Reason: "Set", LastTransitionTime: metav1.Now()})
	s.PrepareForUpdate(ctx, seventeen, sixteen)
	errs = s.ValidateUpdate(ctx, seventeen, sixteen)
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, "status.conditions", errs[0].Field)
}
