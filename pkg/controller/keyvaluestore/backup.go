package keyvaluestore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Reasons of the BackupSucceeded condition.
const (
	ReasonBackupSucceeded = "FinalBackupSucceeded"
	ReasonBackupFailed    = "FinalBackupFailed"
	ReasonBackupSkipped   = "FinalBackupSkipped"
	// ReasonNamespaceTerminating: no backup Pod can start in a namespace being deleted.
	ReasonNamespaceTerminating = "NamespaceTerminating"
)

// Retries of a failed final backup: attempt n+1 starts backupBackoffBase·2^(n-1)
// after attempt n failed, at most backupBackoffMax later. The failed Jobs
// stay (for their logs), the last keepFailedBackupJobs of them.
const (
	backupBackoffBase    = 10 * time.Second
	backupBackoffMax     = 5 * time.Minute
	keepFailedBackupJobs = 3
)

// Step 2: a final backup, unless there is none or the user skipped it.

func (t *teardownRun) finalBackupDone() (bool, error) {
	if t.kvs.Spec.Backup == nil {
		return true, nil
	}
	c := meta.FindStatusCondition(t.kvs.Status.Conditions, v1alpha1.ConditionBackupSucceeded)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonBackupSkipped || c.Reason == ReasonNamespaceTerminating), nil
}

func (t *teardownRun) runFinalBackup(ctx context.Context) (stepWait, error) {
	kvs := t.kvs
	if kvs.Annotations[v1alpha1.SkipFinalBackupAnnotation] == "true" {
		return stepWait{}, t.recordNoBackup(ctx, ReasonBackupSkipped,
			"final backup skipped by annotation "+v1alpha1.SkipFinalBackupAnnotation+"=true")
	}
	jobs, err := t.c.finalBackupJobs(kvs)
	if err != nil {
		return stepWait{}, err
	}
	var latest *batchv1.Job
	if len(jobs) > 0 {
		latest = jobs[len(jobs)-1]
	}
	// A backup that completed is recorded as such, even if the namespace
	// has started terminating since.
	if latest != nil && jobCondition(latest, batchv1.JobComplete) {
		return stepWait{}, t.recordBackupSucceeded(ctx, latest)
	}
	if t.terminating() {
		return stepWait{}, t.recordNoBackup(ctx, ReasonNamespaceTerminating,
			"final backup impossible: namespace "+kvs.Namespace+" is terminating")
	}
	switch {
	case latest == nil:
		return t.startBackup(ctx, 1)
	case !jobCondition(latest, batchv1.JobFailed):
		return stepWait{message: fmt.Sprintf("waiting for final backup Job %s (attempt %d)", latest.Name, attemptOf(latest))}, nil
	}

	attempt := attemptOf(latest)
	next := jobFailedAt(latest).Add(backupBackoff(attempt))
	msg := fmt.Sprintf("final backup attempt %d failed (%s, Job %s); attempt %d starts at %s. "+
		"To delete the store without a final backup, annotate it %s=true",
		attempt, jobFailureReason(latest), latest.Name, attempt+1, next.UTC().Format(time.RFC3339), v1alpha1.SkipFinalBackupAnnotation)
	changed, err := t.c.setCondition(ctx, kvs, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded,
		Status: metav1.ConditionFalse, Reason: ReasonBackupFailed, Message: msg})
	if err != nil {
		return stepWait{}, err
	}
	if changed { // once per failed attempt
		t.c.recorder.Event(kvs, corev1.EventTypeWarning, ReasonBackupFailed, msg)
	}
	if wait := next.Sub(t.c.now().Time); wait > 0 {
		return stepWait{message: msg, after: wait}, nil
	}
	if err := t.c.pruneFailedBackups(ctx, jobs); err != nil {
		return stepWait{}, err
	}
	return t.startBackup(ctx, attempt+1)
}

// startBackup creates the Job of an attempt. Its name is deterministic, so
// a second pass before the cache sees the Job applies the same, unchanged.
func (t *teardownRun) startBackup(ctx context.Context, attempt int) (stepWait, error) {
	if t.kvs.Spec.Backup == nil {
		return stepWait{}, nil // removed from the spec meanwhile: no backup is asked for
	}
	name := finalBackupJobName(t.kvs, attempt)
	_, err := applyUnlessUnchanged(ctx, t.c, t.c.jobKind, t.kvs, name, finalBackupJob(t.kvs, attempt))
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return stepWait{}, t.recordNoBackup(ctx, ReasonNamespaceTerminating,
			"final backup impossible: namespace "+t.kvs.Namespace+" is terminating")
	}
	if err != nil {
		return stepWait{}, err
	}
	return stepWait{message: fmt.Sprintf("final backup Job %s started (attempt %d)", name, attempt)}, nil
}

func (t *teardownRun) recordBackupSucceeded(ctx context.Context, job *batchv1.Job) error {
	finished := t.c.now()
	if job.Status.CompletionTime != nil {
		finished = *job.Status.CompletionTime
	}
	msg := fmt.Sprintf("final backup Job %s succeeded (attempt %d)", job.Name, attemptOf(job))
	err := t.c.updateStatus(ctx, t.kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.LastBackupTime = &finished
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded, Status: metav1.ConditionTrue,
			Reason: ReasonBackupSucceeded, Message: msg, ObservedGeneration: k.Generation})
		return st
	})
	if err == nil {
		t.c.recorder.Event(t.kvs, corev1.EventTypeNormal, ReasonBackupSucceeded, msg)
	}
	return err
}

// recordNoBackup records, once, that teardown goes on without a final backup.
func (t *teardownRun) recordNoBackup(ctx context.Context, reason, msg string) error {
	changed, err := t.c.setCondition(ctx, t.kvs, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded,
		Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	if changed && err == nil {
		t.c.recorder.Event(t.kvs, corev1.EventTypeWarning, reason, msg)
	}
	return err
}

// finalBackupJobs are the store's backup Jobs, oldest attempt first.
func (c *Controller) finalBackupJobs(kvs *v1alpha1.KeyValueStore) ([]*batchv1.Job, error) {
	jobs, err := c.jobs.Jobs(kvs.Namespace).List(labels.SelectorFromSet(selectorLabels(kvs, ComponentBackup)))
	if err != nil {
		return nil, fmt.Errorf("list backup Jobs: %w", err)
	}
	// Only Jobs the controller made for this store count: a Job that merely
	// carries the labels (a hand-run backup) never stands in for the final one.
	jobs = slices.DeleteFunc(jobs, func(j *batchv1.Job) bool { return !metav1.IsControlledBy(j, kvs) })
	slices.SortFunc(jobs, func(a, b *batchv1.Job) int { return attemptOf(a) - attemptOf(b) })
	return jobs, nil
}

// pruneFailedBackups deletes all but the newest failed attempts' Jobs.
func (c *Controller) pruneFailedBackups(ctx context.Context, jobs []*batchv1.Job) error {
	failed := slices.DeleteFunc(slices.Clone(jobs), func(j *batchv1.Job) bool { return !jobCondition(j, batchv1.JobFailed) })
	if len(failed) <= keepFailedBackupJobs {
		return nil
	}
	propagation := metav1.DeletePropagationBackground
	for _, j := range failed[:len(failed)-keepFailedBackupJobs] {
		err := c.kube.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
			PropagationPolicy: &propagation, Preconditions: &metav1.Preconditions{UID: &j.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete failed backup Job %s: %w", j.Name, err)
		}
	}
	return nil
}

// attemptOf is the attempt number a backup Job carries (1 if none).
func attemptOf(job *batchv1.Job) int {
	if n, err := strconv.Atoi(job.Annotations[attemptAnnotation]); err == nil && n > 0 {
		return n
	}
	return 1
}

func backupBackoff(attempt int) time.Duration {
	d := backupBackoffBase
	for i := 1; i < attempt && d < backupBackoffMax; i++ {
		d *= 2
	}
	return min(d, backupBackoffMax)
}

// jobFailedAt is when the Job was marked failed (its creation if unknown).
func jobFailedAt(job *batchv1.Job) time.Time {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return job.CreationTimestamp.Time
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
