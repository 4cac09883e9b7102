// Package controller is the operator's reconciler for bench.kvstore.io
// KeyValueStores: the reconcile of kvstore-apiserver's embedded controller
// (pkg/controller/keyvaluestore), written the kubebuilder way with
// controller-runtime's cached client, CreateOrUpdate and a finalizer.
package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	benchv1alpha1 "github.com/kvstore-io/kvstore-apiserver/test/bench/operator/api/v1alpha1"
)

// KeyValueStoreReconciler reconciles KeyValueStores.
type KeyValueStoreReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=bench.kvstore.io,resources=keyvaluestores;keyvaluestores/status;keyvaluestores/finalizers,verbs=*
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=*
// +kubebuilder:rbac:groups=core,resources=services;pods;persistentvolumeclaims;events,verbs=*
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=*
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=*

// Reconcile brings one store's workloads and status to its spec, or runs
// its teardown.
func (r *KeyValueStoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kvs := &benchv1alpha1.KeyValueStore{}
	if err := r.Get(ctx, req.NamespacedName, kvs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kvs.DeletionTimestamp.IsZero() {
		return r.teardown(ctx, kvs)
	}
	if controllerutil.AddFinalizer(kvs, benchv1alpha1.TeardownFinalizer) {
		if err := r.Update(ctx, kvs); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	sts, proxy, err := r.owned(ctx, kvs)
	if err != nil {
		return ctrl.Result{}, err
	}
	var applyErr error
	if !kvs.Spec.Paused {
		sts, proxy, applyErr = r.apply(ctx, kvs, sts, proxy)
	}
	if apierrors.HasStatusCause(applyErr, corev1.NamespaceTerminatingCause) {
		// The namespace controller deletes what we would recreate, and
		// the store next (its teardown then runs).
		return ctrl.Result{}, nil
	}
	before := kvs.Status.Phase
	st := observe(kvs, sts, proxy, applyErr)
	if err := r.updateStatus(ctx, kvs, st); err != nil {
		return ctrl.Result{}, errors.Join(applyErr, err)
	}
	r.recordPhaseChange(kvs, before)
	return ctrl.Result{}, applyErr
}

// owned reads the store's StatefulSet and proxy Deployment from the cache
// (nil when absent or not controlled by the store).
func (r *KeyValueStoreReconciler) owned(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (*appsv1.StatefulSet, *appsv1.Deployment, error) {
	sts := &appsv1.StatefulSet{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: kvs.Namespace, Name: kvs.Name}, sts); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
		sts = nil
	} else if !metav1.IsControlledBy(sts, kvs) {
		sts = nil
	}
	proxy := &appsv1.Deployment{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: kvs.Namespace, Name: proxyName(kvs)}, proxy); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
		proxy = nil
	} else if !metav1.IsControlledBy(proxy, kvs) {
		proxy = nil
	}
	return sts, proxy, nil
}

// createOrUpdate is controllerutil.CreateOrUpdate with the store as the
// controller of obj.
func (r *KeyValueStoreReconciler) createOrUpdate(ctx context.Context, kvs *benchv1alpha1.KeyValueStore, obj client.Object, mutate func()) error {
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		mutate()
		return controllerutil.SetControllerReference(kvs, obj, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("create or update %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// apply: headless Service, StatefulSet, PDB; the proxy once the data tier
// is ready; the client Service pointing at the proxy once it is ready.
func (r *KeyValueStoreReconciler) apply(ctx context.Context, kvs *benchv1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment) (*appsv1.StatefulSet, *appsv1.Deployment, error) {
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: headlessServiceName(kvs), Namespace: kvs.Namespace}}
	if err := r.createOrUpdate(ctx, kvs, headless, func() { mutateHeadlessService(kvs, headless) }); err != nil {
		return sts, proxy, err
	}
	desired := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: kvs.Name, Namespace: kvs.Namespace}}
	if err := r.createOrUpdate(ctx, kvs, desired, func() { mutateStatefulSet(kvs, desired, ptr.Deref(kvs.Spec.Replicas, 1)) }); err != nil {
		return sts, proxy, err
	}
	sts = desired
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: kvs.Name, Namespace: kvs.Namespace}}
	if err := r.createOrUpdate(ctx, kvs, pdb, func() { mutatePodDisruptionBudget(kvs, pdb) }); err != nil {
		return sts, proxy, err
	}
	dataReady := statefulSetReady(sts, kvs.Spec.Image, ptr.Deref(kvs.Spec.Replicas, 1))
	want := proxyReplicas(kvs)
	if want > 0 && (proxy != nil || dataReady) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: proxyName(kvs), Namespace: kvs.Namespace}}
		if err := r.createOrUpdate(ctx, kvs, d, func() { mutateProxyDeployment(kvs, d, want) }); err != nil {
			return sts, proxy, err
		}
		proxy = d
	}
	component := componentData
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: kvs.Name, Namespace: kvs.Namespace}}
	if err := r.Get(ctx, client.ObjectKeyFromObject(svc), svc); err == nil && metav1.IsControlledBy(svc, kvs) &&
		svc.Spec.Selector[labelComponent] == componentProxy && want > 0 && proxy != nil {
		component = componentProxy // once moved, clients stay on the proxy while one is wanted
	} else if want > 0 && deploymentReady(proxy, want) {
		component = componentProxy
	}
	if err := r.createOrUpdate(ctx, kvs, svc, func() { mutateClientService(kvs, svc, component) }); err != nil {
		return sts, proxy, err
	}
	if want == 0 && proxy != nil {
		if err := r.Delete(ctx, proxy, client.Preconditions{UID: &proxy.UID}); client.IgnoreNotFound(err) != nil {
			return sts, proxy, fmt.Errorf("delete proxy Deployment %s: %w", proxy.Name, err)
		}
		r.Recorder.Eventf(kvs, corev1.EventTypeNormal, "Deleted", "Deleted proxy Deployment %s (spec.proxy.replicas is 0)", proxy.Name)
		proxy = nil
	}
	return sts, proxy, nil
}

// updateStatus writes status when it changed.
func (r *KeyValueStoreReconciler) updateStatus(ctx context.Context, kvs *benchv1alpha1.KeyValueStore, st benchv1alpha1.KeyValueStoreStatus) error {
	if apiequality.Semantic.DeepEqual(kvs.Status, st) {
		return nil
	}
	kvs.Status = st
	if err := r.Status().Update(ctx, kvs); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}

// recordPhaseChange sends one event per phase transition; a new store's
// first phase is not one unless it is a Warning (as kvstore-apiserver's
// controller).
func (r *KeyValueStoreReconciler) recordPhaseChange(kvs *benchv1alpha1.KeyValueStore, before benchv1alpha1.KeyValueStorePhase) {
	after := kvs.Status.Phase
	if after == before || after == "" {
		return
	}
	eventType := corev1.EventTypeNormal
	if after == benchv1alpha1.PhaseFailed || after == benchv1alpha1.PhaseDegraded {
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
	if p := meta.FindStatusCondition(kvs.Status.Conditions, benchv1alpha1.ConditionProgressing); p != nil && p.Message != "" {
		msg += ": " + p.Message
	}
	r.Recorder.Event(kvs, eventType, string(after), msg)
}

// storeOfLabels maps a Pod, Job or claim to its store by label: Pods are
// controlled by the StatefulSet or ReplicaSet, claims by nobody, and the
// final backup Job outlives the store.
func storeOfLabels(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[labelManagedBy] != managedBy || l[labelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: l[labelInstance]}}}
}

// listComponent lists a component's objects of the store from the cache.
func (r *KeyValueStoreReconciler) listComponent(ctx context.Context, kvs *benchv1alpha1.KeyValueStore, component string, list client.ObjectList) error {
	sel := labels.SelectorFromSet(selectorLabels(kvs, component))
	return r.List(ctx, list, client.InNamespace(kvs.Namespace), client.MatchingLabelsSelector{Selector: sel})
}

// SetupWithManager registers the controller with default options.
func (r *KeyValueStoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	byLabel := handler.EnqueueRequestsFromMapFunc(storeOfLabels)
	return ctrl.NewControllerManagedBy(mgr).
		For(&benchv1alpha1.KeyValueStore{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&batchv1.Job{}, byLabel).
		// Pods and claims matter only to a teardown waiting for them to go.
		Watches(&corev1.Pod{}, byLabel, builder.WithPredicates(deletions)).
		Watches(&corev1.PersistentVolumeClaim{}, byLabel, builder.WithPredicates(deletions)).
		Named("keyvaluestore").
		Complete(r)
}

// deletions passes only delete events.
var deletions = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

var _ reconcile.Reconciler = &KeyValueStoreReconciler{}
