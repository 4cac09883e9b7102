package keyvaluestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Reasons a KeyValueStoreBackup fails or waits, in its status and events.
const (
	ReasonStoreNotFound       = "StoreNotFound"
	ReasonBackupNotConfigured = "BackupNotConfigured"
	ReasonStoreDeleted        = "StoreDeleted"
	// ReasonBackupDeleted: the backup was deleted (a finalizer holds it)
	// and its attempt failed: no other attempt starts.
	ReasonBackupDeleted     = "BackupDeleted"
	ReasonAttemptsExhausted = "AttemptsExhausted"
	ReasonJobSucceeded      = "JobSucceeded"
	ReasonAttemptFailed     = "AttemptFailed"
	ReasonWaitingForBackup  = "WaitingForOtherBackup"
	// ReasonJobInTheWay: the attempt's Job name is taken by a Job the
	// backup does not control (another backup's, a bootstrap's, a user's).
	ReasonJobInTheWay = "JobInTheWay"
	// ReasonJobRefused: kube-apiserver refused the attempt's Job (a quota,
	// an admission policy, the controller's permissions).
	ReasonJobRefused = "JobRefused"
)

// Condition types of a KeyValueStoreBackup: Completed once it succeeded,
// Failed once it failed for good (as a Job's Complete and Failed).
const (
	BackupConditionCompleted = "Completed"
	BackupConditionFailed    = "Failed"
)

// backupAttemptLimit is how many Jobs a Manual or Scheduled backup gets. A
// Final backup has no limit: the store's data is deleted only after it, so
// it is retried (with backoff) until it succeeds or the user skips it.
const backupAttemptLimit = 3

// storeNameIndex indexes KeyValueStoreBackups by namespace/spec.storeName.
const storeNameIndex = "storeName"

func backupStoreKey(obj any) ([]string, error) {
	b, ok := obj.(*v1alpha1.KeyValueStoreBackup)
	if !ok {
		return nil, nil
	}
	return []string{b.Namespace + "/" + b.Spec.StoreName}, nil
}

// enqueueBackupStore maps a backup to its store's key: a store's backups are
// reconciled by the same sync as the store, one at a time, so two workers
// can never start two backup Jobs of one store.
func (c *Controller) enqueueBackupStore(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if b, ok := obj.(*v1alpha1.KeyValueStoreBackup); ok {
		c.queue.Add(b.Namespace + "/" + b.Spec.StoreName)
	}
}

// backupsOf are the backups naming the store, oldest first.
func (c *Controller) backupsOf(namespace, store string) ([]*v1alpha1.KeyValueStoreBackup, error) {
	objs, err := c.backupIndex.ByIndex(storeNameIndex, namespace+"/"+store)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.KeyValueStoreBackup, 0, len(objs))
	for _, o := range objs {
		// Copies: a status write replaces the backup it was given, and the
		// informer's objects are shared with every other reader.
		out = append(out, o.(*v1alpha1.KeyValueStoreBackup).DeepCopy())
	}
	slices.SortFunc(out, func(a, b *v1alpha1.KeyValueStoreBackup) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

func backupFinished(b *v1alpha1.KeyValueStoreBackup) bool {
	return b.Status.Phase == v1alpha1.BackupPhaseCompleted || b.Status.Phase == v1alpha1.BackupPhaseFailed
}

// syncBackups drives the store's unfinished backups: at most one Job runs
// at a time, the others wait in creation order. kvs is nil if the store
// does not exist (in the cache).
func (c *Controller) syncBackups(ctx context.Context, namespace, store string, kvs *v1alpha1.KeyValueStore) (result, error) {
	backups, err := c.backupsOf(namespace, store)
	if err != nil {
		return result{}, err
	}
	// One being deleted before it started is not started: its Job would
	// outlive it.
	backups = slices.DeleteFunc(backups, func(b *v1alpha1.KeyValueStoreBackup) bool {
		return backupFinished(b) || b.DeletionTimestamp != nil && b.Status.Attempts == 0
	})
	if len(backups) == 0 {
		return result{}, nil
	}
	if slices.ContainsFunc(backups, func(b *v1alpha1.KeyValueStoreBackup) bool { reason, _ := cannotRun(kvs, b); return reason != "" }) {
		// The cache may lag behind a store created (or given spec.backup,
		// or deleted and created again) with its backup: only a fresh read
		// may fail a backup for a missing, replaced, unconfigured or
		// deleting store.
		kvs = nil
		fresh, err := c.kvs.KvstoreV1alpha1().KeyValueStores(namespace).Get(ctx, store, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return result{}, err
		default:
			kvs = fresh
		}
	}
	var errs []error
	var runnable []*v1alpha1.KeyValueStoreBackup
	for _, b := range backups {
		if reason, msg := cannotRun(kvs, b); reason != "" {
			if b.Status.Attempts > 0 && (kvs == nil || kvs.Spec.Backup == nil && !takenForAnother(b, kvs)) {
				errs = append(errs, c.endStartedAttempt(ctx, b, reason, msg))
				continue
			}
			errs = append(errs, c.failBackup(ctx, b, reason, msg))
			continue
		}
		runnable = append(runnable, b)
	}
	if len(runnable) == 0 {
		return result{}, errors.Join(errs...)
	}
	// The one that runs: one already started, else the oldest.
	i := max(0, slices.IndexFunc(runnable, func(b *v1alpha1.KeyValueStoreBackup) bool { return b.Status.Attempts > 0 }))
	active := runnable[i]
	for _, b := range runnable {
		if b != active {
			msg := fmt.Sprintf("waiting for backup %s of the same store: one backup Job runs at a time", active.Name)
			if teardownsOwn(kvs, b) && active.Status.Message != "" {
				// The teardown repeats this: say what holds it up.
				msg += fmt.Sprintf(" (%s: %s)", active.Name, active.Status.Message)
			}
			errs = append(errs, c.markBackupWaiting(ctx, b, msg))
		}
	}
	if active.Status.Attempts == 0 && !teardownsOwn(kvs, active) && bootstrapUndecided(kvs) {
		// A backup taken while the restore writes would be recorded
		// Completed with half the data. The store's Bootstrapped condition
		// changing brings us back. (Teardown stops a bootstrap before its
		// Final backup.)
		errs = append(errs, c.markBackupWaiting(ctx, active, fmt.Sprintf("waiting for the bootstrap of KeyValueStore %s to finish", kvs.Name)))
		return result{}, errors.Join(errs...)
	}
	res, err := c.runBackup(ctx, kvs, active)
	return res, errors.Join(append(errs, err)...)
}

// endStartedAttempt ends a started backup whose store is gone or no longer
// configures backups as its attempt's Job ends: a Job that succeeded took
// the backup, one that still runs may, and no further attempt starts.
func (c *Controller) endStartedAttempt(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, reason, msg string) error {
	attempt := int(b.Status.Attempts)
	job, err := c.jobKind.get(ctx, b.Namespace, backupJobName(b, attempt))
	unrecorded := !attemptFailureRecorded(b, c.attemptFailedAt(b))
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get backup Job %s: %w", backupJobName(b, attempt), err)
	case !metav1.IsControlledBy(job, b):
	case jobCondition(job, batchv1.JobComplete):
		return c.completeBackup(ctx, b, job)
	case !jobCondition(job, batchv1.JobFailed):
		return nil // its end brings the store's key back
	default:
		unrecorded = !attemptFailureRecorded(b, jobFailedAt(job))
		msg += fmt.Sprintf("; attempt %d failed (%s, Job %s) and no other starts", attempt, jobFailureReason(job), job.Name)
	}
	return c.failAfterAttempt(ctx, b, reason, msg, unrecorded)
}

// failAfterAttempt fails b for good, with a reason that is not an
// attempt's, once its current attempt failed: that attempt's end is
// counted here unless it was recorded (and counted) already.
func (c *Controller) failAfterAttempt(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, reason, msg string, unrecorded bool) error {
	if err := c.failBackup(ctx, b, reason, msg); err != nil {
		return err
	}
	if unrecorded {
		observeBackupAttempt(b.Spec.Reason, false)
	}
	return nil
}

// cannotRun says why a backup can never run (reason ""  if it can).
func cannotRun(kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup) (reason, message string) {
	switch {
	case kvs == nil:
		return ReasonStoreNotFound, fmt.Sprintf("KeyValueStore %s/%s does not exist", b.Namespace, b.Spec.StoreName)
	case takenForAnother(b, kvs):
		// Taken for an earlier store of the same name: it must not back up
		// another store's data under that store's name.
		return ReasonStoreNotFound, fmt.Sprintf("KeyValueStore %s/%s it was taken for (%s) no longer exists; the store of that name now is another (uid %s)",
			b.Namespace, b.Spec.StoreName, takenFor(b), kvs.UID)
	case kvs.Spec.Backup == nil:
		return ReasonBackupNotConfigured, fmt.Sprintf("KeyValueStore %s has no spec.backup: nothing says how to back it up", kvs.Name)
	case kvs.DeletionTimestamp != nil && !teardownsOwn(kvs, b) && b.Status.Attempts == 0:
		return ReasonStoreDeleted, storeDeletedMessage(kvs)
	}
	return "", ""
}

// storeDeletedMessage says why no Manual or Scheduled backup runs for kvs,
// which is being deleted.
func storeDeletedMessage(kvs *v1alpha1.KeyValueStore) string {
	return fmt.Sprintf("KeyValueStore %s is being deleted; only its teardown's Final backup runs now (none if skipped)", kvs.Name)
}

// takenForAnother says b was taken for another store than kvs, an earlier
// one of the same name, as its annotation says: set at creation on the
// controller's own backups, before the first attempt on a Manual one. A
// Manual backup started by an earlier version has none; one whose first
// attempt started before kvs was created started for an earlier store (that
// store's teardown came between the two).
func takenForAnother(b *v1alpha1.KeyValueStoreBackup, kvs *v1alpha1.KeyValueStore) bool {
	if uid := b.Annotations[storeUIDAnnotation]; uid != "" {
		return uid != string(kvs.UID)
	}
	return b.Status.Attempts > 0 && b.Status.StartTime != nil && b.Status.StartTime.Before(&kvs.CreationTimestamp)
}

// takenFor names the store a backup taken for another was taken for.
func takenFor(b *v1alpha1.KeyValueStoreBackup) string {
	if uid := b.Annotations[storeUIDAnnotation]; uid != "" {
		return "uid " + uid
	}
	return "started " + b.Status.StartTime.UTC().Format(time.RFC3339) + ", before this store was created"
}

// runBackup moves the backup one step: start the next attempt's Job, wait
// for it, record its outcome, back off after a failure.
func (c *Controller) runBackup(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup) (result, error) {
	attempt := int(b.Status.Attempts)
	if attempt == 0 {
		return c.startBackupAttempt(ctx, kvs, b, 1)
	}
	gone := "its Job " + backupJobName(b, attempt) + " was deleted"
	job, err := c.backupJobOf(ctx, kvs, b, attempt)
	var inTheWay *objectInTheWayError
	if errors.As(err, &inTheWay) {
		job, err, gone = nil, nil, "its Job was replaced: "+inTheWay.Error()
	}
	if err != nil {
		return result{}, err
	}
	switch {
	case job == nil:
		// Deleted by someone (while it ran, or after it failed): that
		// attempt failed, at the time recorded when that was first seen.
		return c.afterFailedAttempt(ctx, kvs, b, attempt, c.attemptFailedAt(b), withHeldUp(gone, b, attempt))
	case jobCondition(job, batchv1.JobComplete):
		return result{}, c.completeBackup(ctx, b, job)
	case jobCondition(job, batchv1.JobFailed):
		why := jobFailureReason(job) + ", Job " + job.Name
		if kvs == nil || !c.jobPodRan(kvs, job, ComponentBackup) {
			why = withHeldUp(why, b, attempt)
		}
		return c.afterFailedAttempt(ctx, kvs, b, attempt, jobFailedAt(job), why)
	}
	// Running, or refused its Pod: the Job's events (and its FailedCreate
	// events) bring us back.
	return result{}, c.reportJobRefusal(ctx, kvs, b, job, attempt)
}

// reportJobRefusal says in the running backup's message whether its Job
// cannot create its Pod (a quota, a Pod Security level refuses it) or its
// Pod cannot start (an image, a Secret missing), with a Warning event when
// that is first recorded; without it the backup would read "runs" until
// its deadline failed it.
func (c *Controller) reportJobRefusal(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, job *batchv1.Job, attempt int) error {
	if b.Status.Phase != v1alpha1.BackupPhaseRunning {
		return nil // recorded as started only by startBackupAttempt
	}
	if jobDecided(job) {
		return nil // what held its Pod up stays told until the end is recorded
	}
	prefix := attemptPrefix(attempt, job.Name)
	msg, eventType, reason := prefix+runsSuffix, "", ""
	if kvs != nil {
		if why := c.jobFailure(kvs, job, ComponentBackup); why != "" {
			msg, eventType, reason = prefix+" cannot create its Pod: "+truncate(why, maxFailureMessage), corev1.EventTypeWarning, ReasonFailedCreate
		} else if why := c.jobPodStuck(kvs, job, ComponentBackup); why != "" {
			msg, eventType, reason = prefix+": "+why, corev1.EventTypeWarning, ReasonPodCannotStart
		}
	}
	return c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) { st.Message = msg }, eventType, reason)
}

// otherBackupJobRunning is a backup Job of the store, not b's, that has not
// finished (nil if none): the backup it ran for may have been deleted while
// it ran, or not have recorded it yet. Its end (activeDeadlineSeconds at
// the latest) brings the store's key back.
func (c *Controller) otherBackupJobRunning(kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup) (*batchv1.Job, error) {
	jobs, err := componentObjects[*batchv1.Job](c.jobs, kvs, ComponentBackup)
	if err != nil {
		return nil, fmt.Errorf("list backup Jobs: %w", err)
	}
	for _, j := range jobs {
		if !metav1.IsControlledBy(j, b) && mayRun(j) {
			return j, nil
		}
	}
	return nil, nil
}

// mayRun: the Job has not finished and runs Pods, or may start them. One
// suspended (by a queueing admission controller, say) or being deleted
// holds the next backup back only while Pods of it still run or terminate:
// otherwise it would hold every later backup of the store, the Final one
// too, for as long as it stays so.
func mayRun(j *batchv1.Job) bool {
	if jobCondition(j, batchv1.JobComplete) || jobCondition(j, batchv1.JobFailed) {
		return false
	}
	if j.Status.Active > 0 || ptr.Deref(j.Status.Terminating, 0) > 0 {
		return true
	}
	return !ptr.Deref(j.Spec.Suspend, false) && j.DeletionTimestamp == nil
}

// backupJobOf is the Job of the backup's attempt (nil if it does not
// exist), read live when the cache does not have it yet.
func (c *Controller) backupJobOf(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, attempt int) (*batchv1.Job, error) {
	name := backupJobName(b, attempt)
	job, err := c.jobKind.get(ctx, b.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get backup Job %s: %w", name, err)
	}
	if !metav1.IsControlledBy(job, b) {
		return nil, jobOfAnotherError(b, job)
	}
	// Found on the server only: one that lost its label is never seen in
	// the cache again, nor its end, unless it gets it back.
	if err := c.relabelJobs(ctx, []batchv1.Job{*job}, labelsFor(kvs, ComponentBackup)); err != nil {
		return nil, err
	}
	return job, nil
}

func (c *Controller) afterFailedAttempt(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, attempt int, failedAt time.Time, why string) (result, error) {
	recorded := attemptFailureRecorded(b, failedAt)
	if !teardownsOwn(kvs, b) && attempt >= backupAttemptLimit {
		return result{}, c.failBackup(ctx, b, ReasonAttemptsExhausted,
			fmt.Sprintf("attempt %d of %d failed (%s); no attempts left", attempt, backupAttemptLimit, why))
	}
	next := failedAt.Add(backupBackoff(attempt))
	msg := fmt.Sprintf("attempt %d failed (%s); attempt %d starts at %s", attempt, why, attempt+1, next.UTC().Format(time.RFC3339))
	// No other attempt starts for a backup being deleted (its Job would
	// write into what a finalizer removes), nor for a Manual or Scheduled
	// one of a store being torn down (its replicas may be gone): it ends.
	if endReason, end := endsAfterFailure(kvs, b); endReason != "" {
		return result{}, c.failAfterAttempt(ctx, b, endReason, fmt.Sprintf("attempt %d failed (%s); no other starts: %s", attempt, why, end), !recorded)
	}
	record := func() error {
		return c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) {
			st.Message = msg
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: BackupConditionFailed, Status: metav1.ConditionFalse,
				Reason: ReasonAttemptFailed, Message: msg})
			// The condition's time is when this attempt failed: what the
			// backoff counts from once its Job is gone (attemptFailedAt).
			meta.FindStatusCondition(st.Conditions, BackupConditionFailed).LastTransitionTime = metav1.NewTime(failedAt)
		}, corev1.EventTypeWarning, ReasonAttemptFailed)
	}
	if wait := next.Sub(c.now().Time); wait > 0 {
		if recorded {
			return result{requeueAfter: wait}, nil // as first recorded
		}
		return result{requeueAfter: wait}, record()
	}
	// Seen only once its backoff had run out (no leader meanwhile): the
	// failure is still recorded (its event, its count) before the next
	// attempt starts.
	if !recorded {
		if err := record(); err != nil {
			return result{}, err
		}
	}
	if err := c.pruneFailedJobs(ctx, b); err != nil {
		return result{}, err
	}
	return c.startBackupAttempt(ctx, kvs, b, attempt+1)
}

// endsAfterFailure says why b starts no other attempt after a failed one,
// if it does not.
func endsAfterFailure(kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup) (reason, why string) {
	switch {
	case b.DeletionTimestamp != nil:
		return ReasonBackupDeleted, "the backup is being deleted"
	case kvs != nil && kvs.DeletionTimestamp != nil && !teardownsOwn(kvs, b):
		return ReasonStoreDeleted, storeDeletedMessage(kvs)
	}
	return "", ""
}

// withHeldUp adds to why, the failure of b's attempt, what its running
// message told held the attempt's Pod up, if anything did: what a user
// needs to read once the deadline failed it, and the failure's message
// replaces the running one.
func withHeldUp(why string, b *v1alpha1.KeyValueStoreBackup, attempt int) string {
	if held := heldUp(b.Status.Message, attempt, backupJobName(b, attempt)); held != "" {
		return why + "; " + held
	}
	return why
}

// heldUp is what the running message of attempt (Job job) told held its
// Pod up (refused, or created and unable to start), "" if nothing did.
func heldUp(message string, attempt int, job string) string {
	if message == attemptPrefix(attempt, job)+runsSuffix {
		return ""
	}
	return heldUpAfter(message, attemptPrefix(attempt, job))
}

// heldUpAfter is what a running message that starts with prefix (a Job's
// attempt) says held its Pod up: " cannot create its Pod: …" or
// ": its Pod … cannot start: …" after the prefix; "" for another message.
func heldUpAfter(message, prefix string) string {
	rest, ok := strings.CutPrefix(message, prefix)
	if !ok {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(rest, ":"), " ")
}

// attemptPrefix starts every running message of attempt, and runsSuffix
// ends the one of an attempt nothing holds up.
func attemptPrefix(attempt int, job string) string {
	return fmt.Sprintf("attempt %d: Job %s", attempt, job)
}

const runsSuffix = " runs"

// attemptFailureRecorded: b's status records an attempt that failed at
// failedAt (to the second, as status keeps times).
func attemptFailureRecorded(b *v1alpha1.KeyValueStoreBackup, failedAt time.Time) bool {
	f := meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed)
	return f != nil && f.Reason == ReasonAttemptFailed && f.LastTransitionTime.Unix() == failedAt.Unix()
}

// attemptFailedAt is when the current attempt was recorded as failed, or
// now if it has not been: a Job deleted after its attempt failed, or
// deleted on every pass by a cleanup policy, must not move the backoff's
// start on every pass (the next attempt would never start).
func (c *Controller) attemptFailedAt(b *v1alpha1.KeyValueStoreBackup) time.Time {
	if f := meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed); f != nil &&
		f.Status == metav1.ConditionFalse && f.Reason == ReasonAttemptFailed {
		return f.LastTransitionTime.Time
	}
	return c.now().Time
}

// reachableReplicas is how many data replicas a backup Job is told of:
// spec.replicas, or fewer while the StatefulSet is asked for fewer (a
// scale-up held before another store's claim, or not applied yet). Never
// none: a StatefulSet scaled to zero (by the teardown, or by hand) has no
// replica to reach, and an empty list could let a script "succeed" with no
// data, so the Job is told of spec.replicas and fails instead.
func (c *Controller) reachableReplicas(kvs *v1alpha1.KeyValueStore) int32 {
	n := ptr.Deref(kvs.Spec.Replicas, 0)
	if sts := c.ownedStatefulSet(kvs); sts != nil && ptr.Deref(sts.Spec.Replicas, 0) > 0 {
		n = min(n, *sts.Spec.Replicas)
	}
	return n
}

// startBackupAttempt creates the attempt's Job, then records it. The Job's
// name is deterministic: after a crash between the two, the next pass finds
// the Job and records it.
func (c *Controller) startBackupAttempt(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, attempt int) (result, error) {
	name := backupJobName(b, attempt)
	existing, err := c.backupJobOf(ctx, kvs, b, attempt)
	var inTheWay *objectInTheWayError
	if errors.As(err, &inTheWay) {
		existing, err = c.jobInTheWay(ctx, b, name)
		if err != nil {
			return c.jobNotStarted(ctx, kvs, b, attempt, err)
		}
	}
	if err != nil {
		return result{}, err
	}
	if existing == nil {
		running, err := c.otherBackupJobRunning(kvs, b)
		if err != nil {
			return result{}, err
		}
		if running != nil {
			return result{requeueAfter: waitFallback}, c.markBackupWaiting(ctx, b, fmt.Sprintf(
				"waiting for backup Job %s of the same store to finish: one backup Job runs at a time", running.Name))
		}
	}
	if err := c.markStore(ctx, kvs, b); err != nil {
		return result{}, err
	}
	if existing == nil {
		if _, err := c.jobKind.apply(ctx, b.Namespace, backupJob(kvs, b, attempt, c.reachableReplicas(kvs))); err != nil {
			switch {
			case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				return result{}, c.failBackup(ctx, b, ReasonNamespaceTerminating, "namespace "+b.Namespace+" is terminating: no backup Pod can start")
			case exceededQuota(err) || ownerNotMapped(err):
				// Quota frees up as other Jobs finish: wait, as kube's own
				// controllers do for Pods. An owner version kube-apiserver
				// cannot map yet is mapped once its APIService exists.
				return c.jobWaits(ctx, b, attempt, ReasonJobRefused, fmt.Sprintf("Job %s refused: %v", name, err))
			case isPermanent(err):
				return c.jobNotCreated(ctx, kvs, b, attempt, ReasonJobRefused, fmt.Sprintf("Job %s refused: %v", name, err))
			}
			return result{}, fmt.Errorf("create backup Job %s: %w", name, err)
		}
		observeApply("Job", applyCreated)
	}
	start := c.now()
	if existing != nil && !existing.CreationTimestamp.IsZero() && existing.CreationTimestamp.Before(&start) {
		start = existing.CreationTimestamp // recorded only now: it started then
	}
	return result{}, c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) {
		st.Phase = v1alpha1.BackupPhaseRunning
		st.Attempts = int32(attempt)
		st.JobName = name
		if st.StartTime == nil {
			st.StartTime = &start
		}
		st.Message = fmt.Sprintf("attempt %d: Job %s runs", attempt, name)
		// The previous attempt's failure is over (its event stays); a
		// Failed condition again means this attempt failed.
		meta.RemoveStatusCondition(&st.Conditions, BackupConditionFailed)
	}, corev1.EventTypeNormal, "Started")
}

// jobNotCreated records that the attempt's Job cannot be created. A
// backup fails with reason: waiting, it would hold every later backup of
// its store behind it, silently. The teardown's own Final backup has no
// attempt limit (the store's data waits for it): it waits (jobWaits); the
// store's teardown shows the message.
func (c *Controller) jobNotCreated(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, attempt int, reason, why string) (result, error) {
	if !teardownsOwn(kvs, b) {
		return result{}, c.failBackup(ctx, b, reason, fmt.Sprintf("attempt %d cannot start: %s", attempt, why))
	}
	return c.jobWaits(ctx, b, attempt, reason, why)
}

// jobWaits says why the attempt's Job cannot be created yet, once (with a
// Warning event), and tries again after waitFallback.
func (c *Controller) jobWaits(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, attempt int, reason, why string) (result, error) {
	msg := fmt.Sprintf("attempt %d cannot start: %s; tried again every %s", attempt, why, waitFallback)
	return result{requeueAfter: waitFallback}, c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) {
		st.Message = msg
	}, corev1.EventTypeWarning, reason)
}

// exceededQuota says kube-apiserver's ResourceQuota admission refused a
// create: a 403 whose message the plugin words "exceeded quota: ..." (it
// carries no cause of its own).
func exceededQuota(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// ownerNotMapped: OwnerReferencesPermissionEnforcement refused a blocking
// owner reference whose version kube-apiserver cannot map (an upgrade before
// the APIService of that version exists; see preferredVersion).
func ownerNotMapped(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot find RESTMapping")
}

// errJobGoing: the Job of the attempt's name is an earlier backup's of the
// same name, or is being deleted; the garbage collector removes it soon.
var errJobGoing = errors.New("being deleted")

// jobInTheWay reads live the Job that the cache says b does not control:
// gone (nil: the cache was behind), b's after all, going (errJobGoing), or
// in the way for good (an *objectInTheWayError).
func (c *Controller) jobInTheWay(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, name string) (*batchv1.Job, error) {
	job, err := c.jobKind.live(ctx, b.Namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get backup Job %s: %w", name, err)
	case metav1.IsControlledBy(job, b):
		return job, nil
	}
	// A backup deleted and created again under the same name (kubectl
	// replace --force) finds the earlier one's Job until the garbage
	// collector has deleted it.
	if ref := metav1.GetControllerOfNoCopy(job); job.DeletionTimestamp != nil ||
		ref != nil && ref.Kind == "KeyValueStoreBackup" && ref.Name == b.Name && ref.UID != b.UID {
		return nil, errJobGoing
	}
	return nil, jobOfAnotherError(b, job)
}

// jobOfAnotherError: the Job with the name of b's attempt is not b's. Its
// labels may be the store's (a backup deleted with --cascade=orphan left
// it): what is missing is b's control, and the way on is deleting it.
func jobOfAnotherError(b *v1alpha1.KeyValueStoreBackup, job *batchv1.Job) *objectInTheWayError {
	held := "has no controller (its backup deleted with --cascade=orphan, or made by hand)"
	if ref := metav1.GetControllerOfNoCopy(job); ref != nil {
		held = fmt.Sprintf("is controlled by %s %s, uid %s", ref.Kind, ref.Name, ref.UID)
	}
	return &objectInTheWayError{kind: "Job", namespace: b.Namespace, name: job.Name,
		problem: fmt.Sprintf("is not KeyValueStoreBackup %s's (uid %s): it %s; delete it, and the backup runs", b.Name, b.UID, held)}
}

// jobNotStarted records why the attempt's Job is not there to be started:
// err is from jobInTheWay.
func (c *Controller) jobNotStarted(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, attempt int, err error) (result, error) {
	name := backupJobName(b, attempt)
	var inTheWay *objectInTheWayError
	switch {
	case errors.Is(err, errJobGoing):
		return result{requeueAfter: jobGoingWait}, c.markBackupWaiting(ctx, b,
			fmt.Sprintf("waiting for Job %s, of an earlier backup of this name or being deleted, to be gone", name))
	case errors.As(err, &inTheWay):
		return c.jobNotCreated(ctx, kvs, b, attempt, ReasonJobInTheWay, inTheWay.Error())
	}
	return result{}, err
}

// jobGoingWait is how often a backup looks again for a Job being deleted.
const jobGoingWait = 5 * time.Second

// markStore records on a Manual backup, before its first Job, the UID of
// the store it backs up (the controller's own backups carry it from their
// creation): a retry then never backs up another store of the same name.
// Not on a backup a user named as the teardown's Final backup would be:
// marked, it would pass for it (teardownsOwn), and one Completed long
// before the deletion would stand in for the final backup.
func (c *Controller) markStore(ctx context.Context, kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup) error {
	if b.Annotations[storeUIDAnnotation] != "" || b.Name == finalBackupName(kvs) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": b.ResourceVersion,
		"annotations":     map[string]string{storeUIDAnnotation: string(kvs.UID)},
	}})
	if err != nil {
		return err
	}
	updated, err := c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(b.Namespace).Patch(ctx, b.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("record the store's UID on backup %s: %w", b.Name, err)
	}
	*b = *updated
	return nil
}

func (c *Controller) completeBackup(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, job *batchv1.Job) error {
	done := c.now()
	if job.Status.CompletionTime != nil {
		done = *job.Status.CompletionTime
	}
	msg := fmt.Sprintf("Job %s succeeded (attempt %d)", job.Name, attemptOf(job))
	return c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) {
		st.Phase = v1alpha1.BackupPhaseCompleted
		st.CompletionTime = notBefore(done, st.StartTime)
		st.Message = msg
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: BackupConditionCompleted, Status: metav1.ConditionTrue, Reason: ReasonJobSucceeded, Message: msg})
		meta.RemoveStatusCondition(&st.Conditions, BackupConditionFailed)
	}, corev1.EventTypeNormal, string(v1alpha1.BackupPhaseCompleted))
}

// failBackup ends the backup as Failed with a reason.
func (c *Controller) failBackup(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, reason, msg string) error {
	done := c.now()
	return c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) {
		st.Phase = v1alpha1.BackupPhaseFailed
		st.CompletionTime = notBefore(done, st.StartTime)
		st.Message = msg
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: BackupConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	}, corev1.EventTypeWarning, reason)
}

// notBefore is t, or start if t is earlier. The server refuses a
// completion before the start, and the two can come from different clocks
// (the Job's from kube's, ours, an earlier leader's), or the start can be
// recorded only after the Job finished; refused, the backup would stay
// Running and hold every later backup of its store behind it.
func notBefore(t metav1.Time, start *metav1.Time) *metav1.Time {
	if start != nil && t.Before(start) {
		return start.DeepCopy()
	}
	return &t
}

// markBackupWaiting says, once, what a Pending backup waits for.
func (c *Controller) markBackupWaiting(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, msg string) error {
	return c.updateBackupStatus(ctx, b, func(st *v1alpha1.KeyValueStoreBackupStatus) {
		st.Phase = v1alpha1.BackupPhasePending
		st.Message = msg
	}, "", "")
}

// updateBackupStatus writes the backup's status if mutate changed it, and
// then sends an event of eventType (none if "") with the new message.
func (c *Controller) updateBackupStatus(ctx context.Context, b *v1alpha1.KeyValueStoreBackup, mutate func(*v1alpha1.KeyValueStoreBackupStatus), eventType, reason string) error {
	next := b.DeepCopy()
	if next.Status.Phase == "" {
		next.Status.Phase = v1alpha1.BackupPhasePending
	}
	mutate(&next.Status)
	for i := range next.Status.Conditions {
		next.Status.Conditions[i].ObservedGeneration = b.Generation
	}
	next.Status.ObservedGeneration = b.Generation
	// SetStatusCondition keeps lastTransitionTime of an unchanged condition,
	// so an unchanged status compares equal.
	if apiequality.Semantic.DeepEqual(b.Status, next.Status) {
		return nil
	}
	updated, err := c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(b.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("update status of backup %s: %w", b.Name, err)
	}
	if ended, succeeded := attemptEnded(b.Status, updated.Status); ended {
		observeBackupAttempt(b.Spec.Reason, succeeded)
	}
	*b = *updated
	if eventType != "" {
		c.recorder.Event(b, eventType, reason, b.Status.Message)
	}
	return nil
}

// attemptEnded says whether the status write from before to after records
// the end of an attempt (its success, its failure, or the last attempt's
// failure that exhausts them), and whether it succeeded: once per attempt,
// as the write happens once.
func attemptEnded(before, after v1alpha1.KeyValueStoreBackupStatus) (ended, succeeded bool) {
	if after.Phase == v1alpha1.BackupPhaseCompleted {
		return before.Phase != v1alpha1.BackupPhaseCompleted, true
	}
	now := meta.FindStatusCondition(after.Conditions, BackupConditionFailed)
	if now == nil {
		return false, false
	}
	was := meta.FindStatusCondition(before.Conditions, BackupConditionFailed)
	switch now.Reason {
	case ReasonAttemptFailed:
		return was == nil || was.Reason != now.Reason || !was.LastTransitionTime.Equal(&now.LastTransitionTime), false
	case ReasonAttemptsExhausted:
		return was == nil || was.Reason != now.Reason, false
	}
	return false, false
}

// pruneFailedJobs deletes all but the newest failed attempts' Jobs of a backup.
func (c *Controller) pruneFailedJobs(ctx context.Context, b *v1alpha1.KeyValueStoreBackup) error {
	var failed []*batchv1.Job
	for n := 1; n <= int(b.Status.Attempts); n++ {
		if j, err := c.jobKind.cached(b.Namespace, backupJobName(b, n)); err == nil && metav1.IsControlledBy(j, b) && jobCondition(j, batchv1.JobFailed) {
			failed = append(failed, j)
		}
	}
	return c.deleteOldJobs(ctx, failed, keepFailedBackupJobs)
}

// deleteOldJobs deletes all but the last keep of jobs (oldest first).
func (c *Controller) deleteOldJobs(ctx context.Context, jobs []*batchv1.Job, keep int) error {
	if len(jobs) <= keep {
		return nil
	}
	propagation := metav1.DeletePropagationBackground
	for _, j := range jobs[:len(jobs)-keep] {
		err := c.kube.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
			PropagationPolicy: &propagation, Preconditions: &metav1.Preconditions{UID: &j.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete failed Job %s: %w", j.Name, err)
		}
	}
	return nil
}
