package keyvaluestore

import (
	"context"
	"errors"
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
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

func withBootstrap(from string) func(*v1alpha1.KeyValueStore) {
	return func(k *v1alpha1.KeyValueStore) {
		k.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "restore:1", Command: []string{"/restore"}, FromBackup: from}
	}
}

func completedBackup(name string) *v1alpha1.KeyValueStoreBackup {
	return newBackup(name, v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
		b.Spec.StoreName = "old"
		b.Status.Phase = v1alpha1.BackupPhaseCompleted
	})
}

// The design's order: data tier ready → bootstrap Job → proxy tier → Ready.
func TestBootstrapRunsBeforeTheProxy(t *testing.T) {
	kvs := newStore(withProxy(2), withBootstrap("nightly"))
	f := newFixture(t, kvs, completedBackup("nightly"))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, kube, "apply jobs s-bootstrap-1", "no bootstrap before the data tier is ready")

	f.markReady(kvs)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Contains(t, kube, "apply jobs s-bootstrap-1")
	assert.NotContains(t, kube, "apply deployments s-proxy", "no proxy while the bootstrap runs")
	st := f.stored(kvs).Status
	assert.Equal(t, v1alpha1.PhaseBootstrapping, st.Phase)
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), "s-bootstrap-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, job.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "KVSTORE_BACKUP_NAME", Value: "nightly"})

	f.refreshCache("ns")
	f.finishJob("s-bootstrap-1", batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.Contains(t, kube, "apply deployments s-proxy", "the proxy tier after the bootstrap")
	assert.True(t, meta.IsStatusConditionTrue(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped))

	f.markReady(kvs)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseReady, f.stored(kvs).Status.Phase)

	// Never again: even with the Job gone and a restart, the condition holds.
	require.NoError(t, f.kube.BatchV1().Jobs("ns").Delete(context.Background(), "s-bootstrap-1", metav1.DeleteOptions{}))
	require.NoError(t, f.kubeInf.Batch().V1().Jobs().Informer().GetIndexer().Delete(job))
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "a bootstrap that succeeded never runs again")
}

func TestBootstrapFromAMissingOrUnfinishedBackupFails(t *testing.T) {
	for name, tc := range map[string]struct {
		backups []*v1alpha1.KeyValueStoreBackup
		reason  string
	}{
		"missing":       {reason: ReasonBackupNotFound},
		"not completed": {backups: []*v1alpha1.KeyValueStoreBackup{newBackup("nightly", v1alpha1.BackupReasonManual)}, reason: ReasonBackupNotCompleted},
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore(withBootstrap("nightly"))
			f := newFixture(t, kvs)
			for _, b := range tc.backups {
				_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Create(context.Background(), b, metav1.CreateOptions{})
				require.NoError(t, err)
				f.cache(b)
			}
			f.syncToReady(kvs)
			kube, _ := f.writes()
			assert.NotContains(t, strings.Join(kube, " "), "apply jobs")
			st := f.stored(kvs).Status
			assert.Equal(t, v1alpha1.PhaseFailed, st.Phase)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped)
			require.NotNil(t, c)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, "spec.bootstrap.fromBackup")
			// The way to try again: a store created again on the claims it
			// keeps would be refused with ClaimsHoldData (found by review).
			// Named by the store's UID: a name prefix would also match
			// another store's claims (data-s-eu-0; found by review).
			assert.Contains(t, c.Message, "delete the store, then its claims (kubectl delete pvc -n ns -l kvstore.io/store-uid=uid-1")

			// The backup completing later does not start the restore: the
			// store may have served clients in between (found by review).
			done := completedBackup("nightly")
			_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Create(context.Background(), done, metav1.CreateOptions{})
			if err != nil {
				_, err = f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Update(context.Background(), done, metav1.UpdateOptions{})
			}
			require.NoError(t, err)
			f.refreshCache("ns")
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ = f.writes()
			assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "no restore into a store that has been Failed")
			assert.Equal(t, tc.reason, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
		})
	}
}

// A retry restores the very backup attempt 1 was given, or nothing: once
// that backup is gone (pruned, deleted) or replaced under its name, the
// next attempt would run without it, or from other data (found by review:
// attempt 2 ran without KVSTORE_BACKUP_NAME, as a plain bootstrap).
func TestBootstrapRetryNeedsItsOwnBackup(t *testing.T) {
	for name, tc := range map[string]backupChange{
		"deleted": {reason: ReasonBackupNotFound, change: func(f *fixture, b *v1alpha1.KeyValueStoreBackup) {
			f.deleteBackup(b)
			require.NoError(f.t, f.kvsInf.Kvstore().V1alpha1().KeyValueStoreBackups().Informer().GetIndexer().Delete(b))
		}},
		"replaced": {reason: ReasonBackupReplaced, change: func(f *fixture, b *v1alpha1.KeyValueStoreBackup) {
			b = b.DeepCopy()
			b.UID = "uid-other"
			_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Update(context.Background(), b, metav1.UpdateOptions{})
			require.NoError(f.t, err)
			f.cache(b)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f, kvs, src := bootstrapStarted(t)
			f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobFailed)
			f.refreshCache("ns")
			_, err := f.sync(f.stored(kvs))
			require.NoError(t, err)

			tc.change(f, src)
			f.now = f.now.Add(backupBackoff(1))
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ := f.writes()
			assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "no attempt without the backup attempt 1 restored")
			assertBootstrapFailedFor(t, f.stored(kvs), tc.reason)
		})
	}
}

func TestFailingBootstrapEndsFailed(t *testing.T) {
	kvs := newStore(withBootstrap(""))
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	for attempt := 1; attempt <= bootstrapAttemptLimit; attempt++ {
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
		f.finishJob(bootstrapJobName(kvs, attempt), batchv1.JobFailed)
		f.refreshCache("ns")
		res, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		if attempt < bootstrapAttemptLimit {
			assert.Equal(t, backupBackoff(attempt), res.requeueAfter)
			assert.Equal(t, v1alpha1.PhaseBootstrapping, f.stored(kvs).Status.Phase)
			f.now = f.now.Add(backupBackoff(attempt))
		}
	}
	st := f.stored(kvs).Status
	assert.Equal(t, v1alpha1.PhaseFailed, st.Phase)
	assert.Equal(t, ReasonBootstrapFailed, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped).Reason)
	assert.Contains(t, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped).Message, "kubectl delete pvc -n ns -l kvstore.io/store-uid=uid-1")
	assert.Contains(t, strings.Join(f.events(), "\n"), "Warning BootstrapFailed")

	// It stays failed when its Jobs are deleted afterwards (before the
	// fix, attempt 1 started again: every 3 attempts with a TTL policy).
	f.refreshCache("ns")
	for attempt := 1; attempt <= bootstrapAttemptLimit; attempt++ {
		f.deleteJob(bootstrapJobName(kvs, attempt))
	}
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "no bootstrap Job runs again")
	st = f.stored(kvs).Status
	assert.Equal(t, v1alpha1.PhaseFailed, st.Phase)
	assert.Equal(t, ReasonBootstrapFailed, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}

// bootstrapRunning is a store whose data tier is ready and whose first
// bootstrap Job runs, with the cache up to date.
func bootstrapRunning(t *testing.T, opts ...func(*v1alpha1.KeyValueStore)) (*fixture, *v1alpha1.KeyValueStore) {
	f, kvs := bootstrapReady(t, opts...)
	for range 2 { // created suspended, then released
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
	}
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), bootstrapJobName(kvs, 1), metav1.GetOptions{})
	require.NoError(t, err)
	require.False(t, *job.Spec.Suspend, "released")
	return f, kvs
}

// bootstrapFinished is bootstrapRunning with attempt 1's Job finished with
// outcome (JobComplete, JobFailed) and synced once.
func bootstrapFinished(t *testing.T, outcome batchv1.JobConditionType) (*fixture, *v1alpha1.KeyValueStore) {
	f, kvs := bootstrapRunning(t)
	f.finishJob(bootstrapJobName(kvs, 1), outcome)
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	return f, kvs
}

// bootstrapReady is a store with a bootstrap whose data tier is ready and
// no bootstrap Job yet, with the cache up to date.
func bootstrapReady(t *testing.T, opts ...func(*v1alpha1.KeyValueStore)) (*fixture, *v1alpha1.KeyValueStore) {
	kvs := newStore(append([]func(*v1alpha1.KeyValueStore){withBootstrap("")}, opts...)...)
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	f.refreshCache("ns")
	return f, kvs
}

// A bootstrap whose Job is gone before its outcome was recorded (a TTL or
// cleanup policy deleted the finished Job before the controller read it,
// or while the store was paused) is never run again: a second restore
// could overwrite what was written since. Before the fix attempt 1 started
// again.
func TestBootstrapNeverRerunsWhenItsJobIsGone(t *testing.T) {
	for name, outcome := range map[string]batchv1.JobConditionType{"completed": batchv1.JobComplete, "failed": batchv1.JobFailed} {
		t.Run(name, func(t *testing.T) {
			f, kvs := bootstrapRunning(t)
			f.finishJob(bootstrapJobName(kvs, 1), outcome)
			f.deleteJob(bootstrapJobName(kvs, 1))
			_, err := f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ := f.writes()
			assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "no bootstrap Job runs again")
			st := f.stored(kvs).Status
			assert.Equal(t, v1alpha1.PhaseFailed, st.Phase)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped)
			require.NotNil(t, c)
			assert.Equal(t, ReasonBootstrapJobLost, c.Reason)
			assert.Contains(t, c.Message, "without spec.bootstrap")
		})
	}
	t.Run("failed, deleted while the next attempt waits", func(t *testing.T) {
		f, kvs := bootstrapFinished(t, batchv1.JobFailed)
		require.Equal(t, ReasonBootstrapRetrying, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
		f.deleteJob(bootstrapJobName(kvs, 1))
		f.now = f.now.Add(backupBackoff(1))
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.NotContains(t, strings.Join(kube, " "), "apply jobs")
		assert.Equal(t, ReasonBootstrapJobLost, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
	})
}

// Teardown stops a bootstrap that still runs before anything else.
func TestTeardownStopsARunningBootstrap(t *testing.T) {
	f, kvs := bootstrapRunning(t)
	f.deleteStore(kvs)
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Equal(t, []string{"delete jobs s-bootstrap-1"}, kube)
	// In the foreground, so the Job stays until its Pods are gone: deleted
	// in the background it went at once, and the bootstrap counted as
	// stopped while its Pod could still write (untested before).
	for _, a := range f.kube.Actions() {
		if d, ok := a.(core.DeleteAction); ok {
			assert.Equal(t, ptr.To(metav1.DeletePropagationForeground), d.GetDeleteOptions().PropagationPolicy)
		}
	}
	assert.Equal(t, StepStopBootstrap, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing).Reason)

	// Its Pod stuck terminating (its Node gone) is named, as the data and
	// proxy Pods are (before the fix: "stopping 1 bootstrap Job(s)" for
	// ever; found by review).
	f.cache(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-bootstrap-1-x", Namespace: "ns", Labels: labelsFor(kvs, ComponentBootstrap),
		DeletionTimestamp: ptr.To(metav1.NewTime(testNow.Add(-stuckAfter - time.Minute)))}})
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	p := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Equal(t, ReasonPodsStuckTerminating, p.Reason)
	assert.Contains(t, p.Message, "s-bootstrap-1-x")
}

// In a terminating namespace, as for the data and proxy Pods, the teardown
// does not wait for the bootstrap's Pods once its Jobs' deletion is asked
// for (the namespace controller deletes them). Before the fix step 0 waited
// for them, and for ever on a Pod whose Node is gone (found by review).
func TestTeardownInATerminatingNamespaceDoesNotWaitForTheBootstrap(t *testing.T) {
	f, kvs := bootstrapRunning(t)
	f.deleteStore(kvs)
	require.NoError(t, f.kubeInf.Core().V1().Namespaces().Informer().GetIndexer().Add(&corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: ptr.To(metav1.NewTime(testNow))},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}))
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Equal(t, []string{"delete jobs s-bootstrap-1"}, kube, "asked to stop first")

	// kube-apiserver keeps the Job behind its Pods (Foreground).
	job, err := f.kubeInf.Batch().V1().Jobs().Lister().Jobs("ns").Get(bootstrapJobName(kvs, 1))
	require.NoError(t, err)
	job = job.DeepCopy()
	job.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.cache(job)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.NotEqual(t, StepStopBootstrap, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionProgressing).Reason,
		"nothing waits for the bootstrap's Pods")
}

// A store deleted before its bootstrap finished holds a partial restore
// (teardown stopped it) that no client ever wrote to: a Final backup of it
// would be recorded Completed with half the data, and a later restore from
// it would bring back a store that never was (found by review). The
// teardown records why there is none and goes on; what the bootstrap
// restored from is left as it was.
func TestTeardownTakesNoFinalBackupOfAnUnfinishedBootstrap(t *testing.T) {
	f, kvs := bootstrapRunning(t, withBackup)
	f.deleteStore(kvs)
	f.refreshCache("ns")
	stopped, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), bootstrapJobName(kvs, 1), metav1.GetOptions{})
	require.NoError(t, err)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	// Gone with its Pods (the fake server deleted it at once).
	require.NoError(t, f.kubeInf.Batch().V1().Jobs().Informer().GetIndexer().Delete(stopped))
	kube, own := f.passes(kvs, 4)
	for _, w := range append(kube, own...) {
		assert.NotContains(t, w, "-final-", "no Final backup of a partial restore")
	}
	cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBackupSucceeded)
	require.NotNil(t, cond, "%v", f.stored(kvs).Status.Conditions)
	assert.Equal(t, ReasonBootstrapUnfinished, cond.Reason)
	assert.Contains(t, cond.Message, "bootstrap")
}

// A store whose bootstrap failed for good still gets its Final backup: a
// store of an earlier release had its client Service before its bootstrap,
// and clients may have written (found by review: a first version took
// none, and deleted the claims behind it).
func TestTeardownBacksUpAFailedBootstrap(t *testing.T) {
	kvs := newStore(withBootstrap("nightly"), withBackup)
	f := newFixture(t, kvs)
	f.syncToReady(kvs)
	require.Equal(t, ReasonBackupNotFound, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
	f.deleteStore(kvs)
	_, own := f.passes(kvs, 4)
	assert.Contains(t, own, "create keyvaluestorebackups "+finalBackupName(kvs))
	if cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBackupSucceeded); cond != nil {
		assert.NotEqual(t, ReasonBootstrapUnfinished, cond.Reason)
	}
}

// A bootstrap whose Job completed but whose success was not recorded yet
// (the store deleted in the pass that created its client Service, the
// status write lost to the deletion's conflict) is finished: clients may
// have written, and the Final backup is taken (found by review of the rule
// above).
func TestTeardownBacksUpABootstrapThatCompletedUnrecorded(t *testing.T) {
	f, kvs := bootstrapRunning(t, withBackup)
	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobComplete)
	gone := f.deleteStore(kvs)
	require.Equal(t, ReasonBootstrapRunning, meta.FindStatusCondition(gone.Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
	_, own := f.passes(kvs, 4)
	assert.Contains(t, own, "create keyvaluestorebackups "+finalBackupName(kvs))
	if cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBackupSucceeded); cond != nil {
		assert.NotEqual(t, ReasonBootstrapUnfinished, cond.Reason)
	}
}

// A Job with the bootstrap's name and the store's labels but no controller
// reference (stripped, or made by hand) is not the store's: it is in the way,
// said once, not "created" on every pass while the store's own list of
// bootstrap Jobs never finds it (the store requeued every second and never
// bootstrapped; found by review).
func TestBootstrapJobWithoutControllerIsInTheWay(t *testing.T) {
	kvs := newStore(withBootstrap(""))
	stray := newJob(bootstrapJobName(kvs, 1), nil)
	stray.Labels = labelsFor(kvs, ComponentBootstrap)
	f := newFixture(t, kvs, stray)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	f.refreshCache("ns")
	var res result
	for range 3 {
		res, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
	}
	st := f.stored(kvs).Status
	p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, ReasonObjectInTheWay, p.Reason)
	assert.Contains(t, p.Message, bootstrapJobName(kvs, 1))
	assert.NotEqual(t, time.Second, res.requeueAfter, "no retry every second")
}

// A bootstrap recorded as succeeded is not turned into BootstrapJobLost by
// a cache that has not seen that record yet, once its Job is gone (the
// status write after a conflict would have overwritten the success, and
// the store would have stayed Failed with no proxy; found by review).
func TestBootstrapSuccessSurvivesAStaleCache(t *testing.T) {
	f, kvs := bootstrapRunning(t)
	stale := f.stored(kvs)
	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobComplete)
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.True(t, meta.IsStatusConditionTrue(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped))

	f.cache(stale)
	f.deleteJob(bootstrapJobName(kvs, 1))
	_, _ = f.sync(stale)
	st := f.stored(kvs).Status
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionBootstrapped), "%v", st.Conditions)
	assert.NotEqual(t, v1alpha1.PhaseFailed, st.Phase)
}

// A backup waits while the store's bootstrap may still write: taken during
// the restore it would be recorded Completed with half the data (found by
// review). It runs once the bootstrap succeeded.
func TestBackupWaitsForTheBootstrap(t *testing.T) {
	kvs := newStore(withBootstrap(""), withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	for range 2 {
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.NotContains(t, kube, "apply jobs b-1", "no backup while the bootstrap runs")
	}
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhasePending, b.Status.Phase)
	assert.Contains(t, b.Status.Message, "bootstrap")

	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobComplete)
	var kube []string
	for range 2 {
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		w, _ := f.writes()
		kube = append(kube, w...)
	}
	assert.Contains(t, kube, "apply jobs b-1", "the backup runs once the bootstrap succeeded")
}

// Attempt 1's Job is created held and released a pass later, or after a
// pause: the backup is judged again before the Job runs. Before the fix the
// held Job was released whatever had become of its backup: gone, replaced
// by another store's, or replaced by one still being written (found by
// review).
func TestHeldBootstrapRunsOnlyFromItsBackup(t *testing.T) {
	for name, tc := range map[string]backupChange{
		"deleted": {reason: ReasonBackupNotFound, change: (*fixture).deleteBackup},
		"being deleted": {reason: ReasonBackupNotFound, change: func(f *fixture, b *v1alpha1.KeyValueStoreBackup) {
			b.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
			b.Finalizers = []string{"example.com/remove-data"}
			f.storedBackupIs(b)
		}},
		"replaced by another store's": {reason: ReasonBackupReplaced, change: func(f *fixture, b *v1alpha1.KeyValueStoreBackup) {
			b.UID = "uid-other"
			b.Spec.StoreName = "victim"
			f.storedBackupIs(b)
		}},
		"replaced by one still running": {reason: ReasonBackupNotCompleted, change: func(f *fixture, b *v1alpha1.KeyValueStoreBackup) {
			b.UID = "uid-other"
			b.Status.Phase = v1alpha1.BackupPhaseRunning
			f.storedBackupIs(b)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f, kvs, src := bootstrapStarted(t)
			require.Equal(t, ReasonBootstrapStarting, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
			f.refreshCache("ns")

			tc.change(f, src.DeepCopy()) // the cache still has the backup as it was
			_, err := f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ := f.writes()
			assert.NotContains(t, strings.Join(kube, " "), "patch jobs", "the held Job is not released")
			assertBootstrapFailedFor(t, f.stored(kvs), tc.reason)
		})
	}
}

// A Job of ours that lost the managed-by label drops out of the cache,
// which selects on it, and Jobs are never re-applied: the label is put
// back. Before the fix the store listed its Jobs every second for ever and
// never saw the Job finish (found by review).
func TestUnlabelledJobIsLabelledAgain(t *testing.T) {
	t.Run("a backup's", func(t *testing.T) {
		// Before the fix the backup stayed Running until something else
		// woke its store (found by review).
		kvs := newStore(withBackup)
		f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
		_, err := f.sync(kvs)
		require.NoError(t, err)
		f.refreshCache("ns")
		f.unlabelJob("b-1", LabelName, LabelInstance, LabelComponent) // a label cleanup of app.kubernetes.io/*
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Contains(t, kube, "patch jobs b-1")
		job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), "b-1", metav1.GetOptions{})
		require.NoError(t, err)
		ns, store := owner(job)
		assert.Equal(t, "ns/s", ns+"/"+store, "its store is found again from its labels")
	})
	t.Run("held", func(t *testing.T) {
		// Before the fix: a live GET of the Job, the claims and the backup
		// every second, and the Job never released.
		f, kvs := bootstrapReady(t)
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
		f.unlabelJob(bootstrapJobName(kvs, 1))
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.Equal(t, []string{"patch jobs " + bootstrapJobName(kvs, 1)}, kube)
	})
	f, kvs := bootstrapRunning(t)
	name := bootstrapJobName(kvs, 1)
	f.unlabelJob(name)
	res, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Equal(t, []string{"patch jobs " + name}, kube)
	assert.Equal(t, time.Second, res.requeueAfter)
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ManagedBy, job.Labels[LabelManagedBy])

	f.finishJob(name, batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, ReasonBootstrapSucceeded, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}

// BackupReplaced is for good: once the failed attempt's Job is gone (a
// TTL), no new restore starts from the backup that replaced the one given,
// over a store that may have served clients meanwhile (untested before:
// the reason could leave failedForGood without a test failing).
func TestBootstrapFromAReplacedBackupStaysFailed(t *testing.T) {
	f, kvs, src := bootstrapStarted(t)
	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobFailed)
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	b := src.DeepCopy()
	b.UID = "uid-other"
	_, err = f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.cache(b)
	f.now = f.now.Add(backupBackoff(1))
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assertBootstrapFailedFor(t, f.stored(kvs), ReasonBackupReplaced)

	f.deleteJob(bootstrapJobName(kvs, 1))
	for range 3 {
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		kube, _ := f.writes()
		assert.NotContains(t, strings.Join(kube, " "), "apply jobs")
	}
	assertBootstrapFailedFor(t, f.stored(kvs), ReasonBackupReplaced)
}

// backupChange is what becomes of the backup a bootstrap restores, and the
// reason the store then fails for.
type backupChange struct {
	change func(f *fixture, b *v1alpha1.KeyValueStoreBackup)
	reason string
}

// deleteBackup deletes the backup on the server, not in the cache.
func (f *fixture) deleteBackup(b *v1alpha1.KeyValueStoreBackup) {
	f.t.Helper()
	require.NoError(f.t, f.kvs.KvstoreV1alpha1().KeyValueStoreBackups(b.Namespace).Delete(context.Background(), b.Name, metav1.DeleteOptions{}))
}

// bootstrapStarted is a store restoring the Completed backup "nightly",
// its data tier ready and attempt 1's Job created.
func bootstrapStarted(t *testing.T) (*fixture, *v1alpha1.KeyValueStore, *v1alpha1.KeyValueStoreBackup) {
	t.Helper()
	src := completedBackup("nightly")
	kvs := newStore(withBootstrap("nightly"))
	f := newFixture(t, kvs, src)
	f.syncToReady(kvs)
	kube, _ := f.writes()
	require.Contains(t, kube, "apply jobs "+bootstrapJobName(kvs, 1))
	return f, kvs, src
}

// syncToReady syncs a new store, marks its workloads ready and syncs it
// again.
func (f *fixture) syncToReady(kvs *v1alpha1.KeyValueStore) {
	f.t.Helper()
	_, err := f.sync(kvs)
	require.NoError(f.t, err)
	f.markReady(kvs)
	_, err = f.sync(f.stored(kvs))
	require.NoError(f.t, err)
}

// assertBootstrapFailedFor: the store failed for good, for reason.
func assertBootstrapFailedFor(t *testing.T, kvs *v1alpha1.KeyValueStore, reason string) {
	t.Helper()
	assert.Equal(t, v1alpha1.PhaseFailed, kvs.Status.Phase)
	assert.Equal(t, reason, meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}

// unlabelJob removes labels (managed-by if none are named) from the Job on
// the server, and the Job from the cache, which selects on managed-by.
func (f *fixture) unlabelJob(name string, keys ...string) {
	f.t.Helper()
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	for _, k := range append(keys, LabelManagedBy) {
		delete(job.Labels, k)
	}
	_, err = f.kube.BatchV1().Jobs("ns").Update(context.Background(), job, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	require.NoError(f.t, f.kubeInf.Batch().V1().Jobs().Informer().GetIndexer().Delete(job))
}

// storedBackupIs replaces the backup on the server, not in the cache.
func (f *fixture) storedBackupIs(b *v1alpha1.KeyValueStoreBackup) {
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStoreBackups(b.Namespace).Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

// Attempt 1's Job is created suspended (BootstrapStarting) and released
// only right after BootstrapRunning is recorded. So a Job that ran and was
// deleted (a TTL) before its outcome was recorded is lost, never started
// again over data written since, even if the status write after its
// creation was lost (our etcd down, a failover) (found by review).
func TestBootstrapRunsOnlyOnceRecorded(t *testing.T) {
	f, kvs := bootstrapReady(t)
	lost := false
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		_, jobErr := f.kube.BatchV1().Jobs("ns").Get(context.Background(), bootstrapJobName(kvs, 1), metav1.GetOptions{})
		if a.GetSubresource() != "status" || jobErr != nil || lost {
			return false, nil, nil
		}
		lost = true
		return true, nil, apierrors.NewServiceUnavailable("etcd down")
	})
	_, err := f.sync(f.stored(kvs))
	require.Error(t, err, "the status write after the Job's creation is lost")
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), bootstrapJobName(kvs, 1), metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, *job.Spec.Suspend, "created suspended")

	// Released only once Running is recorded.
	var recordedAtRelease string
	f.kube.PrependReactor("patch", "jobs", func(core.Action) (bool, runtime.Object, error) {
		recordedAtRelease = meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason
		return false, nil, nil
	})
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Contains(t, kube, "patch jobs "+bootstrapJobName(kvs, 1))
	assert.Equal(t, ReasonBootstrapRunning, recordedAtRelease, "recorded before the release")
	assert.Contains(t, strings.Join(f.events(), "\n"), "Normal BootstrapRunning")

	// It ran and is gone before its outcome was recorded: lost, not rerun.
	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobComplete)
	f.deleteJob(bootstrapJobName(kvs, 1))
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ = f.writes()
	assert.NotContains(t, strings.Join(kube, " "), "apply jobs", "attempt 1 is not started again")
	assert.Equal(t, ReasonBootstrapJobLost, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}

// A suspended Job deleted before its release (the store paused meanwhile,
// say) never ran: the bootstrap starts again.
func TestBootstrapJobDeletedBeforeItsReleaseStartsAgain(t *testing.T) {
	f, kvs := bootstrapReady(t)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Equal(t, ReasonBootstrapStarting, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
	f.refreshCache("ns")
	f.deleteJob(bootstrapJobName(kvs, 1))
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Contains(t, kube, "apply jobs "+bootstrapJobName(kvs, 1), "it never ran: start again")
}

// A Job suspended by someone else once it ran is not resumed by us: that
// would start its restore again from the beginning.
func TestBootstrapReleasesOnlyItsOwnHeldJob(t *testing.T) {
	f, kvs := bootstrapRunning(t)
	job, err := f.kube.BatchV1().Jobs("ns").Get(context.Background(), bootstrapJobName(kvs, 1), metav1.GetOptions{})
	require.NoError(t, err)
	job.Spec.Suspend = ptr.To(true)
	job.Status.StartTime = ptr.To(metav1.NewTime(testNow))
	_, err = f.kube.BatchV1().Jobs("ns").Update(context.Background(), job, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.NotContains(t, strings.Join(kube, " "), "patch jobs")
}

// Pausing a store whose bootstrap failed for good keeps it Failed (found
// by review: the phase went back to Bootstrapping).
func TestPausedStoreKeepsItsFailedBootstrap(t *testing.T) {
	f, kvs := bootstrapRunning(t)
	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobComplete)
	f.deleteJob(bootstrapJobName(kvs, 1))
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Equal(t, v1alpha1.PhaseFailed, f.stored(kvs).Status.Phase)

	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Paused = true })
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	st := f.stored(kvs).Status
	assert.Equal(t, v1alpha1.PhaseFailed, st.Phase)
	assert.Equal(t, ReasonBootstrapJobLost, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}

// A refused Job (a quota, an admission policy) does not leave the store
// looking as if its bootstrap had started: the next pass tries again.
func TestRefusedBootstrapJobIsNotTakenForStarted(t *testing.T) {
	f, kvs := bootstrapReady(t)
	refused := false
	f.kube.PrependReactor("patch", "jobs", func(core.Action) (bool, runtime.Object, error) {
		if refused {
			return false, nil, nil
		}
		refused = true
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), bootstrapJobName(kvs, 1), errors.New("exceeded quota"))
	})
	res, err := f.sync(f.stored(kvs))
	require.NoError(t, err, "a quota's refusal is tried again every 30 s, not with the error backoff")
	assert.Equal(t, waitFallback, res.requeueAfter)
	require.True(t, refused)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Contains(t, kube, "apply jobs "+bootstrapJobName(kvs, 1), "tried again")
	assert.Equal(t, ReasonBootstrapStarting, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}

// A cache that still shows the backup Running (a relist, a lag) does not
// fail the store for good: the server's copy, Completed, decides (found by
// review).
func TestBootstrapSourceVerdictComesFromTheServer(t *testing.T) {
	kvs := newStore(withBootstrap("nightly"))
	f := newFixture(t, kvs, completedBackup("nightly"))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	f.cache(newBackup("nightly", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) {
		b.Spec.StoreName = "old"
		b.Status.Phase = v1alpha1.BackupPhaseRunning
	}))
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	kube, _ := f.writes()
	assert.Contains(t, kube, "apply jobs "+bootstrapJobName(kvs, 1))
	assert.NotEqual(t, v1alpha1.PhaseFailed, f.stored(kvs).Status.Phase)
}

// A store recreated under the same name finds the claims the earlier one
// kept (Retain, the default), and its StatefulSet takes them over with
// their data: a bootstrap would restore over it (found by review). Claims
// older than the StatefulSet stop the bootstrap for good, labelled or made
// by hand; the store's own claims do not. (The first replica's claim: a
// store recreated on kept claims runs on that store's data, see lineage.
// Another store's claim beside a claim of the store's own stops the
// replicas before it instead: TestCreationStopsBeforeAnotherStoresClaim.)
func TestBootstrapNeverRunsOverKeptClaims(t *testing.T) {
	hand := func(c *corev1.PersistentVolumeClaim) { c.Labels = nil }
	storeUID := func(uid string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) { c.Labels[LabelStoreUID] = uid }
	}
	for name, tc := range map[string]struct {
		created time.Time
		adjust  func(*corev1.PersistentVolumeClaim)
		refused bool
		ordinal int32 // of the claim; every ordinal is read
	}{
		"kept by an earlier store":      {created: testNow.Add(-time.Hour), adjust: storeUID("uid-0"), refused: true},
		"made by hand, unlabelled":      {created: testNow.Add(time.Second), adjust: hand, refused: true},
		"made by hand, a later ordinal": {created: testNow.Add(time.Second), adjust: hand, refused: true, ordinal: 2},
		"the store's own":               {created: testNow.Add(time.Second)},
		// The label decides, whatever the clocks say.
		"labelled for an earlier store, stamped later": {created: testNow.Add(time.Second), adjust: storeUID("uid-0"), refused: true},
		"labelled for this store, stamped earlier":     {created: testNow.Add(-time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore(withBootstrap("nightly"))
			claim := newClaim(kvs, dataClaimName(kvs, tc.ordinal), tc.created)
			if tc.adjust != nil {
				tc.adjust(claim)
			}
			f := newFixture(t, kvs, completedBackup("nightly"), claim)
			_, err := f.sync(kvs)
			require.NoError(t, err)
			f.statefulSetCreatedAt(kvs, testNow)
			f.markReady(kvs)
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ := f.writes()
			c := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped)
			require.NotNil(t, c)
			if !tc.refused {
				assert.Contains(t, kube, "apply jobs s-bootstrap-1")
				return
			}
			assert.NotContains(t, strings.Join(kube, " "), "apply jobs")
			assert.Equal(t, ReasonClaimsHoldData, c.Reason)
			assert.Contains(t, c.Message, claim.Name)
			assert.Equal(t, v1alpha1.PhaseFailed, f.stored(kvs).Status.Phase)

			// For good: not even once the claim is gone.
			require.NoError(t, f.kube.CoreV1().PersistentVolumeClaims("ns").Delete(context.Background(), claim.Name, metav1.DeleteOptions{}))
			f.refreshCache("ns")
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			kube, _ = f.writes()
			assert.NotContains(t, strings.Join(kube, " "), "apply jobs")
		})
	}
}

// Clients reach the store only once its bootstrap succeeded: writes they
// made while a restore runs, or between its attempts, would be overwritten
// by it (found by review: the client Service selected the data Pods from
// the first pass).
func TestNoClientServiceBeforeTheBootstrapSucceeds(t *testing.T) {
	f, kvs := bootstrapRunning(t)
	clientService := func() error {
		_, err := f.kube.CoreV1().Services("ns").Get(context.Background(), kvs.Name, metav1.GetOptions{})
		return err
	}
	assert.True(t, apierrors.IsNotFound(clientService()), "no clients while the bootstrap runs")

	f.finishJob(bootstrapJobName(kvs, 1), batchv1.JobFailed)
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Equal(t, ReasonBootstrapRetrying, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
	assert.True(t, apierrors.IsNotFound(clientService()), "nor between its attempts")

	f.now = f.now.Add(backupBackoff(1))
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	f.refreshCache("ns")
	f.finishJob(bootstrapJobName(kvs, 2), batchv1.JobComplete)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.NoError(t, clientService(), "clients once it succeeded")
}
