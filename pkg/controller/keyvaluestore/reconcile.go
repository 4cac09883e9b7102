package keyvaluestore

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	sts, proxy := c.ownedStatefulSet(kvs), c.ownedProxy(kvs)
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
	var inTheWay *objectInTheWayError
	errors.As(applyErr, &inTheWay)
	before := kvs.Status.Phase
	progressing := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionProgressing).DeepCopy()
	statusErr := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		return observe(k, sts, proxy, applyErr)
	})
	if statusErr == nil {
		// A refusal is told once, when it is first recorded, not per retry.
		if now := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionProgressing); now != nil && !sameCondition(progressing, now) &&
			(now.Reason == ReasonObjectInTheWay || now.Reason == ReasonApplyFailed) {
			c.recorder.Event(kvs, corev1.EventTypeWarning, now.Reason, now.Message)
		}
		c.recordPhaseChange(kvs, before)
	}
	if inTheWay != nil && statusErr == nil {
		// Nothing of ours changes when the user removes the object in the
		// way (it is not labelled ours): look again now and then, without
		// the error backoff.
		return result{requeueAfter: waitFallback}, nil
	}
	return result{}, errors.Join(applyErr, statusErr)
}

// apply writes the desired owned objects with server-side apply: only the
// fields we set are ours, server defaults never look like drift, and an
// unchanged object is not written at all.
func (c *Controller) apply(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment) (*appsv1.StatefulSet, *appsv1.Deployment, error) {
	if _, err := applyUnlessUnchanged(ctx, c, c.services, kvs, headlessServiceName(kvs), headlessService(kvs)); err != nil {
		return sts, proxy, err
	}
	applied, err := applyUnlessUnchanged(ctx, c, c.statefulSets, kvs, kvs.Name, statefulSet(kvs, ptr.Deref(kvs.Spec.Replicas, 1)))
	if err != nil {
		return sts, proxy, err
	}
	sts = applied
	if _, err := applyUnlessUnchanged(ctx, c, c.pdbs, kvs, kvs.Name, podDisruptionBudget(kvs)); err != nil {
		return sts, proxy, err
	}

	// The proxy tier is created only behind a ready data tier; once it exists
	// it follows the spec even while the data tier rolls.
	want := proxyReplicas(kvs)
	if want > 0 && (proxy != nil || statefulSetReady(sts, kvs.Spec.Image, ptr.Deref(kvs.Spec.Replicas, 1))) {
		applied, err := applyUnlessUnchanged(ctx, c, c.deployments, kvs, proxyName(kvs), proxyDeployment(kvs, want))
		if err != nil {
			// The proxy that runs still counts for status: a transient error
			// must not make a Ready store look Degraded.
			return sts, proxy, err
		}
		proxy = applied
	}
	// The client Service moves to the proxy only once it is ready, and back
	// to the data tier before the proxy goes.
	if _, err := applyUnlessUnchanged(ctx, c, c.services, kvs, kvs.Name, clientService(kvs, c.clientComponent(kvs, proxy))); err != nil {
		return sts, proxy, err
	}
	if want == 0 && proxy != nil {
		if err := c.kube.AppsV1().Deployments(kvs.Namespace).Delete(ctx, proxy.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &proxy.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			return sts, proxy, fmt.Errorf("delete proxy Deployment %s: %w", proxy.Name, err)
		}
		c.recorder.Eventf(kvs, corev1.EventTypeNormal, "Deleted", "Deleted proxy Deployment %s (spec.proxy.replicas is 0)", proxy.Name)
		proxy = nil
	}
	return sts, proxy, nil
}

// clientComponent is what the client Service selects: the proxy tier once
// its Deployment is ready, and from then on while a proxy is wanted (a
// proxy scale-up or rollout must not send clients back and forth); the
// data tier otherwise. Turning the proxy on therefore never points clients
// at Pods that do not serve yet.
func (c *Controller) clientComponent(kvs *v1alpha1.KeyValueStore, proxy *appsv1.Deployment) string {
	want := proxyReplicas(kvs)
	if want == 0 || proxy == nil {
		return ComponentData
	}
	if live, err := c.services.cached(kvs.Namespace, kvs.Name); err == nil && ours(live, kvs) &&
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
