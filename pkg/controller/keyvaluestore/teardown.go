package keyvaluestore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Teardown steps, in order; each is the Progressing reason while it runs.
const (
	StepScaleDownProxy = "TeardownScaleDownProxy"
	StepFinalBackup    = "TeardownFinalBackup"
	StepScaleDownData  = "TeardownScaleDownData"
	StepDeleteClaims   = "TeardownDeleteClaims"

	ReasonBackupSucceeded = "FinalBackupSucceeded"
	ReasonBackupFailed    = "FinalBackupFailed"
	ReasonBackupSkipped   = "FinalBackupSkipped"
	// ReasonNamespaceTerminating: no backup Pod can start in a namespace being deleted.
	ReasonNamespaceTerminating = "NamespaceTerminating"
)

// waitFallback re-checks a waiting step even if an event were missed; the
// step's progress normally arrives as Pod or Job events first.
const waitFallback = 30 * time.Second

// teardown runs the ordered, resumable pre-delete steps. Each step reads the
// cluster's state, so a restart or a new leader picks up where it stopped.
func (c *Controller) teardown(ctx context.Context, kvs *v1alpha1.KeyValueStore) (result, error) {
	if !hasFinalizer(kvs) {
		return result{}, nil
	}
	logger := klog.FromContext(ctx)
	// In a namespace being deleted, the namespace controller deletes every
	// Pod and claim itself, in no particular order, and the StatefulSet
	// controller cannot even scale down there (it may need to write a
	// ControllerRevision, which is forbidden): waiting for Pods could hold
	// the namespace for a long time and protects nothing. Teardown then only
	// asks for the scale-down, skips the backup and releases the store.
	// Asked only where it changes something (a wait, a backup), so that a
	// store with nothing running costs no request to kube-apiserver.
	terminating := sync.OnceValue(func() bool { return c.namespaceTerminating(ctx, kvs.Namespace) })

	// 1. Proxy tier to zero, and wait for its Pods to go.
	if d := c.proxyDeployment(kvs); d != nil && (d.Spec.Replicas == nil || *d.Spec.Replicas != 0) {
		if err := c.scaleToZero(ctx, "deployments", kvs.Namespace, d.Name); err != nil {
			return result{}, err
		}
	}
	if n := c.countPods(kvs, ComponentProxy); n > 0 && !terminating() {
		return c.waitStep(ctx, kvs, StepScaleDownProxy, fmt.Sprintf("waiting for %d proxy Pods to terminate", n))
	}

	// 2. Final backup, unless there is none or the user skipped it.
	if res, done, err := c.finalBackup(ctx, kvs, terminating); !done || err != nil {
		return res, err
	}

	// 3. Data tier to zero; the StatefulSet removes Pods highest ordinal first.
	if sts := c.statefulSet(kvs); sts != nil && (sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0) {
		if err := c.scaleToZero(ctx, "statefulsets", kvs.Namespace, sts.Name); err != nil {
			return result{}, err
		}
	}
	if n := c.countPods(kvs, ComponentData); n > 0 && !terminating() {
		return c.waitStep(ctx, kvs, StepScaleDownData, fmt.Sprintf("waiting for %d data Pods to terminate", n))
	}

	// 4. Claims only when the policy says Delete; by default data outlives the
	// store. (In a terminating namespace they go with it.)
	if p := kvs.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType && !terminating() {
		claims, err := c.claims.PersistentVolumeClaims(kvs.Namespace).List(labels.SelectorFromSet(selectorLabels(kvs, ComponentData)))
		if err != nil {
			return result{}, err
		}
		for _, pvc := range claims {
			if pvc.DeletionTimestamp != nil {
				continue
			}
			err := c.kube.CoreV1().PersistentVolumeClaims(kvs.Namespace).Delete(ctx, pvc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pvc.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return result{}, fmt.Errorf("delete claim %s: %w", pvc.Name, err)
			}
		}
		if len(claims) > 0 {
			c.recorder.Eventf(kvs, corev1.EventTypeNormal, StepDeleteClaims, "Deleted %d PersistentVolumeClaims", len(claims))
		}
	}

	// 5. Release: remove only our finalizer, and only from the version we
	// examined, so a concurrent change is seen before the object can go. A
	// patch, not an update: the informer's copy is trimmed (see
	// CacheTransform) and must never be written back whole. No status write
	// for this step: the object is about to disappear.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      removeString(kvs.Finalizers, v1alpha1.TeardownFinalizer),
		"resourceVersion": kvs.ResourceVersion,
	}})
	if err != nil {
		return result{}, err
	}
	if _, err := c.kvs.KvstoreV1alpha1().KeyValueStores(kvs.Namespace).Patch(ctx, kvs.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsNotFound(err) {
			return result{}, nil
		}
		return result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	logger.Info("Teardown finished; finalizer released")
	return result{}, nil
}

// finalBackup runs step 2. done is false while the step is not finished.
func (c *Controller) finalBackup(ctx context.Context, kvs *v1alpha1.KeyValueStore, terminating func() bool) (res result, done bool, err error) {
	if kvs.Spec.Backup == nil || meta.IsStatusConditionTrue(kvs.Status.Conditions, v1alpha1.ConditionBackupSucceeded) {
		return result{}, true, nil
	}
	if cond := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBackupSucceeded); cond != nil &&
		(cond.Reason == ReasonBackupSkipped || cond.Reason == ReasonNamespaceTerminating) {
		return result{}, true, nil
	}
	if kvs.Annotations[v1alpha1.SkipFinalBackupAnnotation] == "true" {
		return c.skipBackup(ctx, kvs, ReasonBackupSkipped, "final backup skipped by annotation "+v1alpha1.SkipFinalBackupAnnotation+"=true")
	}

	job, err := c.jobs.Jobs(kvs.Namespace).Get(backupJobName(kvs))
	// A backup that already completed is recorded as such below, even if
	// the namespace has started terminating since.
	if done := err == nil && metav1.IsControlledBy(job, kvs) && jobCondition(job, batchv1.JobComplete); !done && terminating() {
		return c.skipBackup(ctx, kvs, ReasonNamespaceTerminating, "final backup impossible: namespace "+kvs.Namespace+" is terminating")
	}
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(job, kvs)) {
		_, err := c.kube.BatchV1().Jobs(kvs.Namespace).Apply(ctx, BackupJob(kvs), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is being deleted: no Pod can start in it and its
			// namespace controller is removing the data tier and claims anyway,
			// so waiting would only block the namespace forever.
			return c.skipBackup(ctx, kvs, ReasonNamespaceTerminating, "final backup impossible: namespace "+kvs.Namespace+" is terminating")
		}
		if err != nil {
			return result{}, false, fmt.Errorf("create backup job: %w", err)
		}
		c.recorder.Eventf(kvs, corev1.EventTypeNormal, StepFinalBackup, "Started final backup Job %s", backupJobName(kvs))
		res, err := c.waitStep(ctx, kvs, StepFinalBackup, "final backup Job started")
		return res, false, err
	}
	if err != nil {
		return result{}, false, err
	}

	switch {
	case jobCondition(job, batchv1.JobComplete):
		finished := c.now()
		if job.Status.CompletionTime != nil {
			finished = *job.Status.CompletionTime
		}
		c.recorder.Eventf(kvs, corev1.EventTypeNormal, ReasonBackupSucceeded, "Final backup Job %s succeeded", job.Name)
		err := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
			st := *k.Status.DeepCopy()
			st.LastBackupTime = &finished
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded, Status: metav1.ConditionTrue,
				Reason: ReasonBackupSucceeded, Message: "final backup Job " + job.Name + " succeeded", ObservedGeneration: k.Generation})
			return st
		})
		return result{}, err == nil, err
	case jobCondition(job, batchv1.JobFailed):
		msg := fmt.Sprintf("final backup Job %s failed (%s); retrying with backoff. To delete without a backup, annotate the store %s=true",
			job.Name, jobFailureReason(job), v1alpha1.SkipFinalBackupAnnotation)
		c.recorder.Event(kvs, corev1.EventTypeWarning, ReasonBackupFailed, msg)
		if err := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
			st := *k.Status.DeepCopy()
			st.Phase = v1alpha1.PhaseTerminating
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded, Status: metav1.ConditionFalse,
				Reason: ReasonBackupFailed, Message: msg, ObservedGeneration: k.Generation})
			return st
		}); err != nil {
			return result{}, false, err
		}
		// Remove the failed run; the rate-limited requeue starts the next one.
		propagation := metav1.DeletePropagationBackground
		if err := c.kube.BatchV1().Jobs(kvs.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
			PropagationPolicy: &propagation, Preconditions: &metav1.Preconditions{UID: &job.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			return result{}, false, err
		}
		return result{}, false, fmt.Errorf("%s", msg)
	default:
		res, err := c.waitStep(ctx, kvs, StepFinalBackup, fmt.Sprintf("waiting for final backup Job %s", job.Name))
		return res, false, err
	}
}

// namespaceTerminating reads the namespace (teardown is rare, so no
// informer); an error counts as "not terminating", the careful answer.
func (c *Controller) namespaceTerminating(ctx context.Context, name string) bool {
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	return err == nil && (ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating)
}

// skipBackup records, once, that teardown goes on without a final backup.
func (c *Controller) skipBackup(ctx context.Context, kvs *v1alpha1.KeyValueStore, reason, msg string) (result, bool, error) {
	c.recorder.Event(kvs, corev1.EventTypeWarning, reason, msg)
	err := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded, Status: metav1.ConditionFalse,
			Reason: reason, Message: msg, ObservedGeneration: k.Generation})
		return st
	})
	return result{}, err == nil, err
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobFailureReason(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason != "" {
			return c.Reason
		}
	}
	return "Failed"
}

// waitStep records the running step in status and waits for the next event.
func (c *Controller) waitStep(ctx context.Context, kvs *v1alpha1.KeyValueStore, step, msg string) (result, error) {
	return result{requeueAfter: waitFallback}, c.setStep(ctx, kvs, step, msg)
}

func (c *Controller) setStep(ctx context.Context, kvs *v1alpha1.KeyValueStore, step, msg string) error {
	return c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseTerminating
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: step, Message: msg, ObservedGeneration: k.Generation})
		st.ObservedGeneration = k.Generation
		return st
	})
}

func (c *Controller) scaleToZero(ctx context.Context, resource, namespace, name string) error {
	patch := []byte(`{"spec":{"replicas":0}}`)
	var err error
	switch resource {
	case "deployments":
		_, err = c.kube.AppsV1().Deployments(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	case "statefulsets":
		_, err = c.kube.AppsV1().StatefulSets(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("scale %s %s/%s to 0: %w", resource, namespace, name, err)
	}
	return nil
}

func (c *Controller) countPods(kvs *v1alpha1.KeyValueStore, component string) int {
	pods, err := c.pods.Pods(kvs.Namespace).List(labels.SelectorFromSet(selectorLabels(kvs, component)))
	if err != nil {
		return 0
	}
	return len(pods)
}

func hasFinalizer(kvs *v1alpha1.KeyValueStore) bool {
	for _, f := range kvs.Finalizers {
		if f == v1alpha1.TeardownFinalizer {
			return true
		}
	}
	return false
}

func removeString(in []string, s string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
