package keyvaluestore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Reasons of the Bootstrapped condition.
const (
	ReasonBootstrapRunning = "BootstrapRunning"
	// ReasonBootstrapStarting: attempt 1's Job exists, suspended: it has
	// not run, and is released once BootstrapRunning is recorded.
	ReasonBootstrapStarting  = "BootstrapStarting"
	ReasonBootstrapSucceeded = "BootstrapSucceeded"
	ReasonBootstrapRetrying  = "BootstrapAttemptFailed"
	ReasonBootstrapFailed    = "BootstrapFailed"
	ReasonBackupNotFound     = "BackupNotFound"
	ReasonBackupNotCompleted = "BackupNotCompleted"
	// ReasonBackupReplaced: fromBackup names another backup than the one
	// the first attempt restored (deleted and created again).
	ReasonBackupReplaced     = "BackupReplaced"
	ReasonWaitingForDataTier = "WaitingForDataTier"
	// ReasonBootstrapJobLost: the bootstrap's Jobs are gone before it
	// finished; it is not run again.
	ReasonBootstrapJobLost = "BootstrapJobLost"
	// ReasonClaimsHoldData: a data claim of the store's Pods was not made
	// by its StatefulSet (kept by an earlier store of the same name, or made
	// by hand): the bootstrap would overwrite what it holds, so it never runs.
	ReasonClaimsHoldData = "ClaimsHoldData"
	// bootstrapAttemptLimit is how many Jobs a bootstrap gets.
	bootstrapAttemptLimit = 3
)

// bootstrapState is where a store's bootstrap stands, for status and for
// gating the proxy tier.
type bootstrapState struct {
	// done: no bootstrap, or it succeeded. The proxy tier and phase Ready
	// wait for it.
	done bool
	// failed: it failed for good (or cannot run); the store is Failed.
	failed bool
	// condition is the Bootstrapped condition to record (nil: none).
	condition *metav1.Condition
	// requeueAfter: look again then (a backoff running out).
	requeueAfter time.Duration
	// heldUp: the running Job's Pod is refused or cannot start; its
	// condition is told with a Warning event.
	heldUp bool
}

// bootstrapJobs are the store's bootstrap Jobs, oldest attempt first.
func (c *Controller) bootstrapJobs(kvs *v1alpha1.KeyValueStore) ([]*batchv1.Job, error) {
	jobs, err := componentObjects[*batchv1.Job](c.jobs, kvs, ComponentBootstrap)
	if err != nil {
		return nil, fmt.Errorf("list bootstrap Jobs: %w", err)
	}
	jobs = slices.DeleteFunc(jobs, func(j *batchv1.Job) bool { return !metav1.IsControlledBy(j, kvs) })
	slices.SortFunc(jobs, func(a, b *batchv1.Job) int { return attemptOf(a) - attemptOf(b) })
	return jobs, nil
}

// bootstrapSucceeded: the Bootstrapped condition says so, or a Job of ours
// completed (the condition may not have been written before a crash). Either
// is enough: a bootstrap that succeeded never runs again.
func bootstrapSucceeded(kvs *v1alpha1.KeyValueStore, jobs []*batchv1.Job) bool {
	if meta.IsStatusConditionTrue(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped) {
		return true
	}
	return slices.ContainsFunc(jobs, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) })
}

// bootstrap runs the store's bootstrap Job once the data tier is ready.
func (c *Controller) bootstrap(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, dataReady bool) (bootstrapState, error) {
	if kvs.Spec.Bootstrap == nil {
		return bootstrapState{done: true}, nil
	}
	cond := func(s metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionBootstrapped, Status: s, Reason: reason, Message: msg, ObservedGeneration: kvs.Generation}
	}
	jobs, err := c.bootstrapJobs(kvs)
	if err != nil {
		return bootstrapState{}, err
	}
	if bootstrapSucceeded(kvs, jobs) {
		msg := "bootstrap succeeded"
		if i := slices.IndexFunc(jobs, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) }); i >= 0 {
			msg = fmt.Sprintf("bootstrap Job %s succeeded", jobs[i].Name)
		}
		if c := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped); c != nil && c.Status == metav1.ConditionTrue {
			msg = c.Message // never rewritten once recorded
		}
		return bootstrapState{done: true, condition: cond(metav1.ConditionTrue, ReasonBootstrapSucceeded, msg)}, nil
	}
	if st := recordedBootstrap(kvs); st.failed {
		return st, nil
	}
	if len(jobs) == 0 {
		if st, decided, err := c.bootstrapWithoutJobs(ctx, kvs, cond); err != nil || decided {
			return st, err
		}
		if !dataReady {
			return bootstrapState{condition: cond(metav1.ConditionFalse, ReasonWaitingForDataTier, "the bootstrap Job starts once every data replica is ready")}, nil
		}
		kept, err := c.keptClaims(ctx, kvs, sts)
		if err != nil {
			return bootstrapState{}, err
		}
		if len(kept) > 0 {
			return bootstrapState{failed: true, condition: cond(metav1.ConditionFalse, ReasonClaimsHoldData, fmt.Sprintf(
				"the data claims %s were not made by the store's StatefulSet (kept by an earlier store of the same name, or made by hand): the bootstrap would overwrite what they hold, so it does not run. "+
					"To keep that data, recreate the store without spec.bootstrap; to bootstrap, delete the store, then those claims (its teardown keeps them: they are not its own), and create it again",
				strings.Join(kept, ", ")))}, nil
		}
		return c.startBootstrap(ctx, kvs, nil, 1, cond)
	}
	latest := jobs[len(jobs)-1]
	if !jobCondition(latest, batchv1.JobFailed) {
		msg, heldUp := c.bootstrapRunning(kvs, latest)
		running := cond(metav1.ConditionFalse, ReasonBootstrapRunning, msg)
		if heldByUs(latest) {
			// The backup may have gone or been replaced since the Job was
			// created (a pass, or a pause, ago): judged again before the
			// Job runs, against the UID it was given.
			_, reason, msg, err := c.bootstrapSource(ctx, kvs, latest)
			if err != nil {
				return bootstrapState{}, err
			}
			if reason != "" {
				return sourceFailed(kvs, cond, reason, msg), nil
			}
			if err := c.releaseBootstrap(ctx, kvs, latest, running); err != nil {
				return bootstrapState{}, err
			}
		}
		return bootstrapState{condition: running, heldUp: heldUp}, nil
	}
	attempt := attemptOf(latest)
	why := jobFailureReason(latest) + ", Job " + latest.Name
	if held := bootstrapHeldUp(kvs, latest.Name, attempt); held != "" && !c.jobPodRan(kvs, latest, ComponentBootstrap) {
		why += "; " + held
	}
	if attempt >= bootstrapAttemptLimit {
		return bootstrapState{failed: true, condition: cond(metav1.ConditionFalse, ReasonBootstrapFailed,
			fmt.Sprintf("bootstrap attempt %d of %d failed (%s); no attempts left: %s",
				attempt, bootstrapAttemptLimit, why, bootstrapAgain(kvs)))}, nil
	}
	next := jobFailedAt(latest).Add(backupBackoff(attempt))
	if wait := next.Sub(c.now().Time); wait > 0 {
		msg := fmt.Sprintf("bootstrap attempt %d failed (%s); attempt %d starts at %s", attempt, why, attempt+1, next.UTC().Format(time.RFC3339))
		// As first recorded: the running message it read what held the
		// Pod up from is gone once the failure is recorded.
		if recorded := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped); recorded != nil &&
			recorded.Reason == ReasonBootstrapRetrying && strings.HasPrefix(recorded.Message, fmt.Sprintf("bootstrap attempt %d failed (", attempt)) {
			msg = recorded.Message
		}
		return bootstrapState{requeueAfter: wait, condition: cond(metav1.ConditionFalse, ReasonBootstrapRetrying, msg)}, nil
	}
	return c.startBootstrap(ctx, kvs, latest, attempt+1, cond)
}

// bootstrapRunning says how job, the bootstrap's Job that has not failed,
// goes: it runs, or its Pod is refused or cannot start (heldUp, told with
// a Warning event). Once the Job controller has decided the Job's end, the
// message recorded stays until the end is: its Pod, being terminated, no
// longer says what held it up.
func (c *Controller) bootstrapRunning(kvs *v1alpha1.KeyValueStore, job *batchv1.Job) (msg string, heldUp bool) {
	attempt := attemptOf(job)
	prefix := bootstrapAttemptPrefix(job.Name, attempt)
	if why := c.jobFailure(kvs, job, ComponentBootstrap); why != "" {
		return prefix + " cannot create its Pod: " + truncate(why, maxFailureMessage), true
	}
	if why := c.jobPodStuck(kvs, job, ComponentBootstrap); why != "" {
		return prefix + ": " + why, true
	}
	if recorded := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped); jobDecided(job) &&
		recorded != nil && recorded.Reason == ReasonBootstrapRunning {
		return recorded.Message, false
	}
	return fmt.Sprintf("bootstrap Job %s runs (attempt %d)", job.Name, attempt), false
}

// bootstrapAttemptPrefix starts the running message of attempt (Job job)
// whose Pod is held up.
func bootstrapAttemptPrefix(job string, attempt int) string {
	return fmt.Sprintf("bootstrap Job %s (attempt %d)", job, attempt)
}

// bootstrapHeldUp is what the store's recorded running message of attempt
// (Job job) told held its Pod up, "" if nothing did.
func bootstrapHeldUp(kvs *v1alpha1.KeyValueStore, job string, attempt int) string {
	recorded := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped)
	if recorded == nil || recorded.Reason != ReasonBootstrapRunning {
		return ""
	}
	return heldUpAfter(recorded.Message, bootstrapAttemptPrefix(job, attempt))
}

// bootstrapUndecided: the store has a bootstrap that has neither succeeded
// nor failed for good, so a restore may still be writing into its data.
func bootstrapUndecided(kvs *v1alpha1.KeyValueStore) bool {
	st := recordedBootstrap(kvs)
	return !st.done && !st.failed
}

// recordedBootstrap is where the bootstrap stands by the store's status
// alone, for a paused store (nothing starts or is released while paused).
// A bootstrap that failed for good stays Failed.
func recordedBootstrap(kvs *v1alpha1.KeyValueStore) bootstrapState {
	if kvs.Spec.Bootstrap == nil {
		return bootstrapState{done: true}
	}
	rec := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped).DeepCopy()
	switch {
	case rec == nil:
		return bootstrapState{}
	case rec.Status == metav1.ConditionTrue:
		return bootstrapState{done: true, condition: rec}
	case failedForGood(rec.Reason):
		return bootstrapState{failed: true, condition: rec}
	}
	return bootstrapState{condition: rec}
}

// failedForGood are the Bootstrapped reasons after which no bootstrap Job
// starts again. Recorded once, they stay: by then the store may have served
// clients, and a restore started later would overwrite what they wrote.
func failedForGood(reason string) bool {
	switch reason {
	case ReasonBootstrapFailed, ReasonBootstrapJobLost, ReasonBackupNotFound, ReasonBackupNotCompleted, ReasonBackupReplaced, ReasonClaimsHoldData:
		return true
	}
	return false
}

// bootstrapWithoutJobs decides, for a store with no bootstrap Job left,
// from what its status recorded: a bootstrap that failed for good stays
// failed, and one that was started but whose Jobs are gone (a fresh list
// confirms it) is lost and never run again. decided is false when a Job
// may start.
func (c *Controller) bootstrapWithoutJobs(ctx context.Context, kvs *v1alpha1.KeyValueStore,
	cond func(metav1.ConditionStatus, string, string) *metav1.Condition) (st bootstrapState, decided bool, err error) {
	recorded := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped)
	if recorded == nil {
		return bootstrapState{}, false, nil
	}
	switch recorded.Reason {
	case ReasonBootstrapRunning, ReasonBootstrapRetrying:
		live, err := c.liveBootstrapJobs(ctx, kvs)
		if err != nil {
			return bootstrapState{}, true, err
		}
		if len(live) > 0 {
			// A Job the cache has not seen yet, or one that lost the label
			// the cache selects on (it would never be seen, and the
			// bootstrap never decided): wait for it, decide nothing.
			if err := c.relabelJobs(ctx, live, labelsFor(kvs, ComponentBootstrap)); err != nil {
				return bootstrapState{}, true, err
			}
			return bootstrapState{requeueAfter: time.Second}, true, nil
		}
		st, lost, err := c.recordedSince(ctx, kvs)
		if err != nil || !lost {
			return st, err != nil || st.done || st.failed, err
		}
	default:
		return bootstrapState{}, false, nil
	}
	return bootstrapState{failed: true, condition: cond(metav1.ConditionFalse, ReasonBootstrapJobLost,
		"the bootstrap's Jobs are gone before it finished (deleted by a user, a TTL or a cleanup policy); it is not started again: without them the controller cannot tell how far it went, and a new run could overwrite data written since. "+
			"To keep the data as it is, recreate the store without spec.bootstrap (its claims are kept unless whenDeleted is Delete); to bootstrap again, delete the store and its claims and create it again")}, true, nil
}

// recordedSince reads the store from the server, whose record decides, not
// the cache's: lost when it says the bootstrap started (its Jobs are gone);
// otherwise the state it records (a success, a failure for good), or none
// (not started: a Job may start).
func (c *Controller) recordedSince(ctx context.Context, kvs *v1alpha1.KeyValueStore) (st bootstrapState, lost bool, err error) {
	fresh, err := c.kvs.KvstoreV1alpha1().KeyValueStores(kvs.Namespace).Get(ctx, kvs.Name, metav1.GetOptions{})
	if err != nil {
		return bootstrapState{}, false, fmt.Errorf("read store %s: %w", kvs.Name, err)
	}
	if fresh.UID != kvs.UID {
		return bootstrapState{}, false, fmt.Errorf("store %s was replaced (uid %s, cached %s)", kvs.Name, fresh.UID, kvs.UID)
	}
	if now := meta.FindStatusCondition(fresh.Status.Conditions, v1alpha1.ConditionBootstrapped); now != nil &&
		(now.Reason == ReasonBootstrapRunning || now.Reason == ReasonBootstrapRetrying) {
		return bootstrapState{}, true, nil
	}
	return recordedBootstrap(fresh), false, nil
}

// liveBootstrapJobs asks the server, not the cache, for the store's
// bootstrap Jobs: the cache may not have seen a Job just created.
func (c *Controller) liveBootstrapJobs(ctx context.Context, kvs *v1alpha1.KeyValueStore) ([]batchv1.Job, error) {
	list, err := c.kube.BatchV1().Jobs(kvs.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selectorLabels(kvs, ComponentBootstrap)).String()})
	if err != nil {
		return nil, fmt.Errorf("list bootstrap Jobs: %w", err)
	}
	return slices.DeleteFunc(list.Items, func(j batchv1.Job) bool { return !metav1.IsControlledBy(&j, kvs) }), nil
}

// relabelJobs puts back labels (the component's, labelsFor) on Jobs the
// store's objects control that lost them (by hand, or a tool's label
// cleanup): the controller's cache holds only objects labelled managed-by,
// finds a backup Job's store by its instance label and a store's Jobs by
// component, and Jobs are never re-applied.
func (c *Controller) relabelJobs(ctx context.Context, jobs []batchv1.Job, want map[string]string) error {
	for _, j := range jobs {
		if labels.SelectorFromSet(want).Matches(labels.Set(j.Labels)) {
			continue
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": j.UID, "labels": want}})
		if err != nil {
			return err
		}
		if _, err := c.kube.BatchV1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("label Job %s: %w", j.Name, err)
		}
	}
	return nil
}

// startBootstrap starts attempt n, after previous (nil for the first),
// from the backup attempt 1 was given and no other.
func (c *Controller) startBootstrap(ctx context.Context, kvs *v1alpha1.KeyValueStore, previous *batchv1.Job, attempt int,
	cond func(metav1.ConditionStatus, string, string) *metav1.Condition) (bootstrapState, error) {
	from, reason, msg, err := c.bootstrapSource(ctx, kvs, previous)
	if err != nil {
		return bootstrapState{}, err
	}
	if reason != "" {
		return sourceFailed(kvs, cond, reason, msg), nil
	}
	name := bootstrapJobName(kvs, attempt)
	// Attempt 1's Job is created suspended (BootstrapStarting: it cannot
	// have run) and released only right after BootstrapRunning is recorded
	// (releaseBootstrap). A Job gone while the status says Starting never
	// ran and may start again; one gone while it says Running may have run,
	// and is lost. Later attempts follow a recorded failure, which says as
	// much already.
	first := previous == nil
	job, err := applyUnlessUnchanged(ctx, c, c.jobKind, kvs, name, bootstrapJob(kvs, from, attempt, first))
	if err != nil {
		return bootstrapState{}, err
	}
	// Found on the server only (the cache missed it): one that lost its
	// label is never seen, nor released, unless it gets it back.
	if err := c.relabelJobs(ctx, []batchv1.Job{*job}, labelsFor(kvs, ComponentBootstrap)); err != nil {
		return bootstrapState{}, err
	}
	if first {
		return bootstrapState{requeueAfter: time.Second, condition: cond(metav1.ConditionFalse, ReasonBootstrapStarting,
			fmt.Sprintf("bootstrap Job %s created; it starts once this is recorded", name))}, nil
	}
	return bootstrapState{condition: cond(metav1.ConditionFalse, ReasonBootstrapRunning, fmt.Sprintf("bootstrap Job %s runs (attempt %d)", name, attempt))}, nil
}

// sourceFailed: the bootstrap's backup cannot be restored, for good.
func sourceFailed(kvs *v1alpha1.KeyValueStore, cond func(metav1.ConditionStatus, string, string) *metav1.Condition, reason, msg string) bootstrapState {
	return bootstrapState{failed: true, condition: cond(metav1.ConditionFalse, reason, msg+
		"; the bootstrap does not start later (the store may serve clients meanwhile, and a restore would overwrite what they wrote): "+bootstrapAgain(kvs))}
}

// bootstrapAgain is how to run a failed bootstrap again: a store created
// again on the claims its teardown keeps (whenDeleted Retain) is refused
// the bootstrap, since they may hold data (ClaimsHoldData). They are named
// by the store's UID: a name prefix would also match another store's
// (data-cache-eu-0 for data-cache-*).
func bootstrapAgain(kvs *v1alpha1.KeyValueStore) string {
	return fmt.Sprintf("to try again, delete the store, then its claims (kubectl delete pvc -n %s -l %s=%s; kept unless whenDeleted is Delete), and create it again",
		kvs.Namespace, LabelStoreUID, kvs.UID)
}

// heldByUs: attempt 1's Job as startBootstrap created it, suspended and
// never started. A Job suspended by anyone else, or once it ran, is not
// ours to release: resuming it would restart its restore from the start.
func heldByUs(job *batchv1.Job) bool {
	return attemptOf(job) == 1 && ptr.Deref(job.Spec.Suspend, false) && job.Status.StartTime == nil
}

// releaseBootstrap records BootstrapRunning, and only then lets the held
// Job run, in the same pass: the record comes first, so a Job that may
// have run is never taken for one that did not.
func (c *Controller) releaseBootstrap(ctx context.Context, kvs *v1alpha1.KeyValueStore, job *batchv1.Job, running *metav1.Condition) error {
	was, err := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		meta.SetStatusCondition(&st.Conditions, *running)
		return st
	})
	if err != nil {
		return err
	}
	c.recordBootstrapEvent(kvs, meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionBootstrapped), running, false)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": job.UID}, "spec": map[string]any{"suspend": false}})
	if err != nil {
		return err
	}
	if _, err := c.kube.BatchV1().Jobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("start bootstrap Job %s: %w", job.Name, err)
	}
	return nil
}

// bootstrapSource is the backup a bootstrap restores (nil if none), read
// from the server (a cache that lags may still hold a backup deleted or
// replaced): reason is set when it cannot be restored (missing, being
// deleted, not Completed, or not the backup the previous attempt, or the
// held attempt 1, was given).
func (c *Controller) bootstrapSource(ctx context.Context, kvs *v1alpha1.KeyValueStore, previous *batchv1.Job) (*v1alpha1.KeyValueStoreBackup, string, string, error) {
	name := kvs.Spec.Bootstrap.FromBackup
	if name == "" {
		return nil, "", "", nil
	}
	// The UID the previous attempt restored ("" for the first, or a Job
	// from before the annotation existed).
	want := ""
	if previous != nil {
		want = previous.Annotations[backupUIDAnnotation]
	}
	replaced := func(b *v1alpha1.KeyValueStoreBackup) bool { return want != "" && want != string(b.UID) }
	b, err := c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(kvs.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, ReasonBackupNotFound, fmt.Sprintf("spec.bootstrap.fromBackup: KeyValueStoreBackup %s/%s does not exist", kvs.Namespace, name), nil
	case err != nil:
		return nil, "", "", fmt.Errorf("get backup %s: %w", name, err)
	case b.DeletionTimestamp != nil:
		// A finalizer may hold it while its data is being removed.
		return nil, ReasonBackupNotFound, fmt.Sprintf("spec.bootstrap.fromBackup: KeyValueStoreBackup %s/%s is being deleted", kvs.Namespace, name), nil
	case b.Status.Phase != v1alpha1.BackupPhaseCompleted:
		return nil, ReasonBackupNotCompleted, fmt.Sprintf("spec.bootstrap.fromBackup: KeyValueStoreBackup %s is %s, not Completed", name, phaseOr(b.Status.Phase)), nil
	case replaced(b):
		return nil, ReasonBackupReplaced, fmt.Sprintf("spec.bootstrap.fromBackup: KeyValueStoreBackup %s (uid %s) is not the backup attempt %d was given (uid %s)",
			name, b.UID, attemptOf(previous), want), nil
	}
	return b, "", "", nil
}

func phaseOr(p v1alpha1.KeyValueStoreBackupPhase) string {
	if p == "" {
		return string(v1alpha1.BackupPhasePending)
	}
	return string(p)
}

// recordBootstrapEvent tells, once per change, how the bootstrap goes; a
// Warning when it fails or its Job's Pod is held up.
func (c *Controller) recordBootstrapEvent(kvs *v1alpha1.KeyValueStore, before, after *metav1.Condition, heldUp bool) {
	if after == nil || tellsTheSame(before, after) {
		return
	}
	eventType := corev1.EventTypeNormal
	if heldUp || after.Reason != ReasonBootstrapStarting && after.Reason != ReasonBootstrapRunning && after.Reason != ReasonBootstrapSucceeded && after.Reason != ReasonWaitingForDataTier {
		eventType = corev1.EventTypeWarning
	}
	c.recorder.Event(kvs, eventType, after.Reason, after.Message)
}
