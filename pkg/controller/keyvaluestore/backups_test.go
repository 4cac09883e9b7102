package keyvaluestore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

func (f *fixture) backup(name string) *v1alpha1.KeyValueStoreBackup {
	f.t.Helper()
	b, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return b
}

// A Manual backup goes Pending → Running → Completed with one Job, and a
// second backup of the same store waits for it.
func TestBackupRunsOneJobAtATime(t *testing.T) {
	kvs := newStore(withBackup)
	first := newBackup("first", v1alpha1.BackupReasonManual)
	second := newBackup("second", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
		b.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Minute))
	})
	f := newFixture(t, kvs, first, second)
	_, err := f.sync(kvs)
	require.NoError(t, err)
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
	_, err = f.sync(f.stored(kvs))
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
		assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
		assert.Equal(t, ReasonStoreNotFound, meta.FindStatusCondition(b.Status.Conditions, BackupConditionFailed).Reason)
		assert.Contains(t, b.Status.Message, "uid-0")
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
	for range 2 { // record the attempt, then its outcome
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
	}
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseCompleted, b.Status.Phase)
	assert.False(t, b.Status.CompletionTime.Before(b.Status.StartTime))
}
