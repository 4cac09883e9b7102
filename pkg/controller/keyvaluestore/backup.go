package keyvaluestore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Reasons of the BackupSucceeded condition.
const (
	ReasonBackupSucceeded = "FinalBackupSucceeded"
	ReasonBackupFailed    = "FinalBackupFailed"
	ReasonBackupSkipped   = "FinalBackupSkipped"
	// ReasonNamespaceTerminating: no backup Pod can start in a namespace being deleted.
	ReasonNamespaceTerminating = "NamespaceTerminating"
	// ReasonBootstrapUnfinished: the store was deleted before its bootstrap
	// succeeded or failed for good; its data is a partial bootstrap.
	ReasonBootstrapUnfinished = "BootstrapUnfinished"
)

// Retries of a failed final backup: attempt n+1 starts backupBackoffBase·2^(n-1)
// after attempt n failed, at most backupBackoffMax later. The failed Jobs
// stay (for their logs), the last keepFailedBackupJobs of them.
const (
	backupBackoffBase    = 10 * time.Second
	backupBackoffMax     = 5 * time.Minute
	keepFailedBackupJobs = 3
)

// Step 3: a final backup, unless there is none or the user skipped it.

func (t *teardownRun) finalBackupDone(context.Context) (bool, error) {
	if t.kvs.Spec.Backup == nil {
		return true, nil
	}
	c := meta.FindStatusCondition(t.kvs.Status.Conditions, v1alpha1.ConditionBackupSucceeded)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonBackupSkipped || c.Reason == ReasonNamespaceTerminating ||
		c.Reason == ReasonBootstrapUnfinished), nil
}

// runFinalBackup takes the final backup as a KeyValueStoreBackup with
// reason Final (run like any other backup, see syncBackups), so that it is
// listed, with its outcome, after the store is gone.
func (t *teardownRun) runFinalBackup(ctx context.Context) (stepWait, error) {
	kvs := t.kvs
	if kvs.Annotations[v1alpha1.SkipFinalBackupAnnotation] == "true" {
		return stepWait{}, t.recordNoBackup(ctx, ReasonBackupSkipped,
			"final backup skipped by annotation "+v1alpha1.SkipFinalBackupAnnotation+"=true")
	}
	b, err := t.c.finalBackup(ctx, kvs)
	if err != nil {
		return stepWait{}, err
	}
	if b == nil {
		unfinished, err := t.bootstrapUnfinished()
		if err != nil {
			return stepWait{}, err
		}
		if unfinished {
			return stepWait{}, t.recordNoBackup(ctx, ReasonBootstrapUnfinished, unfinishedBootstrapMessage(kvs))
		}
	}
	if b != nil && b.DeletionTimestamp != nil {
		// Its data may be going (a finalizer removes it): it is no backup
		// to delete the claims behind. Once it is gone, another is taken.
		return stepWait{message: fmt.Sprintf("final backup %s is being deleted; a new one is taken once it is gone", b.Name), after: waitFallback}, nil
	}
	// A backup that completed is recorded as such, even if the namespace
	// has started terminating since.
	if b != nil && b.Status.Phase == v1alpha1.BackupPhaseCompleted {
		return stepWait{}, t.recordBackupSucceeded(ctx, b)
	}
	if t.terminating() {
		return stepWait{}, t.recordNoBackup(ctx, ReasonNamespaceTerminating,
			"final backup impossible: namespace "+kvs.Namespace+" is terminating")
	}
	if b == nil {
		return t.createFinalBackup(ctx)
	}
	failed := meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed)
	if failed == nil && b.Status.Phase == v1alpha1.BackupPhaseRunning {
		return stepWait{message: fmt.Sprintf("waiting for final backup %s: %s", b.Name, b.Status.Message)}, nil
	}
	if failed == nil { // not started: it waits for another backup, or its Job cannot be created
		return stepWait{message: fmt.Sprintf("waiting for final backup %s: %s. To delete the store without a final backup, annotate it %s=true",
			b.Name, b.Status.Message, v1alpha1.SkipFinalBackupAnnotation)}, nil
	}
	why := failed.Message
	if b.Status.Message != failed.Message {
		why += "; then " + b.Status.Message // the next attempt cannot start
	}
	failure := fmt.Sprintf("final backup %s: %s", b.Name, why)
	down, err := t.dataTierDown(ctx)
	if err != nil {
		return stepWait{}, err
	}
	msg := failure + down + fmt.Sprintf(". To delete the store without a final backup, annotate it %s=true", v1alpha1.SkipFinalBackupAnnotation)
	if deletesClaims(kvs) {
		msg += " (whenDeleted is Delete: its claims, and the data on them, then go without a backup)"
	}
	changed, before, err := t.c.setCondition(ctx, kvs, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded,
		Status: metav1.ConditionFalse, Reason: ReasonBackupFailed, Message: msg})
	if err != nil {
		return stepWait{}, err
	}
	// Once per failed attempt: not again when only the data tier's
	// readiness, which a crash-looping replica flips, changed the message.
	if changed && (before == nil || before.Reason != ReasonBackupFailed || !strings.HasPrefix(before.Message, failure)) {
		t.c.recorder.Event(kvs, corev1.EventTypeWarning, ReasonBackupFailed, msg)
	}
	return stepWait{message: msg}, nil
}

// dataTierDown says, as a clause to append, why no data replica can answer
// the final backup, if none can: a teardown does not apply the
// StatefulSet, so one deleted or scaled to zero by hand stays so, and every
// attempt fails. Any ready data Pod can answer, whatever the cache says
// of the StatefulSet (one unlabelled by hand is missing from it, one
// deleted with --cascade=orphan leaves its Pods running).
func (t *teardownRun) dataTierDown(ctx context.Context) (string, error) {
	pods, err := t.c.componentPods(t.kvs, ComponentData)
	if err != nil || slices.ContainsFunc(pods, podReady) {
		return "", err
	}
	sts, ok, err := ownedLive(ctx, t.c.statefulSets, t.kvs, t.kvs.Name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return fmt.Sprintf("; no data replica runs: the StatefulSet %s is gone, and a teardown does not recreate it", t.kvs.Name), nil
	case ptr.Deref(sts.Spec.Replicas, 1) == 0:
		return fmt.Sprintf("; no data replica runs: the StatefulSet %s is scaled to 0, and a teardown does not scale it up", sts.Name), nil
	}
	return fmt.Sprintf("; no data replica of StatefulSet %s is ready", sts.Name), nil
}

// bootstrapUnfinished: teardown stopped the bootstrap partway (or before it
// began). The data is then a partial restore no client has written to (the
// client Service comes only after the bootstrap), and a backup of it would
// be recorded Completed. A bootstrap Job that completed counts as done,
// recorded or not: its success may have been lost to the deletion's
// conflict after the client Service was created. A bootstrap that failed
// for good is not unfinished: a store of an earlier release had its client
// Service before its bootstrap, and clients may have written.
func (t *teardownRun) bootstrapUnfinished() (bool, error) {
	if !bootstrapUndecided(t.kvs) {
		return false, nil
	}
	jobs, err := t.c.bootstrapJobs(t.kvs)
	if err != nil {
		return false, err
	}
	return !bootstrapSucceeded(t.kvs, jobs), nil
}

func unfinishedBootstrapMessage(kvs *v1alpha1.KeyValueStore) string {
	at := "before its bootstrap started"
	if c := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped); c != nil {
		at = "during its bootstrap (" + c.Reason + ")"
	}
	msg := "no final backup: the store was deleted " + at + ", so its data is an unfinished bootstrap no client has written to"
	if from := kvs.Spec.Bootstrap.FromBackup; from != "" {
		msg += "; backup " + from + ", which it restored from, is left as it was"
	}
	return msg
}

// finalBackup is the store's Final backup (nil if not created yet), read
// live when the cache does not have it. A backup of that name that was not
// made for this store is in the way.
func (c *Controller) finalBackup(ctx context.Context, kvs *v1alpha1.KeyValueStore) (*v1alpha1.KeyValueStoreBackup, error) {
	name := finalBackupName(kvs)
	b, err := c.backups.KeyValueStoreBackups(kvs.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		b, err = c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(kvs.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get final backup %s: %w", name, err)
	}
	if !teardownsOwn(kvs, b) {
		return nil, &objectInTheWayError{kind: "KeyValueStoreBackup", namespace: kvs.Namespace, name: name,
			holder: fmt.Sprintf("it is not the Final backup of this store (store %q, reason %q)", b.Spec.StoreName, b.Spec.Reason)}
	}
	return b, nil
}

// teardownsOwn: b is the Final backup the teardown of kvs created (its
// name, store, reason and UID). Only that one has a Final backup's
// privileges: no attempt limit, waiting where another backup fails, running
// while a bootstrap is undecided. Anyone may create a backup with reason
// Final; any other one is run as a Manual backup is (found by review: a
// user's "Final" backup that could not run held every later backup of its
// store, and the teardown's own, behind it for ever).
func teardownsOwn(kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup) bool {
	return kvs != nil && b.Name == finalBackupName(kvs) && b.Spec.StoreName == kvs.Name &&
		b.Spec.Reason == v1alpha1.BackupReasonFinal && b.Annotations[storeUIDAnnotation] == string(kvs.UID)
}

func (t *teardownRun) createFinalBackup(ctx context.Context) (stepWait, error) {
	if t.kvs.Spec.Backup == nil {
		return stepWait{}, nil // removed from the spec meanwhile: no backup is asked for
	}
	b := &v1alpha1.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        finalBackupName(t.kvs),
			Namespace:   t.kvs.Namespace,
			Labels:      labelsFor(t.kvs, ComponentBackup),
			Annotations: map[string]string{storeUIDAnnotation: string(t.kvs.UID)},
		},
		Spec: v1alpha1.KeyValueStoreBackupSpec{StoreName: t.kvs.Name, Reason: v1alpha1.BackupReasonFinal},
	}
	_, err := t.c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(b.Namespace).Create(ctx, b, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return stepWait{}, t.recordNoBackup(ctx, ReasonNamespaceTerminating,
			"final backup impossible: namespace "+t.kvs.Namespace+" is terminating")
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier pass the cache has not seen yet.
	case exceededQuota(err):
		// A quota on backups frees up as they are deleted, which wakes
		// nobody: look again every 30 s rather than after the workqueue's
		// growing backoff (up to 1000 s), and say how not to wait.
		return stepWait{message: fmt.Sprintf("final backup %s refused: %v; tried again every 30 s. To delete the store without a final backup, annotate it %s=true",
			b.Name, err, v1alpha1.SkipFinalBackupAnnotation), warn: true}, nil
	case err != nil:
		return stepWait{}, fmt.Errorf("create final backup %s: %w", b.Name, err)
	default:
		t.c.recorder.Eventf(t.kvs, corev1.EventTypeNormal, "Created", "Created KeyValueStoreBackup %s (reason Final)", b.Name)
	}
	return stepWait{message: "final backup " + b.Name + " created"}, nil
}

func (t *teardownRun) recordBackupSucceeded(ctx context.Context, b *v1alpha1.KeyValueStoreBackup) error {
	finished := t.c.now()
	if b.Status.CompletionTime != nil {
		finished = *b.Status.CompletionTime
	}
	msg := fmt.Sprintf("final backup %s completed: %s", b.Name, b.Status.Message)
	cond := metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded, Status: metav1.ConditionTrue,
		Reason: ReasonBackupSucceeded, Message: msg}
	was, err := t.c.updateStatus(ctx, t.kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		if st.LastBackupTime == nil || st.LastBackupTime.Before(&finished) {
			st.LastBackupTime = &finished
		}
		cond.ObservedGeneration = k.Generation
		meta.SetStatusCondition(&st.Conditions, cond)
		return st
	})
	// Recorded by this write, not already on the object it went over.
	if err == nil && !tellsTheSame(meta.FindStatusCondition(was.Conditions, cond.Type), &cond) {
		t.c.recorder.Event(t.kvs, corev1.EventTypeNormal, ReasonBackupSucceeded, msg)
	}
	return err
}

// recordNoBackup records, once, that teardown goes on without a final backup.
func (t *teardownRun) recordNoBackup(ctx context.Context, reason, msg string) error {
	changed, _, err := t.c.setCondition(ctx, t.kvs, metav1.Condition{Type: v1alpha1.ConditionBackupSucceeded,
		Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	if changed && err == nil {
		t.c.recorder.Event(t.kvs, corev1.EventTypeWarning, reason, msg)
	}
	return err
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
