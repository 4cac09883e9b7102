package keyvaluestore

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
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
)

func (c *Controller) sync(ctx context.Context, key string) (result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return result{}, nil // a malformed key never becomes valid
	}
	kvs, err := c.stores.KeyValueStores(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return result{}, nil // gone; the garbage collector removes what it owned
	}
	if err != nil {
		return result{}, err
	}
	kvs = kvs.DeepCopy()
	logger := klog.FromContext(ctx).WithValues("keyvaluestore", klog.KObj(kvs))
	ctx = klog.NewContext(ctx, logger)

	if kvs.DeletionTimestamp != nil {
		return c.teardown(ctx, kvs)
	}
	// Status is computed from what the apply calls returned, not from the
	// informers, which may not have seen those writes yet; an apply skipped
	// as a no-op leaves the cached object, which already matched.
	sts, proxy := c.statefulSet(kvs), c.proxyDeployment(kvs)
	var applyErr error
	if !kvs.Spec.Paused {
		sts, proxy, applyErr = c.apply(ctx, kvs, sts, proxy)
	}
	if apierrors.HasStatusCause(applyErr, corev1.NamespaceTerminatingCause) {
		// The namespace controller is deleting what we would recreate, and
		// will delete the store next (its teardown then runs): nothing to
		// repair, retry or report.
		logger.V(2).Info("Namespace terminating; not recreating owned objects")
		return result{}, nil
	}
	if isPermanent(applyErr) {
		c.recorder.Event(kvs, corev1.EventTypeWarning, ReasonApplyFailed, applyErr.Error())
	}
	statusErr := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		return observe(k, sts, proxy, applyErr)
	})
	return result{}, errors.Join(applyErr, statusErr)
}

// apply writes the desired owned objects with server-side apply: only the
// fields we set are ours, server defaults never look like drift, and an
// unchanged apply is a no-op that writes nothing.
func (c *Controller) apply(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment) (*appsv1.StatefulSet, *appsv1.Deployment, error) {
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	ns := kvs.Namespace
	replicas := ptr.Deref(kvs.Spec.Replicas, 1)

	// Each apply is skipped when the cached object already carries, as ours,
	// exactly the fields we would apply: the request would be a no-op. A
	// field someone else changed is no longer ours in managedFields, so drift
	// still makes the comparison fail and the apply happen.
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{HeadlessService(kvs), ClientService(kvs)} {
		if live, err := c.services.Services(ns).Get(*svc.Name); err == nil && metav1.IsControlledBy(live, kvs) &&
			sameApplied(func() (any, error) { return corev1ac.ExtractService(live, FieldManager) }, svc) {
			continue
		}
		if _, err := c.kube.CoreV1().Services(ns).Apply(ctx, svc, opts); err != nil {
			return sts, proxy, fmt.Errorf("apply service %s: %w", *svc.Name, err)
		}
	}
	desired := StatefulSet(kvs, replicas)
	if sts == nil || !sameApplied(func() (any, error) { return appsv1ac.ExtractStatefulSet(sts, FieldManager) }, desired) {
		applied, err := c.kube.AppsV1().StatefulSets(ns).Apply(ctx, desired, opts)
		if err != nil {
			return sts, proxy, fmt.Errorf("apply statefulset: %w", err)
		}
		sts = applied
	}
	pdb := PodDisruptionBudget(kvs)
	if live, err := c.pdbs.PodDisruptionBudgets(ns).Get(*pdb.Name); err != nil || !metav1.IsControlledBy(live, kvs) ||
		!sameApplied(func() (any, error) { return policyv1ac.ExtractPodDisruptionBudget(live, FieldManager) }, pdb) {
		if _, err := c.kube.PolicyV1().PodDisruptionBudgets(ns).Apply(ctx, pdb, opts); err != nil {
			return sts, proxy, fmt.Errorf("apply poddisruptionbudget: %w", err)
		}
	}

	// The proxy tier is created only behind a ready data tier; once it exists
	// it follows the spec even while the data tier rolls.
	want := proxyReplicas(kvs)
	switch {
	case want > 0 && (proxy != nil || statefulSetReady(sts, kvs.Spec.Image, replicas)):
		desired := ProxyDeployment(kvs, want)
		if proxy != nil && sameApplied(func() (any, error) { return appsv1ac.ExtractDeployment(proxy, FieldManager) }, desired) {
			break
		}
		d, err := c.kube.AppsV1().Deployments(ns).Apply(ctx, desired, opts)
		if err != nil {
			return sts, proxy, fmt.Errorf("apply proxy deployment: %w", err)
		}
		proxy = d
	case want == 0 && proxy != nil:
		if err := c.kube.AppsV1().Deployments(ns).Delete(ctx, proxy.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &proxy.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			return sts, proxy, fmt.Errorf("delete proxy deployment: %w", err)
		}
		proxy = nil
	}
	return sts, proxy, nil
}

// sameApplied reports whether the configuration extracted from a live
// object equals desired. Any error means "apply it".
func sameApplied(extract func() (any, error), desired any) bool {
	live, err := extract()
	return err == nil && apiequality.Semantic.DeepEqual(live, desired)
}

func (c *Controller) statefulSet(kvs *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
	sts, err := c.statefulSets.StatefulSets(kvs.Namespace).Get(kvs.Name)
	if err != nil || !metav1.IsControlledBy(sts, kvs) {
		return nil
	}
	return sts
}

func (c *Controller) proxyDeployment(kvs *v1alpha1.KeyValueStore) *appsv1.Deployment {
	d, err := c.deployments.Deployments(kvs.Namespace).Get(proxyName(kvs))
	if err != nil || !metav1.IsControlledBy(d, kvs) {
		return nil
	}
	return d
}

// observe computes status from the store's StatefulSet and proxy Deployment.
func observe(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment, applyErr error) v1alpha1.KeyValueStoreStatus {
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
	st.Selector = labels.SelectorFromSet(selectorLabels(kvs, ComponentData)).String()

	image := kvs.Spec.Image
	if kvs.Spec.Paused && sts != nil {
		image = "" // a paused store is judged on what runs, not on the spec
	}
	dataReady := statefulSetReady(sts, image, desired)
	proxyReady := deploymentReady(proxy, proxyReplicas(kvs))
	// currentImage is recorded only when the whole store is Ready, so it also
	// says the store has been Ready before (Upgrading and Degraded need that).
	if dataReady && proxyReady {
		st.CurrentImage = sts.Spec.Template.Spec.Containers[0].Image
	}
	wasReady := st.CurrentImage != ""
	readyGeneration := int64(-1)
	if p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); p != nil &&
		p.Status == metav1.ConditionFalse && p.Reason == ReasonRolloutComplete {
		readyGeneration = p.ObservedGeneration
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if sts != nil && st.ReadyReplicas >= desired {
		set(v1alpha1.ConditionAvailable, metav1.ConditionTrue, ReasonAllReplicasReady, fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	} else {
		set(v1alpha1.ConditionAvailable, metav1.ConditionFalse, ReasonReplicasNotReady, fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	}

	degraded := false
	switch {
	case isPermanent(applyErr):
		st.Phase = v1alpha1.PhaseFailed
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonApplyFailed, applyErr.Error())
	case dataReady && proxyReady:
		st.Phase = v1alpha1.PhaseReady
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonRolloutComplete, "all replicas run the current spec and are ready")
	case kvs.Spec.Paused && sts == nil:
		st.Phase = v1alpha1.PhasePending
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonPaused, "paused before any workload was created")
	case wasReady && gen != readyGeneration:
		st.Phase = v1alpha1.PhaseUpgrading
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonRollingOut, fmt.Sprintf("rolling out generation %d: %d/%d replicas updated", gen, st.UpdatedReplicas, desired))
	case wasReady:
		// Same spec that was once fully ready: replicas were lost.
		st.Phase = v1alpha1.PhaseDegraded
		degraded = true
	default:
		st.Phase = v1alpha1.PhaseCreating
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonCreating, fmt.Sprintf("%d/%d data replicas ready", st.ReadyReplicas, desired))
	}
	if degraded {
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonReplicasLost, fmt.Sprintf("only %d/%d data replicas ready", st.ReadyReplicas, desired))
	} else {
		set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	// Last: observedGeneration says the whole status reflects this generation.
	st.ObservedGeneration = gen
	return st
}

// isPermanent says an apply error will not go away by retrying the same spec
// (the cluster refuses it), so the store is Failed until the spec changes.
func isPermanent(err error) bool {
	return err != nil && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err))
}

// updateStatus writes status through /status when compute gives something
// new, recomputing on the latest object after a conflict.
func (c *Controller) updateStatus(ctx context.Context, kvs *v1alpha1.KeyValueStore, compute func(*v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus) error {
	client := c.kvs.KvstoreV1alpha1().KeyValueStores(kvs.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st := compute(kvs)
		if apiequality.Semantic.DeepEqual(kvs.Status, st) {
			return nil
		}
		next := kvs.DeepCopy()
		next.Status = st
		updated, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			if fresh, getErr := client.Get(ctx, kvs.Name, metav1.GetOptions{}); getErr == nil {
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
}
