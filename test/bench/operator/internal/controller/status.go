package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	benchv1alpha1 "github.com/kvstore-io/kvstore-apiserver/test/bench/operator/api/v1alpha1"
)

// observe computes status as kvstore-apiserver's controller does
// (pkg/controller/keyvaluestore/status.go), without bootstrap and schedule.
func observe(kvs *benchv1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment, applyErr error) benchv1alpha1.KeyValueStoreStatus {
	st := *kvs.Status.DeepCopy()
	desired := ptr.Deref(kvs.Spec.Replicas, 1)
	gen := kvs.Generation

	st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = 0, 0, 0
	if sts != nil {
		st.Replicas = sts.Status.Replicas
		st.ReadyReplicas = min(sts.Status.ReadyReplicas, st.Replicas)
		st.UpdatedReplicas = min(sts.Status.UpdatedReplicas, st.Replicas)
	}
	st.ProxyReadyReplicas = 0
	if proxy != nil {
		st.ProxyReadyReplicas = proxy.Status.ReadyReplicas
	}
	st.Selector = labels.SelectorFromSet(selectorLabels(kvs, componentData)).String()

	image := kvs.Spec.Image
	if kvs.Spec.Paused && sts != nil {
		image = ""
	}
	dataReady := statefulSetReady(sts, image, desired)
	proxyReady := deploymentReady(proxy, proxyReplicas(kvs))
	if dataReady && proxyReady {
		st.CurrentImage = sts.Spec.Template.Spec.Containers[0].Image
	}
	wasReady := st.CurrentImage != ""
	readyGeneration := int64(-1)
	if p := meta.FindStatusCondition(st.Conditions, benchv1alpha1.ConditionProgressing); p != nil &&
		p.Status == metav1.ConditionFalse && p.Reason == "RolloutComplete" {
		readyGeneration = p.ObservedGeneration
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if sts != nil && st.ReadyReplicas >= desired {
		set(benchv1alpha1.ConditionAvailable, metav1.ConditionTrue, "AllReplicasReady", fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	} else {
		set(benchv1alpha1.ConditionAvailable, metav1.ConditionFalse, "ReplicasNotReady", fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	}
	degraded := false
	switch {
	case applyErr != nil && (apierrors.IsInvalid(applyErr) || apierrors.IsForbidden(applyErr) || apierrors.IsBadRequest(applyErr)):
		st.Phase = benchv1alpha1.PhaseFailed
		set(benchv1alpha1.ConditionProgressing, metav1.ConditionFalse, "ApplyFailed", applyErr.Error())
	case dataReady && proxyReady:
		st.Phase = benchv1alpha1.PhaseReady
		set(benchv1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete", "all replicas run the current spec and are ready")
	case kvs.Spec.Paused && sts == nil:
		st.Phase = benchv1alpha1.PhasePending
		set(benchv1alpha1.ConditionProgressing, metav1.ConditionFalse, "Paused", "paused before any workload was created")
	case wasReady && gen != readyGeneration:
		st.Phase = benchv1alpha1.PhaseUpgrading
		set(benchv1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut", fmt.Sprintf("rolling out generation %d: %d/%d replicas updated", gen, st.UpdatedReplicas, desired))
	case wasReady:
		st.Phase = benchv1alpha1.PhaseDegraded
		degraded = true
	default:
		st.Phase = benchv1alpha1.PhaseCreating
		set(benchv1alpha1.ConditionProgressing, metav1.ConditionTrue, "Creating", fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	}
	if degraded {
		set(benchv1alpha1.ConditionDegraded, metav1.ConditionTrue, "ReplicasLost", fmt.Sprintf("only %d/%d data replicas ready", st.ReadyReplicas, desired))
	} else {
		set(benchv1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected", "")
	}
	st.ObservedGeneration = gen
	return st
}
