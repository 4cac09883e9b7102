package keyvaluestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

func (c *Controller) sync(ctx context.Context, key string) (result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return result{}, nil // a malformed key never becomes valid
	}
	kvs, err := c.stores.KeyValueStores(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		kvs = nil // gone; the garbage collector removes what it owned
	case err != nil:
		return result{}, err
	default:
		kvs = kvs.DeepCopy()
		ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("keyvaluestore", klog.KObj(kvs)))
	}
	var res result
	var storeErr error
	if kvs != nil {
		res, storeErr = c.syncStore(ctx, kvs)
	}
	// A store's backups are driven in the same sync, also once the store
	// is gone (they are then Failed, or were finished).
	backupRes, backupErr := c.syncBackups(ctx, namespace, name, kvs)
	return res.sooner(backupRes), errors.Join(storeErr, backupErr)
}

// syncStore reconciles one existing store: its workloads, bootstrap,
// schedule and status, or its teardown.
func (c *Controller) syncStore(ctx context.Context, kvs *v1alpha1.KeyValueStore) (result, error) {
	logger := klog.FromContext(ctx)
	if kvs.DeletionTimestamp != nil {
		return c.teardown(ctx, kvs)
	}
	backups, err := c.backupsOf(kvs.Namespace, kvs.Name)
	if err != nil {
		return result{}, err
	}
	// The generation this pass plans and applies for: a write inside it
	// that conflicts (the bootstrap's release, the status) replaces kvs
	// with the server's copy, maybe of a newer spec.
	applied := kvs.Generation
	plan := planSchedule(kvs, backups, c.now().Time)
	// Status is computed from what the apply calls returned, not from the
	// informers, which may not have seen those writes yet; an apply skipped
	// as a no-op leaves the cached object, which already matched.
	sts, proxy := c.ownedStatefulSet(kvs), c.ownedProxy(kvs)
	var applyErr error
	// Paused: nothing starts, and the bootstrap is judged on what was recorded.
	boot := recordedBootstrap(kvs)
	var paused *pausedView
	var rolloutErr, resizeErr error
	// The claims' growth is reported as last recorded unless it was looked at.
	resize, resized := storageResize{}, false
	if kvs.Spec.Paused {
		paused = c.viewPaused(kvs, sts, proxy)
	} else {
		sts, proxy, boot, applyErr = c.apply(ctx, kvs, sts, proxy)
		// The StatefulSet is applied also while a claim holds a scale-up:
		// a rollout must not wait on that claim.
		var held *objectInTheWayError
		applied := applyErr == nil || errors.As(applyErr, &held) && held.heldScaleUp
		if applied && sts != nil && ours(sts, kvs) {
			sts, rolloutErr = c.rememberReadyReplicas(ctx, kvs, sts)
		}
		if applied && rolloutErr == nil {
			rolloutErr = c.replaceStuckPod(ctx, kvs, sts)
		}
		// Also while a scale-up is held or another object refused: the
		// replicas that run keep their claims growing.
		if sts != nil && ours(sts, kvs) {
			resize, resizeErr = c.resizeClaims(ctx, kvs, sts)
			resized = resizeErr == nil
		}
	}
	if apierrors.HasStatusCause(applyErr, corev1.NamespaceTerminatingCause) {
		// The namespace controller is deleting what we would recreate, and
		// will delete the store next (its teardown then runs): nothing to
		// repair, retry or report.
		logger.V(2).Info("Namespace terminating; not recreating owned objects")
		return result{}, nil
	}
	var inTheWay *objectInTheWayError
	errors.As(applyErr, &inTheWay)
	failure := c.replicaFailure(kvs, sts, proxy)
	was, statusErr := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		if k.Generation != applied {
			// The spec changed since the apply (a conflict brought the new
			// one): its own sync, already queued, applies and reports it.
			return k.Status
		}
		st := observe(k, sts, proxy, applyErr, boot, paused)
		setReplicaFailure(&st, failure, k.Generation)
		if resized {
			setStorageResized(&st, resize, k.Generation)
		}
		observeBackups(&st, k, backups, plan)
		return st
	})
	if statusErr == nil {
		// From what was recorded, against what it went over: a write
		// skipped for a newer generation recorded nothing to tell.
		before := was.Phase
		progressing := meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionProgressing)
		bootstrapped := meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionBootstrapped)
		scheduled := meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
		storageResized := meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionStorageResized)
		c.recordBootstrapEvent(kvs, bootstrapped, meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped), boot.heldUp)
		c.recordScheduledBackupEvent(kvs, scheduled)
		// A refusal is told once, when it is first recorded, not per retry.
		if now := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionProgressing); now != nil && !tellsTheSame(progressing, now) &&
			(now.Reason == ReasonObjectInTheWay || now.Reason == ReasonApplyFailed) {
			c.recorder.Event(kvs, corev1.EventTypeWarning, now.Reason, now.Message)
		}
		c.recordPhaseChange(kvs, before)
		c.recordResizeEvent(kvs, storageResized)
	}
	var res result
	var scheduleErr error
	if kvs.Generation == applied {
		// Not after a conflict brought a newer spec: the plan is the old
		// spec's (another keep, a pause), and the new one's sync is queued.
		res, scheduleErr = c.runSchedule(ctx, kvs, plan)
	}
	res = res.sooner(result{requeueAfter: boot.requeueAfter})
	if resize.reason == ReasonResizeRefused || resize.poll {
		// Nothing of ours changes when the StorageClass or quota that
		// refused is fixed, nor when a claim made by hand grows: look
		// again now and then.
		res = res.sooner(result{requeueAfter: waitFallback})
	}
	if (inTheWay != nil || exceededQuota(applyErr)) && statusErr == nil {
		// Nothing of ours changes when the user removes the object in the
		// way (it is not labelled ours), nor when the quota that refused
		// an object is raised (it is not watched): look again now and
		// then, without the error backoff. What else failed meanwhile is
		// logged.
		if err := errors.Join(rolloutErr, resizeErr); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Store pass failed while an object is in its way or refused by a quota; looking again in 30 s", "keyvaluestore", klog.KObj(kvs))
		}
		return res.sooner(result{requeueAfter: waitFallback}), scheduleErr
	}
	return res, errors.Join(applyErr, rolloutErr, resizeErr, statusErr, scheduleErr)
}

// apply writes the desired owned objects with server-side apply: only the
// fields we set are ours, server defaults never look like drift, and an
// unchanged object is not written at all.
func (c *Controller) apply(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment) (*appsv1.StatefulSet, *appsv1.Deployment, bootstrapState, error) {
	// What is recorded until the bootstrap step runs: an error before it
	// must not make a bootstrapped store (or one without bootstrap) look
	// undone.
	boot := recordedBootstrap(kvs)
	if _, err := applyUnlessUnchanged(ctx, c, c.services, kvs, headlessServiceName(kvs), headlessService(kvs)); err != nil {
		return sts, proxy, boot, err
	}
	replicas, held, err := c.replicasToRun(ctx, kvs, sts)
	if err != nil {
		return sts, proxy, boot, err
	}
	applied, err := applyUnlessUnchanged(ctx, c, c.statefulSets, kvs, kvs.Name, statefulSet(kvs, replicas))
	if err != nil {
		return sts, proxy, boot, err
	}
	sts = applied
	if _, err := applyUnlessUnchanged(ctx, c, c.pdbs, kvs, kvs.Name, podDisruptionBudget(kvs)); err != nil {
		return sts, proxy, boot, err
	}
	// The design's order: data tier healthy, then the bootstrap Job, then
	// the proxy tier.
	dataReady := statefulSetReady(sts, kvs.Spec.Image, ptr.Deref(kvs.Spec.Replicas, 1))
	if boot, err = c.bootstrap(ctx, kvs, sts, dataReady); err != nil {
		return sts, proxy, boot, err
	}

	// The proxy tier is created only behind a ready, bootstrapped data tier;
	// once it exists it follows the spec even while the data tier rolls.
	want := proxyReplicas(kvs)
	proxyExisted := proxy != nil && proxy.DeletionTimestamp == nil
	if want > 0 && (proxy != nil || (dataReady && boot.done)) {
		applied, err := applyUnlessUnchanged(ctx, c, c.deployments, kvs, proxyName(kvs), proxyDeployment(kvs, want))
		if err != nil {
			// The proxy that runs still counts for status: a transient error
			// must not make a Ready store look Degraded.
			return sts, proxy, boot, err
		}
		proxy = applied
	}
	// Clients get the client Service only behind a bootstrapped data tier:
	// a retried (or failed) restore would overwrite what they wrote. It
	// moves to the proxy only once that is ready, and back to the data tier
	// before the proxy goes.
	if boot.done {
		if _, err := applyUnlessUnchanged(ctx, c, c.services, kvs, kvs.Name, clientService(kvs, c.clientComponent(kvs, proxy, proxyExisted))); err != nil {
			return sts, proxy, boot, err
		}
	}
	if want == 0 && proxy != nil {
		err := c.kube.AppsV1().Deployments(kvs.Namespace).Delete(ctx, proxy.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &proxy.UID},
		})
		switch {
		case apierrors.IsNotFound(err): // gone already; the cache had not seen it
		case err != nil:
			return sts, proxy, boot, fmt.Errorf("delete proxy Deployment %s: %w", proxy.Name, err)
		default:
			c.recorder.Eventf(kvs, corev1.EventTypeNormal, "Deleted", "Deleted proxy Deployment %s (spec.proxy.replicas is 0)", proxy.Name)
		}
		proxy = nil
	}
	if held != nil {
		// Everything else follows the spec; the scale-up waits (and is
		// reported as the claim in its way).
		return sts, proxy, boot, held
	}
	return sts, proxy, boot, nil
}

// pausedView is how a paused store is judged: on the replicas the
// controller last applied (a StatefulSet scaled by hand is not what should
// run), naming the workloads whose spec is not what the store's spec asks.
type pausedView struct {
	replicas, proxyReplicas int32
	// held names each workload whose spec differs from what unpausing
	// would apply.
	held []string
}

// viewPaused judges a paused store's workloads without changing them.
// Only the workloads' specs are compared: metadata the apply also sets
// (an owner reference's version after an upgrade) changes nothing that
// runs.
func (c *Controller) viewPaused(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment) *pausedView {
	v := &pausedView{replicas: ptr.Deref(kvs.Spec.Replicas, 1)}
	if sts != nil {
		desired := statefulSet(kvs, v.replicas)
		live, ok := c.statefulSets.applied(sts, desired)
		if ok && live.Spec != nil && live.Spec.Replicas != nil {
			v.replicas = *live.Spec.Replicas
		}
		if !ok || !apiequality.Semantic.DeepEqual(live.Spec, desired.Spec) {
			v.held = append(v.held, "StatefulSet "+sts.Name+" does not run the store's spec")
		}
		if grow := c.claimsToGrow(kvs, sts, v.replicas); len(grow) > 0 {
			v.held = append(v.held, fmt.Sprintf("claims %s are to grow to %s", strings.Join(grow, ", "), kvs.Spec.Storage.VolumeSize.String()))
		}
	}
	svc, err := c.services.cached(kvs.Namespace, kvs.Name)
	switch {
	case err == nil && ours(svc, kvs):
		// The tier it should select is judged as apply judges it.
		desired := clientService(kvs, c.clientComponent(kvs, proxy, proxy != nil && proxy.DeletionTimestamp == nil))
		live, ok := c.services.applied(svc, desired)
		if !ok || !apiequality.Semantic.DeepEqual(live.Spec, desired.Spec) || !maps.Equal(live.Annotations, desired.Annotations) {
			v.held = append(v.held, "Service "+svc.Name+" does not have the store's spec")
		}
	case apierrors.IsNotFound(err) && sts != nil && recordedBootstrap(kvs).done:
		v.held = append(v.held, "Service "+kvs.Name+" is to be created")
	}
	want := proxyReplicas(kvs)
	switch {
	case proxy != nil:
		desired := proxyDeployment(kvs, want)
		live, ok := c.deployments.applied(proxy, desired)
		v.proxyReplicas = want
		if ok && live.Spec != nil && live.Spec.Replicas != nil {
			v.proxyReplicas = *live.Spec.Replicas
		}
		if want == 0 {
			v.held = append(v.held, "Deployment "+proxy.Name+" is to be deleted")
		} else if !ok || !apiequality.Semantic.DeepEqual(live.Spec, desired.Spec) {
			v.held = append(v.held, "Deployment "+proxy.Name+" does not run the store's spec")
		}
	case want > 0 && sts != nil:
		v.held = append(v.held, "Deployment "+proxyName(kvs)+" is to be created")
	}
	return v
}

// recordScheduledBackupEvent warns, once per failed scheduled backup.
func (c *Controller) recordScheduledBackupEvent(kvs *v1alpha1.KeyValueStore, before *metav1.Condition) {
	after := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	if after == nil || after.Status == metav1.ConditionTrue || tellsTheSame(before, after) {
		return
	}
	c.recorder.Event(kvs, corev1.EventTypeWarning, after.Reason, after.Message)
}

// clientComponent is what the client Service selects: the proxy tier once
// its Deployment is ready, and from then on while a proxy is wanted (a
// proxy scale-up or rollout must not send clients back and forth); the
// data tier otherwise. Turning the proxy on therefore never points clients
// at Pods that do not serve yet, nor does a proxy Deployment created again
// (existed is false: it was not there before this pass, deleted by a user
// or a pruning tool).
func (c *Controller) clientComponent(kvs *v1alpha1.KeyValueStore, proxy *appsv1.Deployment, existed bool) string {
	want := proxyReplicas(kvs)
	if want == 0 || proxy == nil || proxy.DeletionTimestamp != nil {
		return ComponentData // no proxy, or one going (a foreground deletion keeps it until its Pods are gone)
	}
	if live, err := c.services.cached(kvs.Namespace, kvs.Name); err == nil && ours(live, kvs) && existed &&
		live.Spec.Selector[LabelComponent] == ComponentProxy {
		return ComponentProxy
	}
	if deploymentReady(proxy, want) {
		return ComponentProxy
	}
	return ComponentData
}

// ownedStatefulSet is the store's StatefulSet from the cache, found by name
// and kept only if the store controls it (see ours).
func (c *Controller) ownedStatefulSet(kvs *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
	sts, err := c.statefulSets.cached(kvs.Namespace, kvs.Name)
	if err != nil || !ours(sts, kvs) {
		return nil
	}
	return sts
}

// ownedProxy is the store's proxy Deployment, as ownedStatefulSet.
func (c *Controller) ownedProxy(kvs *v1alpha1.KeyValueStore) *appsv1.Deployment {
	d, err := c.deployments.cached(kvs.Namespace, proxyName(kvs))
	if err != nil || !ours(d, kvs) {
		return nil
	}
	return d
}
