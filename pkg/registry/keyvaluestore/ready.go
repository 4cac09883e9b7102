package keyvaluestore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

// setReadyCondition derives the Ready condition from status.phase on every
// status write, whoever writes it and in whichever version: True exactly
// while the phase is Ready, False with the phase as its reason otherwise,
// and the status's observedGeneration, so `kubectl wait
// --for=condition=Ready` can be trusted without knowing the phase machine.
// Deriving it here rather than in the controller keeps the two from ever
// disagreeing. A status without a phase (nothing observed yet), or with one
// that is not a phase, gets none.
// Its lastTransitionTime follows the stored Ready (stored), whatever Ready
// the request carried or left out.
func setReadyCondition(status *kvstore.KeyValueStoreStatus, stored []metav1.Condition) {
	meta.RemoveStatusCondition(&status.Conditions, kvstore.ConditionReady)
	if prev := meta.FindStatusCondition(stored, kvstore.ConditionReady); prev != nil {
		status.Conditions = append(status.Conditions, *prev)
	}
	if !validation.IsPhase(status.Phase) {
		// Nothing observed yet, or a phase validation refuses (its error
		// names status.phase alone, not a condition the writer never sent).
		meta.RemoveStatusCondition(&status.Conditions, kvstore.ConditionReady)
		return
	}
	cond := metav1.Condition{
		Type:               kvstore.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             string(status.Phase),
		Message:            fmt.Sprintf("the store is %s", status.Phase),
		ObservedGeneration: status.ObservedGeneration,
	}
	if status.Phase == kvstore.PhaseReady {
		cond.Status = metav1.ConditionTrue
		cond.Message = "every data replica and proxy replica is ready at the current spec"
	}
	meta.SetStatusCondition(&status.Conditions, cond)
}
