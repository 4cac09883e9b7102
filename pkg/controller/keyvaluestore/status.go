package keyvaluestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
	kvstorev1alpha1client "github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/typed/kvstore/v1alpha1"
)

// Condition reasons.
const (
	ReasonAllReplicasReady = "AllReplicasReady"
	ReasonReplicasNotReady = "ReplicasNotReady"
	ReasonCreating         = "Creating"
	ReasonRollingOut       = "RollingOut"
	ReasonRolloutComplete  = "RolloutComplete"
	ReasonReplicasLost     = "ReplicasLost"
	ReasonAsExpected       = "AsExpected"
	ReasonApplyFailed      = "ApplyFailed"
	ReasonPaused           = "Paused"
	ReasonBootstrapping    = "Bootstrapping"
	// ReasonObjectInTheWay: an object with a derived name exists that the
	// store does not control; the message names it.
	ReasonObjectInTheWay = "ObjectInTheWay"
)

// observe computes status from the store's StatefulSet and proxy Deployment.
// view, for a paused store, says how what runs is judged (nil otherwise).
func observe(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment, applyErr error, boot bootstrapState, view *pausedView) v1alpha1.KeyValueStoreStatus {
	st := *kvs.Status.DeepCopy()
	desired, proxyWant := ptr.Deref(kvs.Spec.Replicas, 1), proxyReplicas(kvs)
	image := kvs.Spec.Image
	paused := view != nil && sts != nil
	var held []string
	if paused {
		// A paused store is judged on what it runs as the controller last
		// applied it, not on the spec: held says what of the spec waits.
		image, desired, proxyWant, held = "", view.replicas, view.proxyReplicas, view.held
	}
	gen := kvs.Generation

	st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = 0, 0, 0
	if sts != nil {
		st.Replicas = sts.Status.Replicas
		st.ReadyReplicas = min(sts.Status.ReadyReplicas, st.Replicas)
		if sts.Status.ObservedGeneration >= sts.Generation {
			// Before, its status counts the replicas of a template since
			// replaced: none is known to run the new one yet.
			st.UpdatedReplicas = min(sts.Status.UpdatedReplicas, st.Replicas)
		}
	}
	st.ProxyReadyReplicas = 0
	if proxy != nil {
		st.ProxyReadyReplicas = proxy.Status.ReadyReplicas
	}
	st.Selector = labels.SelectorFromSet(podSelector(kvs, ComponentData)).String()

	dataReady := statefulSetReady(sts, image, desired)
	proxyReady := deploymentReady(proxy, proxyWant)
	// currentImage is recorded only when the whole store is Ready, so it also
	// says the store has been Ready before (Upgrading and Degraded need that).
	if dataReady && proxyReady && boot.done && len(held) == 0 {
		st.CurrentImage = dataContainer(sts).Image
	}
	wasReady := st.CurrentImage != ""
	// The generation at which the store was last Ready. A paused store
	// with changes waiting has none: lostReplicas judges it on the counts
	// the controller applied (what the workloads may still be rolling out
	// cannot be told from a recorded Pending).
	readyGeneration := int64(-1)
	if p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); p != nil &&
		p.Status == metav1.ConditionFalse && p.Reason == ReasonRolloutComplete {
		readyGeneration = p.ObservedGeneration
	}
	var pausedMessage string
	if len(held) > 0 {
		pausedMessage = fmt.Sprintf("paused; changes to the spec wait until the store is unpaused (%s)", strings.Join(held, "; "))
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if c := boot.condition; c != nil {
		set(c.Type, c.Status, c.Reason, c.Message)
	}
	if sts != nil && st.ReadyReplicas >= desired {
		set(v1alpha1.ConditionAvailable, metav1.ConditionTrue, ReasonAllReplicasReady, fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	} else {
		set(v1alpha1.ConditionAvailable, metav1.ConditionFalse, ReasonReplicasNotReady, fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	}

	degraded := false
	var inTheWay *objectInTheWayError
	switch {
	case errors.As(applyErr, &inTheWay):
		st.Phase = v1alpha1.PhaseFailed
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonObjectInTheWay, applyErr.Error())
	case isPermanent(applyErr):
		st.Phase = v1alpha1.PhaseFailed
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonApplyFailed, applyErr.Error())
	case boot.failed:
		st.Phase = v1alpha1.PhaseFailed
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, boot.condition.Reason, boot.condition.Message)
	case paused && len(held) > 0 && dataReady && proxyReady && boot.done:
		// What runs is Ready, but it is not the spec.
		st.Phase = v1alpha1.PhasePending
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonPaused, pausedMessage)
	case dataReady && proxyReady && boot.done && (applyErr == nil || gen == readyGeneration):
		// After a failed apply the objects are the cache's, which may run
		// an earlier generation's spec: Ready only for the one already Ready.
		st.Phase = v1alpha1.PhaseReady
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonRolloutComplete, "all replicas run the current spec and are ready")
	case kvs.Spec.Paused && sts == nil:
		st.Phase = v1alpha1.PhasePending
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonPaused, "paused; no data tier exists (none was created yet, or it was deleted while paused)")
	case dataReady && !boot.done:
		st.Phase = v1alpha1.PhaseBootstrapping
		msg := "waiting for the bootstrap Job"
		if boot.condition != nil {
			msg = boot.condition.Message
		}
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonBootstrapping, msg)
	case wasReady:
		// At the generation once fully ready, what is missing was lost; at
		// a newer one, only what the change cannot explain.
		newGeneration := gen != readyGeneration
		st.Phase = v1alpha1.PhaseUpgrading
		switch {
		case paused && len(held) > 0:
			// Nothing of the change rolls out.
			st.Phase = v1alpha1.PhasePending
			set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonPaused, pausedMessage)
		case newGeneration:
			set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonRollingOut, fmt.Sprintf("rolling out generation %d: %d/%d replicas updated", gen, st.UpdatedReplicas, desired))
		}
		if !newGeneration || lostReplicas(kvs, sts, proxy, newGeneration, desired, proxyWant) {
			st.Phase = v1alpha1.PhaseDegraded
			degraded = true
		}
	default:
		st.Phase = v1alpha1.PhaseCreating
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonCreating, fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	}
	if st.Phase == v1alpha1.PhaseFailed && !(dataReady && proxyReady) &&
		meta.IsStatusConditionTrue(kvs.Status.Conditions, v1alpha1.ConditionDegraded) {
		degraded = true // a refused apply does not bring lost replicas back
	}
	switch {
	case degraded && st.ReadyReplicas >= desired && proxyReady:
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonReplicasLost, "replicas were lost; Degraded until the store is Ready again")
	case degraded && st.ReadyReplicas >= desired:
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonReplicasLost, fmt.Sprintf("only %d/%d proxy replicas ready", st.ProxyReadyReplicas, proxyWant))
	case degraded:
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonReplicasLost, fmt.Sprintf("only %d/%d data replicas ready", st.ReadyReplicas, desired))
	default:
		set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	// Last: observedGeneration says the whole status reflects this generation.
	st.ObservedGeneration = gen
	return st
}

// lostReplicas tells, for a store that was once fully Ready and is not now,
// replicas lost from replicas a change has not brought up yet, by the
// status last written (kvs.Status; only this controller writes it, so it
// holds across restarts): a loss leaves fewer ready replicas than were
// recorded, and Degraded, once recorded, holds until the store is Ready
// again. A scale-up only adds replicas that were never ready. A rollout of
// a new generation replaces one data replica at a time: one below a
// recorded full count is allowed it, once (what was recorded mid-rollout
// already lacks that one), whichever replica it is; the proxy Deployment's
// rollout, as many as its strategy lets it (maxUnavailable), also once,
// until it reports the rollout complete.
func lostReplicas(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment, newGeneration bool, desired, want int32) bool {
	was := &kvs.Status
	if meta.IsStatusConditionTrue(was.Conditions, v1alpha1.ConditionDegraded) {
		return true
	}
	ready, floor := int32(0), min(was.ReadyReplicas, desired)
	if sts != nil {
		ready = min(sts.Status.ReadyReplicas, sts.Status.Replicas)
		if newGeneration && sts.Status.CurrentRevision != sts.Status.UpdateRevision && was.ReadyReplicas >= desired {
			floor--
		}
	}
	if ready < floor {
		return true
	}
	proxyReady := int32(0)
	proxyFloor := min(was.ProxyReadyReplicas, want)
	if proxy != nil {
		proxyReady = proxy.Status.ReadyReplicas
		if newGeneration && was.ProxyReadyReplicas >= want && deploymentRollingOut(proxy) {
			proxyFloor -= deploymentMaxUnavailable(proxy)
		}
	}
	return proxyReady < proxyFloor
}

// deploymentMaxUnavailable is how many replicas the Deployment's rollout
// may take down at once (maxUnavailable, rounded down as the deployment
// controller does; a Recreate rollout takes them all).
func deploymentMaxUnavailable(d *appsv1.Deployment) int32 {
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return replicas
	}
	maxUnavailable := intstr.FromString("25%") // the API's default
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, int(replicas), false)
	if err != nil {
		return replicas // unreadable: no false alarm
	}
	return int32(n)
}

// deploymentRollingOut says the Deployment has not reported its latest
// template rolled out and available: with all replicas updated it may
// still have scaled the old ReplicaSet down before the last new Pod is
// ready (maxUnavailable), which the counts alone read as a loss.
func deploymentRollingOut(d *appsv1.Deployment) bool {
	if d == nil {
		return false
	}
	c := deploymentCondition(d, appsv1.DeploymentProgressing)
	return d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < ptr.Deref(d.Spec.Replicas, 1) ||
		c == nil || c.Reason != deploymentRolloutComplete
}

// deploymentRolloutComplete is the reason of a Deployment's Progressing
// condition once its newest ReplicaSet is fully available (the deployment
// controller's NewRSAvailableReason).
const deploymentRolloutComplete = "NewReplicaSetAvailable"

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	i := slices.IndexFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool { return c.Type == t })
	if i < 0 {
		return nil
	}
	return &d.Status.Conditions[i]
}

// isPermanent says an apply error will not go away by retrying the same spec
// (the cluster refuses it), so the store is Failed until the spec changes.
func isPermanent(err error) bool {
	return err != nil && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err))
}

// updateStatus writes status through /status when compute gives something
// new, recomputing on the latest object after a conflict. It returns the
// status it went over (or left as it was): what a change is told against,
// which after a conflict is the server's, maybe written already by a pass
// since the cached copy (each change would otherwise be told twice).
func (c *Controller) updateStatus(ctx context.Context, kvs *v1alpha1.KeyValueStore, compute func(*v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus) (was v1alpha1.KeyValueStoreStatus, err error) {
	client := c.kvs.KvstoreV1alpha1().KeyValueStores(kvs.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		was = *kvs.Status.DeepCopy()
		st := compute(kvs)
		if apiequality.Semantic.DeepEqual(kvs.Status, st) {
			return nil
		}
		next := kvs.DeepCopy()
		next.Status = st
		updated, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
		if validation.IsStoredSizeRefusal(err) {
			updated, err = patchStatus(ctx, client, next)
		}
		if apierrors.IsConflict(err) {
			fresh, getErr := client.Get(ctx, kvs.Name, metav1.GetOptions{})
			switch {
			case getErr != nil:
			case fresh.UID != kvs.UID:
				// Deleted and created again under the same name: that is
				// another store, never to be written or torn down as this one.
				return fmt.Errorf("update status: store %s/%s is now another object (uid %s, was %s)", kvs.Namespace, kvs.Name, fresh.UID, kvs.UID)
			default:
				*kvs = *fresh
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("update status: %w", err)
		}
		*kvs = *updated
		return nil
	})
	return was, err
}

// patchStatus writes next's status as a JSON patch of /status, which
// carries no size, with next's resourceVersion as precondition (a conflict,
// as for an update).
func patchStatus(ctx context.Context, client kvstorev1alpha1client.KeyValueStoreInterface, next *v1alpha1.KeyValueStore) (*v1alpha1.KeyValueStore, error) {
	body, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/resourceVersion", "value": next.ResourceVersion},
		{"op": "replace", "path": "/status", "value": next.Status},
	})
	if err != nil {
		return nil, err
	}
	return client.Patch(ctx, next.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: FieldManager}, "status")
}

// recordPhaseChange tells `kubectl describe` the store's story: one event
// per phase transition, none for a reconcile that changed nothing. A new
// store's first phase is not a transition: it is its status, and the Created
// events already tell what happened (an Event per create would cost
// kube-apiserver and its etcd a write per store). A Warning is told even
// then.
func (c *Controller) recordPhaseChange(kvs *v1alpha1.KeyValueStore, before v1alpha1.KeyValueStorePhase) {
	after := kvs.Status.Phase
	if after == before || after == "" {
		return
	}
	eventType := corev1.EventTypeNormal
	if after == v1alpha1.PhaseFailed || after == v1alpha1.PhaseDegraded {
		eventType = corev1.EventTypeWarning
	}
	from := string(before)
	if from == "" {
		if eventType == corev1.EventTypeNormal {
			return
		}
		from = "new"
	}
	msg := fmt.Sprintf("Phase %s -> %s", from, after)
	// The condition that tells why: what was lost, or where the workloads
	// stand (Progressing keeps "all replicas ... are ready" at the
	// generation once Ready, replicas lost or not).
	why := v1alpha1.ConditionProgressing
	if after == v1alpha1.PhaseDegraded {
		why = v1alpha1.ConditionDegraded
	}
	if c := meta.FindStatusCondition(kvs.Status.Conditions, why); c != nil && c.Message != "" {
		msg += ": " + c.Message
	}
	c.recorder.Event(kvs, eventType, string(after), msg)
}

// setCondition records cond in status, and reports whether it changed
// anything but lastTransitionTime (so that its event is sent once) and
// what the condition was before. Judged on the object the write goes
// over: the server's after a conflict, which a pass since the cached copy
// may have written already.
func (c *Controller) setCondition(ctx context.Context, kvs *v1alpha1.KeyValueStore, cond metav1.Condition) (changed bool, before *metav1.Condition, err error) {
	was, err := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		cond.ObservedGeneration = k.Generation
		meta.SetStatusCondition(&st.Conditions, cond)
		return st
	})
	before = meta.FindStatusCondition(was.Conditions, cond.Type)
	return err == nil && !sameCondition(before, &cond), before, err
}

// sameCondition: equal but for lastTransitionTime (nil equals only nil).
func sameCondition(a, b *metav1.Condition) bool {
	return tellsTheSame(a, b) && (a == nil || a.ObservedGeneration == b.ObservedGeneration)
}

// tellsTheSame: equal in what an event would tell (nil equals only nil).
// Conditions are stamped with each new generation; a new stamp alone is
// nothing to tell (before, every spec change, an HPA's /scale writes among
// them, sent the same event again).
func tellsTheSame(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}
