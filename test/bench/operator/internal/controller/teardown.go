package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	benchv1alpha1 "github.com/kvstore-io/kvstore-apiserver/test/bench/operator/api/v1alpha1"
)

// waitFallback looks again at a waiting step even if an event were missed.
const waitFallback = 30 * time.Second

// teardown runs the ordered steps of kvstore-apiserver's teardown (client
// Service gone, proxy down, final backup, data down, claims per policy) and releases the
// finalizer when all are done. Each step is judged from the cluster, so a
// restart resumes where the last run stopped.
func (r *KeyValueStoreReconciler) teardown(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(kvs, benchv1alpha1.TeardownFinalizer) {
		return ctrl.Result{}, nil
	}
	steps := []struct {
		reason string
		run    func(context.Context, *benchv1alpha1.KeyValueStore) (string, error) // "" when done
	}{
		{"TeardownCutOffClients", r.deleteClientService},
		{"TeardownScaleDownProxy", r.scaleDownProxy},
		{"TeardownFinalBackup", r.finalBackup},
		{"TeardownScaleDownData", r.scaleDownData},
		{"TeardownDeleteClaims", r.deleteClaims},
	}
	// In a namespace being deleted the namespace controller removes every
	// Pod and claim itself and no backup Pod can start: ask for the
	// scale-downs, skip the backup and the waits, and release the store
	// (as kvstore-apiserver's teardown does).
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: kvs.Namespace}, ns); err == nil && !ns.DeletionTimestamp.IsZero() {
		_, _ = r.scaleDownProxy(ctx, kvs)
		_, _ = r.scaleDownData(ctx, kvs)
		steps = nil
	}
	for _, s := range steps {
		waiting, err := s.run(ctx, kvs)
		if err != nil {
			_ = r.setTerminating(ctx, kvs, s.reason, "failed: "+err.Error())
			return ctrl.Result{}, fmt.Errorf("%s: %w", s.reason, err)
		}
		if waiting != "" {
			return ctrl.Result{RequeueAfter: waitFallback}, r.setTerminating(ctx, kvs, s.reason, waiting)
		}
	}
	controllerutil.RemoveFinalizer(kvs, benchv1alpha1.TeardownFinalizer)
	if err := r.Update(ctx, kvs); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	log.FromContext(ctx).Info("Teardown finished; finalizer released")
	return ctrl.Result{}, nil
}

// setTerminating records the running step in status.
func (r *KeyValueStoreReconciler) setTerminating(ctx context.Context, kvs *benchv1alpha1.KeyValueStore, reason, msg string) error {
	before := kvs.Status.Phase
	st := *kvs.Status.DeepCopy()
	st.Phase = benchv1alpha1.PhaseTerminating
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: benchv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: reason, Message: msg, ObservedGeneration: kvs.Generation})
	st.ObservedGeneration = kvs.Generation
	if err := r.updateStatus(ctx, kvs, st); err != nil {
		return err
	}
	r.recordPhaseChange(kvs, before)
	return nil
}

// scaleDownReplicas sets spec.replicas of obj to 0 unless it already is.
func (r *KeyValueStoreReconciler) scaleDown(ctx context.Context, obj client.Object, replicas *int32) error {
	if ptr.Deref(replicas, 1) == 0 {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	*replicas = 0
	if err := r.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("scale %s to 0: %w", obj.GetName(), err)
	}
	return nil
}

// podsLeft counts the component's Pods still there.
func (r *KeyValueStoreReconciler) podsLeft(ctx context.Context, kvs *benchv1alpha1.KeyValueStore, component string) (string, error) {
	pods := &corev1.PodList{}
	if err := r.listComponent(ctx, kvs, component, pods); err != nil {
		return "", fmt.Errorf("list %s Pods: %w", component, err)
	}
	if len(pods.Items) == 0 {
		return "", nil
	}
	return fmt.Sprintf("waiting for %d %s Pods to terminate", len(pods.Items), component), nil
}

// deleteClientService cuts off new clients before the final backup (the
// Service selects the data Pods when there is no proxy).
func (r *KeyValueStoreReconciler) deleteClientService(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (string, error) {
	svc := &corev1.Service{}
	err := r.Get(ctx, types.NamespacedName{Namespace: kvs.Namespace, Name: kvs.Name}, svc)
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(svc, kvs)) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if err := r.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("delete client Service: %w", err)
	}
	return "waiting for client Service " + svc.Name + " to go", nil
}

func (r *KeyValueStoreReconciler) scaleDownProxy(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (string, error) {
	d := &appsv1.Deployment{}
	err := r.Get(ctx, types.NamespacedName{Namespace: kvs.Namespace, Name: proxyName(kvs)}, d)
	if client.IgnoreNotFound(err) != nil {
		return "", err
	}
	if err == nil && metav1.IsControlledBy(d, kvs) {
		if err := r.scaleDown(ctx, d, d.Spec.Replicas); err != nil {
			return "", err
		}
	}
	return r.podsLeft(ctx, kvs, componentProxy)
}

func (r *KeyValueStoreReconciler) scaleDownData(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (string, error) {
	sts := &appsv1.StatefulSet{}
	err := r.Get(ctx, types.NamespacedName{Namespace: kvs.Namespace, Name: kvs.Name}, sts)
	if client.IgnoreNotFound(err) != nil {
		return "", err
	}
	if err == nil && metav1.IsControlledBy(sts, kvs) {
		if err := r.scaleDown(ctx, sts, sts.Spec.Replicas); err != nil {
			return "", err
		}
	}
	return r.podsLeft(ctx, kvs, componentData)
}

// finalBackup runs the final backup Job once the clients are off and
// records its outcome in the BackupSucceeded condition.
func (r *KeyValueStoreReconciler) finalBackup(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (string, error) {
	if kvs.Spec.Backup == nil || meta.IsStatusConditionTrue(kvs.Status.Conditions, benchv1alpha1.ConditionBackupSucceeded) {
		return "", nil
	}
	want := finalBackupJob(kvs)
	job := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKeyFromObject(want), job)
	if apierrors.IsNotFound(err) {
		if err := r.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create final backup Job: %w", err)
		}
		r.Recorder.Eventf(kvs, corev1.EventTypeNormal, "TeardownFinalBackup", "Started final backup Job %s", want.Name)
		return "waiting for final backup Job " + want.Name, nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			st := *kvs.Status.DeepCopy()
			now := metav1.Now()
			st.LastBackupTime = &now
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: benchv1alpha1.ConditionBackupSucceeded, Status: metav1.ConditionTrue,
				Reason: "FinalBackupSucceeded", Message: "final backup Job " + job.Name + " completed", ObservedGeneration: kvs.Generation})
			return "", r.updateStatus(ctx, kvs, st)
		case batchv1.JobFailed:
			return "final backup Job " + job.Name + " failed: " + c.Message, nil
		}
	}
	return "waiting for final backup Job " + job.Name, nil
}

// deleteClaims deletes the data claims when the policy says Delete, after
// reading the store afresh from the server.
func (r *KeyValueStoreReconciler) deleteClaims(ctx context.Context, kvs *benchv1alpha1.KeyValueStore) (string, error) {
	p := kvs.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil || p.WhenDeleted != benchv1alpha1.DeletePersistentVolumeClaimRetentionPolicyType {
		return "", nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.listComponent(ctx, kvs, componentData, claims); err != nil {
		return "", fmt.Errorf("list claims: %w", err)
	}
	left := 0
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.CreationTimestamp.Before(&kvs.CreationTimestamp) {
			continue // kept from an earlier store of the same name
		}
		left++
		if c.DeletionTimestamp != nil {
			continue
		}
		if err := r.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("delete claim %s: %w", c.Name, err)
		}
	}
	if left == 0 {
		return "", nil
	}
	return fmt.Sprintf("waiting for %d claims to go", left), nil
}
