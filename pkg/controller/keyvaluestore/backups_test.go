package keyvaluestore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

func (f *fixture) backup(name string) *v1alpha1.KeyValueStoreBackup {
	f.t.Helper()
	b, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return b
}

// Only a Job that may still run holds the next backup back: one finished,
// suspended or being deleted would hold it for as long as it stays so.
func TestMayRun(t *testing.T) {
	running := newJob("a-1", nil)
	finished := running.DeepCopy()
	finished.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	suspended := running.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	deleting := running.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	assert.True(t, mayRun(running))
	for _, j := range []*batchv1.Job{finished, suspended, deleting} {
		assert.False(t, mayRun(j))
	}
	// Until their Pods are gone.
	draining := suspended.DeepCopy()
	draining.Status.Terminating = ptr.To[int32](1)
	stillRunning := deleting.DeepCopy()
	stillRunning.Status.Active = 1
	assert.True(t, mayRun(draining))
	assert.True(t, mayRun(stillRunning))
}

// One Job at a time holds by the Jobs, not only by the backup records: a
// backup deleted while its Job runs leaves that Job running (the garbage
// collector removes it later, or never with --cascade=orphan), and the next
// backup started beside it (found by review).
func TestBackupWaitsForTheJobOfADeletedBackup(t *testing.T) {
	f, kvs := twoManualBackupsSynced(t)
	require.Equal(t, "first-1", f.backup("first").Status.JobName)
	f.refreshCache("ns")
	deleted := f.backup("first")
	require.NoError(t, f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Delete(context.Background(), "first", metav1.DeleteOptions{}))
	require.NoError(t, f.kvsInf.Kvstore().V1alpha1().KeyValueStoreBackups().Informer().GetIndexer().Delete(deleted))

	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, kube, "apply jobs second-1", "first-1 still runs")
	assert.Equal(t, v1alpha1.BackupPhasePending, f.backup("second").Status.Phase)
	assert.Contains(t, f.backup("second").Status.Message, "first-1")

	f.finishJob("first-1", batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Contains(t, kube, "apply jobs second-1", "it starts once that Job finished")
}

// twoManualBackupsSynced is a store with two Manual backups, "first" and
// "second", after one sync.
func twoManualBackupsSynced(t *testing.T) (*fixture, *v1alpha1.KeyValueStore) {
	kvs := newStore(withBackup)
	first := newBackup("first", v1alpha1.BackupReasonManual)
	second := newBackup("second", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
		b.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Minute))
	})
	f := newFixture(t, kvs, first, second)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	return f, kvs
}

// A Manual backup goes Pending → Running → Completed with one Job, and a
// second backup of the same store waits for it.
func TestBackupRunsOneJobAtATime(t *testing.T) {
	f, kvs := twoManualBackupsSynced(t)
	kube, own := f.writes()
	assert.Contains(t, kube, "apply jobs first-1")
	assert.NotContains(t, kube, "apply jobs second-1", "one backup Job per store at a time")
	assert.Contains(t, own, "update keyvaluestorebackups/status first")
	assert.Equal(t, v1alpha1.BackupPhaseRunning, f.backup("first").Status.Phase)
	assert.Equal(t, "first-1", f.backup("first").Status.JobName)
	assert.Equal(t, v1alpha1.BackupPhasePending, f.backup("second").Status.Phase)
	assert.Contains(t, f.backup("second").Status.Message, "waiting for backup first")

	// Running: nothing new.
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.NotContains(t, strings.Join(kube, " "), "apply jobs")

	f.finishJob("first-1", batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	b := f.backup("first")
	assert.Equal(t, v1alpha1.BackupPhaseCompleted, b.Status.Phase)
	require.NotNil(t, b.Status.CompletionTime)
	// Its status update brings the store's key back: the next one starts.
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Contains(t, kube, "apply jobs second-1", "the next waiting backup starts")

	// The store reports the newest completed backup.
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.NotNil(t, f.stored(kvs).Status.LastBackupTime)
	assert.True(t, f.stored(kvs).Status.LastBackupTime.Equal(b.Status.CompletionTime))
}

// A failing backup is retried with backoff up to its limit, then Failed.
func TestBackupFailsAfterItsAttempts(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	for attempt := 1; attempt <= backupAttemptLimit; attempt++ {
		f.finishJob(backupJobName(f.backup("b"), attempt), batchv1.JobFailed)
		f.refreshCache("ns")
		res, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		if attempt == backupAttemptLimit {
			break
		}
		assert.Equal(t, backupBackoff(attempt), res.requeueAfter)
		assert.Contains(t, f.backup("b").Status.Message, "attempt")
		f.now = f.now.Add(backupBackoff(attempt))
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Contains(t, kube, "apply jobs "+backupJobName(f.backup("b"), attempt+1))
	}
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
	assert.Equal(t, int32(backupAttemptLimit), b.Status.Attempts)
	assert.Contains(t, b.Status.Message, "no attempts left")
	c := meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed)
	require.NotNil(t, c)
	assert.Equal(t, ReasonAttemptsExhausted, c.Reason)
	assert.Contains(t, strings.Join(f.events(), "\n"), "Warning AttemptsExhausted")
}

// deleteJob removes a Job from the fake server and the cache, as a user, a
// TTL or a cleanup policy would.
func (f *fixture) deleteJob(name string) {
	f.t.Helper()
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	require.NoError(f.t, f.kube.BatchV1().Jobs("ns").Delete(context.Background(), name, metav1.DeleteOptions{}))
	require.NoError(f.t, f.kubeInf.Batch().V1().Jobs().Informer().GetIndexer().Delete(job))
}

// An attempt whose Job is gone (deleted while it ran, or after it failed)
// counts as failed once, at the time that was first seen: the next attempt
// starts after the backoff, and the wait writes nothing in between. Before
// the fix every pass took "now" as the failure time, so the next attempt
// never started and every pass rewrote the status with a new start time.
func TestBackupRetriedAfterItsJobIsDeleted(t *testing.T) {
	for name, gone := range map[string]func(f *fixture, job string){
		"deleted while it ran": func(f *fixture, job string) { f.deleteJob(job) },
		"deleted after it failed": func(f *fixture, job string) {
			f.finishJob(job, batchv1.JobFailed)
			f.refreshCache("ns")
			_, err := f.sync(f.stored(newStore(withBackup)))
			require.NoError(t, err)
			f.deleteJob(job)
		},
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore(withBackup)
			f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
			_, err := f.sync(kvs)
			require.NoError(t, err)
			first := backupJobName(f.backup("b"), 1)
			gone(f, first)
			f.refreshCache("ns")
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			msg := f.backup("b").Status.Message
			require.Contains(t, msg, "attempt 2 starts at")

			step := backupBackoff(1) / 4
			for range 3 {
				f.now = f.now.Add(step)
				f.refreshCache("ns")
				_, err = f.sync(f.stored(kvs))
				require.NoError(t, err)
				_, own := f.writes()
				assert.NotContains(t, own, "update keyvaluestorebackups/status b", "waiting out the backoff writes nothing")
				assert.Equal(t, msg, f.backup("b").Status.Message)
			}
			f.now = f.now.Add(step)
			f.refreshCache("ns")
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ := f.writes()
			assert.Contains(t, kube, "apply jobs "+backupJobName(f.backup("b"), 2), "the next attempt starts after the backoff")
			assert.Equal(t, int32(2), f.backup("b").Status.Attempts)
		})
	}
}

// The backoff after a deleted Job counts from that attempt's failure, not
// from an earlier attempt's: the earlier failure is cleared when the next
// attempt starts.
func TestBackupBackoffAfterALaterAttemptsJobIsDeleted(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.finishJob(backupJobName(f.backup("b"), 1), batchv1.JobFailed)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	f.now = f.now.Add(backupBackoff(1))
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Equal(t, int32(2), f.backup("b").Status.Attempts)
	assert.Nil(t, meta.FindStatusCondition(f.backup("b").Status.Conditions, BackupConditionFailed), "attempt 1's failure is over")

	f.now = f.now.Add(time.Hour) // attempt 1's failure is long past
	f.refreshCache("ns")
	f.deleteJob(backupJobName(f.backup("b"), 2))
	res, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "attempt 3 waits for its own backoff")
	assert.Equal(t, backupBackoff(2), res.requeueAfter)
}

// A backup that can never run fails at once with a reason, never stays Pending.
func TestBackupThatCannotRunFails(t *testing.T) {
	t.Run("store without spec.backup", func(t *testing.T) {
		kvs := newStore()
		f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
		_, err := f.sync(kvs)
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.BackupPhaseFailed, f.backup("b").Status.Phase)
		assert.Equal(t, ReasonBackupNotConfigured, meta.FindStatusCondition(f.backup("b").Status.Conditions, BackupConditionFailed).Reason)
	})
	t.Run("no such store", func(t *testing.T) {
		f := newFixture(t, nil, newBackup("b", v1alpha1.BackupReasonManual))
		_, err := f.c.sync(context.Background(), "ns/s")
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.BackupPhaseFailed, f.backup("b").Status.Phase)
		assert.Equal(t, ReasonStoreNotFound, meta.FindStatusCondition(f.backup("b").Status.Conditions, BackupConditionFailed).Reason)
	})
	t.Run("taken for an earlier store of the same name", func(t *testing.T) {
		// The old store's Final backup was still being retried when the
		// user skipped it and the store went; a new store took the name.
		// Before the fix it ran on against the new store's data, recorded
		// as the old store's Final backup, and held every backup of the
		// new store behind it.
		kvs := newStore(withBackup) // uid-1
		old := newBackup("s-final-old", v1alpha1.BackupReasonFinal, func(b *v1alpha1.KeyValueStoreBackup) {
			b.Annotations = map[string]string{storeUIDAnnotation: "uid-0"}
			b.Status.Phase, b.Status.Attempts = v1alpha1.BackupPhaseRunning, 2
		})
		f := newFixture(t, kvs, old)
		_, err := f.sync(kvs)
		require.NoError(t, err)
		b := f.backup("s-final-old")
		assertFailedFor(t, b, ReasonStoreNotFound, "uid-0")
		kube, _ := f.writes()
		assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "no Job runs for it against the new store")
	})
	t.Run("store in the server but not yet in the cache", func(t *testing.T) {
		kvs := newStore(withBackup)
		f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
		require.NoError(t, f.kvsInf.Kvstore().V1alpha1().KeyValueStores().Informer().GetIndexer().Delete(kvs))
		_, err := f.c.sync(context.Background(), "ns/s")
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.BackupPhaseRunning, f.backup("b").Status.Phase, "a fresh read finds the store")
	})
}

// Deleting a store never deletes its backups: their Jobs belong to them.
func TestBackupJobIsControlledByTheBackup(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), "b-1", metav1.GetOptions{})
	require.NoError(t, err)
	ref := metav1.GetControllerOf(job)
	require.NotNil(t, ref)
	assert.Equal(t, "KeyValueStoreBackup", ref.Kind)
	_, own := f.writes()
	for _, w := range own {
		assert.NotContains(t, w, "delete", "no backup is deleted")
	}
}

// rejectCompletionBeforeStart makes the fake server validate backup status
// as kvstore-apiserver does: completionTime never before startTime.
func (f *fixture) rejectCompletionBeforeStart() {
	f.kvs.PrependReactor("update", "keyvaluestorebackups", func(a core.Action) (bool, runtime.Object, error) {
		b := a.(core.UpdateAction).GetObject().(*v1alpha1.KeyValueStoreBackup)
		if st := b.Status; st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Before(st.StartTime) {
			return true, nil, apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("KeyValueStoreBackup").GroupKind(), b.Name,
				field.ErrorList{field.Invalid(field.NewPath("status", "completionTime"), st.CompletionTime, "must not be before startTime")})
		}
		return false, nil, nil
	})
}

// An attempt recorded only after its Job finished (the status write after
// the Job's creation was lost: a failover, our etcd down) still completes:
// its completion time is never before the recorded start, which the server
// would refuse on every pass while every later backup waited behind it.
func TestBackupRecordedAfterItsJobFinishedCompletes(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	f.rejectCompletionBeforeStart()
	lost := true
	f.kvs.PrependReactor("update", "keyvaluestorebackups", func(core.Action) (bool, runtime.Object, error) {
		if lost {
			lost = false
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		return false, nil, nil
	})
	_, err := f.sync(kvs)
	require.Error(t, err, "the attempt's status write is lost")
	kube, _ := f.writes()
	require.Contains(t, kube, "apply jobs b-1")

	f.finishJob("b-1", batchv1.JobComplete)
	f.now = f.now.Add(time.Minute)
	f.passes(kvs, 2) // record the attempt, then its outcome
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseCompleted, b.Status.Phase)
	assert.False(t, b.Status.CompletionTime.Before(b.Status.StartTime))
}

// newJob is the one fixture of a Job that is not the controller's: named
// name, controlled by the object ref names (nil for none).
func newJob(name string, ref *metav1.OwnerReference) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-job-" + name)}}
	if ref != nil {
		j.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return j
}

// A backup whose Job cannot be created (its name taken by another object,
// or the create refused) says so and never holds the store's other backups
// behind it. Before the fix the sync failed on every pass with nothing in
// the backup's status, and every later backup of the store waited forever.
func TestBackupWhoseJobCannotBeCreated(t *testing.T) {
	storeRef := metav1.NewControllerRef(newStore(), v1alpha1.SchemeGroupVersion.WithKind("KeyValueStore"))
	later := func() *v1alpha1.KeyValueStoreBackup {
		return newBackup("later", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
			b.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Minute))
		})
	}
	t.Run("its Job's name is taken", func(t *testing.T) {
		// "s-bootstrap" attempt 1 is "s-bootstrap-1": the store's bootstrap Job.
		kvs := newStore(withBackup)
		f := newFixture(t, kvs, newBackup("s-bootstrap", v1alpha1.BackupReasonManual), later(), newJob("s-bootstrap-1", storeRef))
		_, err := f.sync(kvs)
		require.NoError(t, err)
		b := f.backup("s-bootstrap")
		assertFailedFor(t, b, ReasonJobInTheWay, "s-bootstrap-1")
		// What is missing is the backup's control, and the way on is
		// deleting the Job (found by live review: it said the Job lacked
		// the store's labels, which it had, and to rename the store).
		assert.Contains(t, b.Status.Message, "is not KeyValueStoreBackup s-bootstrap's (uid ")
		assert.Contains(t, b.Status.Message, "it is controlled by KeyValueStore s, uid uid-1; delete it, and the backup runs")
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Contains(t, kube, "apply jobs later-1", "the next backup runs")
		_, err = f.kube.BatchV1().Jobs("ns").Get(context.Background(), "s-bootstrap-1", metav1.GetOptions{})
		assert.NoError(t, err, "the Job in the way is left alone")
	})
	t.Run("its Job's name is held by an earlier backup of that name", func(t *testing.T) {
		// kubectl replace --force: the earlier backup's Job goes with it,
		// once the garbage collector gets to it.
		kvs := newStore(withBackup)
		earlier := newBackup("b", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) { b.UID = "uid-earlier" })
		f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual),
			newJob("b-1", metav1.NewControllerRef(earlier, v1alpha1.SchemeGroupVersion.WithKind("KeyValueStoreBackup"))))
		res, err := f.sync(kvs)
		require.NoError(t, err)
		assertBackupWaits(t, f.backup("b"), res, jobGoingWait, "waiting for Job b-1")
		f.deleteJob("b-1")
		f.refreshCache("ns")
		_, err = f.sync(kvs)
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Contains(t, kube, "apply jobs b-1")
	})
	t.Run("the cache still holds a Job the server deleted", func(t *testing.T) {
		kvs := newStore(withBackup)
		f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
		f.cache(newJob("b-1", nil))
		_, err := f.sync(kvs)
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Contains(t, kube, "apply jobs b-1", "read live before calling it in the way")
	})
	for name, refusal := range map[string]string{
		// Quota frees up as other Jobs finish.
		"its Job is refused by a quota": "exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=10, limited: count/jobs.batch=10",
		// OwnerReferencesPermissionEnforcement during an upgrade, before the
		// APIService of the owner's version exists. Before the fix the
		// backup failed for good (found by review).
		"its Job names an owner version kube-apiserver cannot map yet": "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion kvstore.io/v1beta1 Kind KeyValueStoreBackup: no matches for kind",
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore(withBackup)
			f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
			f.refuseJobs(refusal)
			res, err := f.sync(kvs)
			require.NoError(t, err)
			assertBackupWaits(t, f.backup("b"), res, waitFallback, refusal)
			assert.Contains(t, strings.Join(f.events(), "\n"), "Warning JobRefused")
		})
	}
	t.Run("its Job is refused by a policy", func(t *testing.T) {
		kvs := newStore(withBackup)
		f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual), later())
		f.refuseJobs(`admission webhook "policy.example.com" denied the request: hostPath volumes are not allowed`)
		_, err := f.sync(kvs)
		require.NoError(t, err)
		b := f.backup("b")
		assertFailedFor(t, b, ReasonJobRefused, "denied the request")
		assert.Contains(t, strings.Join(f.events(), "\n"), "Warning JobRefused")
	})
	t.Run("a user's backup with reason Final: its Job is refused", func(t *testing.T) {
		// Anyone may create a backup with reason Final; only the teardown's
		// own has a Final backup's privileges. Before the fix this one waited
		// for ever, and every later backup of the store waited behind it
		// (found by review).
		kvs := newStore(withBackup)
		f := newFixture(t, kvs, newBackup("mine", v1alpha1.BackupReasonFinal), later())
		f.refuseJobs(`admission webhook "policy.example.com" denied the request`)
		_, err := f.sync(kvs)
		require.NoError(t, err)
		assertFailedFor(t, f.backup("mine"), ReasonJobRefused, "denied the request")
	})
	t.Run("a Final backup's Job is refused", func(t *testing.T) {
		kvs := newStore(withBackup, deleting)
		f := newFixture(t, kvs)
		_, err := f.sync(kvs)
		require.NoError(t, err)
		f.refreshCache("ns")
		f.refuseJobs(`admission webhook "policy.example.com" denied the request`)
		res, err := f.sync(f.stored(kvs))
		require.NoError(t, err, "not a sync error: the rate limiter must not drive retries")
		// A Final backup has no attempt limit: it is tried again.
		assertBackupWaits(t, f.backup(finalBackupName(kvs)), res, waitFallback, "denied the request")
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		c := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing)
		require.NotNil(t, c)
		assert.Contains(t, c.Message, "denied the request", "the store says why its teardown waits")
	})
}

// A teardown whose Final backup waits for a backup that started before it
// says what holds that one up (found by review: it said only that one
// backup Job runs at a time, not that the other one's Pod was refused).
func TestTeardownWaitingForAnotherBackupSaysWhatHoldsItUp(t *testing.T) {
	f, kvs, job := runningBackup(t)
	f.cache(failedCreate(job, testNow))
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	f.deleteStore(kvs)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs)) // deletes the client Service
	require.NoError(t, err)
	require.NoError(t, f.kubeInf.Core().V1().Services().Informer().GetIndexer().Delete(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: kvs.Name, Namespace: kvs.Namespace}}))
	f.passes(kvs, 3) // the Final backup, its wait, the store told
	want := "waiting for backup b of the same store: one backup Job runs at a time (b: attempt 1: Job b-1 cannot create its Pod: " + refusal + ")"
	assert.Equal(t, want, f.backup(finalBackupName(kvs)).Status.Message)
	c := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, want)
}

// A backup whose Job already runs is not failed when the store's
// spec.backup is removed meanwhile: its Job decides, and a success is
// recorded Completed; no further attempt starts (found by review: it read
// Failed/BackupNotConfigured while its Job went on and succeeded).
func TestAStartedBackupEndsAsItsJobDoesWhenSpecBackupIsRemoved(t *testing.T) {
	f, kvs, _ := runningBackup(t)
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Backup = nil })
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseRunning, b.Status.Phase, "its Job still runs")

	f.finishJob("b-1", batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupPhaseCompleted, f.backup("b").Status.Phase)
}

// A started backup taken for an earlier store of the same name fails as
// StoreNotFound whatever the new store's spec: its Job, which went on
// against the new store's Pods, is not recorded as its backup (found by
// review of the rule above).
func TestAStartedBackupOfAnEarlierStoreFailsWhateverItsJobDid(t *testing.T) {
	f, kvs, _ := runningBackup(t)
	b := f.backup("b")
	b.Annotations[storeUIDAnnotation] = "uid-0"
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Backup = nil })
	f.finishJob("b-1", batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	b = f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
	assert.Equal(t, ReasonStoreNotFound, meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed).Reason)
}

// A backup being deleted after it started (a finalizer removing its data)
// starts no other attempt when this one fails (found by review).
func TestABackupBeingDeletedStartsNoOtherAttempt(t *testing.T) {
	f, kvs, _ := runningBackup(t)
	b := f.backup("b")
	b.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	b.Finalizers = []string{"example.com/remove-data"}
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.finishJob("b-1", batchv1.JobFailed)
	f.now = f.now.Add(time.Hour) // past any backoff
	kube, _ := f.passes(kvs, 3)
	assert.NotContains(t, kube, "apply jobs b-2")
	b = f.backup("b")
	assert.Contains(t, b.Status.Message, "no other starts: the backup is being deleted")
	// Ended for good: it holds no other backup of the store behind it
	// (found by review: it stayed Running).
	assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
	assert.Equal(t, ReasonBackupDeleted, meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed).Reason)
	next := newBackup("c", v1alpha1.BackupReasonManual)
	_, err = f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Create(context.Background(), next, metav1.CreateOptions{})
	require.NoError(t, err)
	kube, _ = f.passes(kvs, 2)
	assert.Contains(t, kube, "apply jobs c-1")
}

// A started Manual backup whose attempt fails once its store's teardown
// began starts no other attempt (there may be no replica left to read):
// it ends StoreDeleted (found by review).
func TestABackupOfAStoreBeingDeletedStartsNoOtherAttempt(t *testing.T) {
	f, kvs, _ := runningBackup(t)
	f.deleteStore(kvs)
	f.finishJob("b-1", batchv1.JobFailed)
	f.now = f.now.Add(time.Hour)
	kube, _ := f.passes(kvs, 3)
	assert.NotContains(t, kube, "apply jobs b-2")
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
	assert.Equal(t, ReasonStoreDeleted, meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed).Reason)
	// Not "its Final backup is taken instead": none is when it is skipped
	// (found by live review).
	assert.Contains(t, b.Status.Message, "only its teardown's Final backup runs now (none if skipped)")
}

// A store deleted with its Final backup skipped while a Manual backup runs
// keeps its data tier until that backup's Job is done: scaled down (and
// its claims deleted) under it, the backup failed and the data was gone
// with every copy of it (found by review).
func TestTeardownKeepsTheDataTierUnderARunningBackup(t *testing.T) {
	f, kvs, _ := runningBackup(t)
	kube := f.deleteDuringBackup(kvs, true, nil)
	assert.NotContains(t, kube, "patch statefulsets s", "the data tier stays while backup b reads it")
	f.assertDataTierWaitsForB1(kvs)

	f.finishJob("b-1", batchv1.JobComplete)
	kube, _ = f.passes(kvs, 2)
	assert.Contains(t, kube, "patch statefulsets s", "scaled down once the backup is done")
}

// deleteDuringBackup deletes a store whose backup b runs (runningBackup),
// its claims to be deleted, skipping its Final backup if skip; hold runs
// after the deletion. It returns the next passes' writes to kube.
func (f *fixture) deleteDuringBackup(kvs *v1alpha1.KeyValueStore, skip bool, hold func(*fixture, *v1alpha1.KeyValueStore)) []string {
	f.t.Helper()
	k := f.stored(kvs)
	if skip {
		k.Annotations = map[string]string{v1alpha1.SkipFinalBackupAnnotation: "true"}
	}
	k.Spec.PersistentVolumeClaimRetentionPolicy = &v1alpha1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType}
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStores("ns").Update(context.Background(), k, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	f.deleteStore(kvs)
	if hold != nil {
		hold(f, kvs)
	}
	// The client Service gone (the fake server does not cut it off).
	require.NoError(f.t, f.kube.CoreV1().Services("ns").Delete(context.Background(), kvs.Name, metav1.DeleteOptions{}))
	require.NoError(f.t, f.kubeInf.Core().V1().Services().Informer().GetIndexer().Delete(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: kvs.Name, Namespace: kvs.Namespace}}))
	kube, _ := f.passes(kvs, 4)
	return kube
}

// assertDataTierWaitsForB1: the teardown waits at the data tier for backup
// Job b-1, saying so.
func (f *fixture) assertDataTierWaitsForB1(kvs *v1alpha1.KeyValueStore) {
	f.t.Helper()
	c := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(f.t, c)
	assert.Equal(f.t, StepScaleDownData, c.Reason, "waits at the data tier: %s", c.Message)
	assert.Contains(f.t, c.Message, "backup Job b-1 still reads the data")
	assert.Contains(f.t, c.Message, "or until its backup is gone (kubectl delete kvsbackup ", "the way on (found by live review)")
}

// What may still read the data holds the data tier (found by review of
// the rule below): the Final backup's own Job when spec.backup was removed
// (not skipped) during the teardown, and a Job whose Pod is unschedulable
// or refused by a quota for now (the scale-down would free what it waits
// for, and it would then run against no replica).
func TestTeardownKeepsTheDataTierForWhatMayStillRead(t *testing.T) {
	for name, hold := range map[string]func(f *fixture, kvs *v1alpha1.KeyValueStore){
		"the Final backup's own, spec.backup removed": func(f *fixture, kvs *v1alpha1.KeyValueStore) {
			job := f.job("b-1")
			job.OwnerReferences[0].Name = finalBackupName(kvs)
			_, err := f.kube.BatchV1().Jobs("ns").Update(context.Background(), job, metav1.UpdateOptions{})
			require.NoError(f.t, err)
			f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Backup = nil })
		},
		"a Pod refused by a quota for now": func(f *fixture, _ *v1alpha1.KeyValueStore) {
			job := f.job("b-1")
			job.Status.StartTime = ptr.To(metav1.NewTime(testNow))
			job.Status.Active = 0
			_, err := f.kube.BatchV1().Jobs("ns").UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
			require.NoError(f.t, err)
		},
		"a Pod unschedulable for now": func(f *fixture, kvs *v1alpha1.KeyValueStore) {
			job := f.job("b-1")
			job.Status.Active = 1
			_, err := f.kube.BatchV1().Jobs("ns").UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
			require.NoError(f.t, err)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-1-x", Namespace: "ns", Labels: labelsFor(kvs, ComponentBackup),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
					Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
			_, err = f.kube.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{})
			require.NoError(f.t, err)
			f.cache(pod)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, kvs, _ := runningBackup(t)
			kube := f.deleteDuringBackup(kvs, strings.HasSuffix(name, "for now"), hold)
			assert.NotContains(t, kube, "patch statefulsets s")
			f.assertDataTierWaitsForB1(kvs)
		})
	}
}

// What reads no data does not hold the data tier (found by review of the
// rule above): a backup Job whose only Pod is stuck terminating (its Node
// gone; the job controller adds Failed only once it is gone), the Final
// backup's own Job once the user skipped it, and any Job in a namespace
// being deleted (the namespace controller removes them).
func TestTeardownDoesNotKeepTheDataTierForWhatReadsNothing(t *testing.T) {
	for name, hold := range map[string]func(f *fixture, kvs *v1alpha1.KeyValueStore){
		"pod stuck terminating": func(f *fixture, _ *v1alpha1.KeyValueStore) {
			job := f.job("b-1")
			job.Status.Active, job.Status.Terminating = 0, ptr.To[int32](1)
			job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}}
			_, err := f.kube.BatchV1().Jobs("ns").UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
			require.NoError(f.t, err)
		},
		"namespace terminating": func(f *fixture, _ *v1alpha1.KeyValueStore) {
			require.NoError(f.t, f.kubeInf.Core().V1().Namespaces().Informer().GetIndexer().Add(&corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: ptr.To(metav1.NewTime(testNow))},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}))
		},
		"the skipped Final backup's own": func(f *fixture, kvs *v1alpha1.KeyValueStore) {
			job := f.job("b-1")
			job.OwnerReferences[0].Name = finalBackupName(kvs)
			_, err := f.kube.BatchV1().Jobs("ns").Update(context.Background(), job, metav1.UpdateOptions{})
			require.NoError(f.t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, kvs, _ := runningBackup(t)
			assert.Contains(t, f.deleteDuringBackup(kvs, true, hold), "patch statefulsets s")
		})
	}
}

// A Final backup being deleted (a finalizer removing its data) is no
// backup to go on behind, Completed or not: the teardown waits for it to
// go and takes another (found by review: it recorded it and deleted the
// claims). A backup deleted before it started is not started.
func TestTeardownDoesNotGoOnBehindAFinalBackupBeingDeleted(t *testing.T) {
	kvs := newStore(withBackup, withClaimsDeleted, deleting)
	f := newFixture(t, kvs)
	_, own := f.passes(kvs, 3)
	require.Contains(t, own, "create keyvaluestorebackups "+finalBackupName(kvs))

	b := f.backup(finalBackupName(kvs))
	b.Status.Phase = v1alpha1.BackupPhaseCompleted
	b.Status.CompletionTime = ptr.To(metav1.NewTime(testNow))
	b.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	b.Finalizers = []string{"example.com/remove-data"}
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(t, err)
	kube, _ := f.passes(kvs, 2)
	assert.NotContains(t, kube, "patch statefulsets s", "the data tier stays")
	st := f.stored(kvs).Status
	assert.False(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionBackupSucceeded))
	assert.Contains(t, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing).Message, "is being deleted")

	gone := newBackup("gone", v1alpha1.BackupReasonManual)
	gone.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	gone.Finalizers = []string{"example.com/remove-data"}
	f = newFixture(t, newStore(withBackup), gone)
	kube, _ = f.passes(kvs, 2)
	assert.NotContains(t, kube, "apply jobs gone-1", "a backup deleted before it started does not start")
}

// A teardown whose Final backup a quota on backups refuses waits 30 s at a
// time, saying so with how to skip it, with one Warning event: not a sync
// error, whose backoff grows to 1000 s while a quota freed meanwhile wakes
// nobody (found by review). Once the quota allows it, the backup is created.
func TestTeardownWhoseFinalBackupAQuotaRefusesWaits(t *testing.T) {
	kvs := newStore(withBackup, deleting)
	f := newFixture(t, kvs)
	refusal := "exceeded quota: backups, requested: count/keyvaluestorebackups.kvstore.io=1, used: count/keyvaluestorebackups.kvstore.io=5, limited: count/keyvaluestorebackups.kvstore.io=5"
	quotaFull := true
	f.kvs.PrependReactor("create", "keyvaluestorebackups", func(a core.Action) (bool, runtime.Object, error) {
		if !quotaFull {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(v1alpha1.Resource("keyvaluestorebackups"), finalBackupName(kvs), errors.New(refusal))
	})
	var res result
	var err error
	for range 2 {
		res, err = f.sync(f.stored(kvs))
		require.NoError(t, err, "not a sync error: the rate limiter must not drive retries")
		f.refreshCache("ns")
	}
	assert.Equal(t, waitFallback, res.requeueAfter)
	c := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, c)
	assert.Equal(t, StepFinalBackup, c.Reason)
	assert.Contains(t, c.Message, refusal)
	assert.Contains(t, c.Message, v1alpha1.SkipFinalBackupAnnotation)
	assert.Len(t, slices.DeleteFunc(f.events(), func(e string) bool { return !strings.HasPrefix(e, "Warning") }), 1, "told once")

	quotaFull = false
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	_, own := f.writes()
	assert.Contains(t, own, "create keyvaluestorebackups "+finalBackupName(kvs))
}

// refuseJobs makes kube-apiserver refuse every Job with a 403 saying why,
// as an admission policy or a used-up ResourceQuota does.
func (f *fixture) refuseJobs(why string) {
	f.kube.PrependReactor("patch", "jobs", func(a core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), a.(core.PatchAction).GetName(), errors.New(why))
	})
}

// An attempt of a Manual backup that started before its store was created
// was for an earlier store of that name: no retry of it backs up the new
// store's data (a restore from it would bring back the new, empty store).
// Before the fix the retry ran against the new store and was recorded
// Completed. The new store's lastBackupTime does not count it either.
func TestBackupStartedForAnEarlierStoreIsNotRetried(t *testing.T) {
	kvs := newStore(withBackup, func(k *v1alpha1.KeyValueStore) {
		k.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Minute))
	})
	started := metav1.NewTime(testNow.Add(-50 * time.Minute))
	old := newBackup("pre-migrate", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
		b.Status = v1alpha1.KeyValueStoreBackupStatus{Phase: v1alpha1.BackupPhaseRunning, Attempts: 1, JobName: "pre-migrate-1", StartTime: &started}
	})
	done := newBackup("done", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
		b.Status = v1alpha1.KeyValueStoreBackupStatus{Phase: v1alpha1.BackupPhaseCompleted, Attempts: 1, StartTime: &started,
			CompletionTime: ptr.To(metav1.NewTime(started.Add(time.Minute)))}
	})
	job := newJob("pre-migrate-1", metav1.NewControllerRef(old, v1alpha1.SchemeGroupVersion.WithKind("KeyValueStoreBackup")))
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(testNow.Add(-30 * time.Minute))}}
	f := newFixture(t, kvs, old, done, job)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, kube, "apply jobs pre-migrate-2")
	assertFailedFor(t, f.backup("pre-migrate"), ReasonStoreNotFound, "before this store was created")
	assert.Nil(t, f.stored(kvs).Status.LastBackupTime, "the earlier store's backup is not this store's")
}

// A store given spec.backup and a Manual backup in one apply: the backup's
// event can come before the store's, so "no spec.backup" is read fresh
// before it fails the backup for good.
func TestBackupNotConfiguredIsReadFresh(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	// The store as the cache has it: spec.backup not seen yet. (Through
	// syncBackups alone: the fake server's status write would store the
	// whole stale object, which kvstore-apiserver's /status never does.)
	_, err := f.c.syncBackups(context.Background(), "ns", "s", newStore())
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupPhaseRunning, f.backup("b").Status.Phase)
}

// A store deleted and created again under its name with a backup: until
// the cache sees the new store, it shows the old one being deleted. Only a
// fresh read may fail a backup for a store being deleted (it failed the new
// store's backup for good, "its Final backup is taken instead"; found by
// review).
func TestBackupForADeletingStoreIsReadFresh(t *testing.T) {
	recreated := newStore(withBackup, func(k *v1alpha1.KeyValueStore) { k.UID = "uid-2" })
	f := newFixture(t, recreated, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.c.syncBackups(context.Background(), "ns", "s", newStore(withBackup, deleting))
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupPhaseRunning, f.backup("b").Status.Phase)
}

// The backups the controller reads are the informer's: it writes only copies.
func TestBackupStatusWriteLeavesTheCacheAlone(t *testing.T) {
	kvs := newStore(withBackup)
	b := newBackup("b", v1alpha1.BackupReasonManual)
	f := newFixture(t, kvs, b)
	cached, exists, err := f.kvsInf.Kvstore().V1alpha1().KeyValueStoreBackups().Informer().GetIndexer().Get(b)
	require.NoError(t, err)
	require.True(t, exists)
	_, err = f.sync(kvs)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.BackupPhaseRunning, f.backup("b").Status.Phase)
	assert.Empty(t, cached.(*v1alpha1.KeyValueStoreBackup).Status.Phase, "the cached object is unchanged")
}

// A Manual backup records, before its first Job, the UID of the store it
// backs up: a retry after that store was deleted and another created under
// its name fails instead of backing up the new store (clock-free; the
// start-time rule above is only for backups started by earlier versions).
func TestManualBackupRecordsItsStore(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	_, own := f.writes()
	assert.Contains(t, own, "patch keyvaluestorebackups b")
	assert.Equal(t, "uid-1", f.backup("b").Annotations[storeUIDAnnotation])

	// Attempt 1 fails; the store is replaced by another of its name, created
	// in the same second (the start-time rule would not see it).
	f.finishJob("b-1", batchv1.JobFailed)
	next := newStore(withBackup, func(k *v1alpha1.KeyValueStore) { k.UID = "uid-2" })
	require.NoError(t, f.kvs.Tracker().Update(v1alpha1.SchemeGroupVersion.WithResource("keyvaluestores"), next, "ns"))
	f.refreshCache("ns")
	f.now = f.now.Add(time.Hour)
	_, err = f.sync(next)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, kube, "apply jobs b-2")
	assertFailedFor(t, f.backup("b"), ReasonStoreNotFound, "uid uid-1")
}

// A backup a user names as the teardown's Final backup would be named
// (the store's name, "-final-" and the start of its UID) is not marked with
// the store's UID: marked, it would pass for the teardown's own, and one
// Completed long before the deletion would stand in for the final backup
// (found by review).
func TestBackupNamedLikeTheFinalOneIsNotMarked(t *testing.T) {
	kvs := newStore(withBackup)
	name := finalBackupName(kvs)
	f := newFixture(t, kvs, newBackup(name, v1alpha1.BackupReasonFinal))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	b := f.backup(name)
	assert.Empty(t, b.Annotations[storeUIDAnnotation])
	assert.False(t, teardownsOwn(kvs, b))
	assert.Equal(t, v1alpha1.BackupPhaseRunning, b.Status.Phase, "it runs, as a Manual backup does")
}

// assertFailedFor asserts b failed for good with reason, its message
// containing msg.
func assertFailedFor(t *testing.T, b *v1alpha1.KeyValueStoreBackup, reason, msg string) {
	t.Helper()
	assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
	c := meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed)
	require.NotNil(t, c)
	assert.Equal(t, reason, c.Reason)
	assert.Contains(t, b.Status.Message, msg)
}

// assertBackupWaits asserts b waits (Pending, its message containing msg)
// and the pass that left it so looks again after wait.
func assertBackupWaits(t *testing.T, b *v1alpha1.KeyValueStoreBackup, res result, wait time.Duration, msg string) {
	t.Helper()
	assert.Equal(t, v1alpha1.BackupPhasePending, b.Status.Phase, "waits, does not fail")
	assert.Contains(t, b.Status.Message, msg)
	assert.Equal(t, wait, res.requeueAfter)
}

// A backup's Job lists the replicas the StatefulSet is asked to run: a
// scale-up held before another store's claim has no Pods beyond the hold to
// reach, and a script that needs every endpoint would fail on them until
// skipped.
func TestBackupJobListsTheReplicasThatRun(t *testing.T) {
	kvs := newStore(withBackup, func(k *v1alpha1.KeyValueStore) { k.Spec.Replicas = ptr.To[int32](6) })
	f := newFixture(t, kvs, claimWithUID(kvs, 0, "uid-1"), claimWithUID(kvs, 4, "old-uid"))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	require.Equal(t, int32(4), f.statefulSetReplicas(kvs), "held before data-s-4")

	ctx := context.Background()
	_, err = f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Create(ctx, newBackup("b", v1alpha1.BackupReasonManual), metav1.CreateOptions{})
	require.NoError(t, err)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	job, err := f.kube.BatchV1().Jobs("ns").Get(ctx, backupJobName(f.backup("b"), 1), metav1.GetOptions{})
	require.NoError(t, err)
	var endpoints string
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "KVSTORE_ENDPOINTS" {
			endpoints = e.Value
		}
	}
	assert.Equal(t, "s-0.s-headless.ns.svc,s-1.s-headless.ns.svc,s-2.s-headless.ns.svc,s-3.s-headless.ns.svc", endpoints)

	// Scaled to zero (by hand, or by a teardown): never an empty list, which
	// a script could take for a store with nothing to back up.
	sts, err := f.kube.AppsV1().StatefulSets("ns").Get(ctx, "s", metav1.GetOptions{})
	require.NoError(t, err)
	sts.Spec.Replicas = ptr.To[int32](0)
	f.cache(sts)
	assert.Equal(t, int32(6), f.c.reachableReplicas(f.stored(kvs)))
}
