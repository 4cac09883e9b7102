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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

func withSchedule(schedule string, keep int32) func(*v1alpha1.KeyValueStore) {
	return func(k *v1alpha1.KeyValueStore) {
		withBackup(k)
		k.Spec.Backup.Schedule = schedule
		k.Spec.Backup.Keep = ptr.To(keep)
		k.CreationTimestamp = metav1.NewTime(testNow.Add(-30 * time.Minute))
	}
}

func scheduledBackup(kvs *v1alpha1.KeyValueStore, slot time.Time, phase v1alpha1.KeyValueStoreBackupPhase) *v1alpha1.KeyValueStoreBackup {
	return newBackup(scheduledBackupName(kvs, slot), v1alpha1.BackupReasonScheduled, func(b *v1alpha1.KeyValueStoreBackup) {
		b.Annotations = map[string]string{slotAnnotation: slot.UTC().Format(time.RFC3339), storeUIDAnnotation: string(kvs.UID)}
		b.Status.Phase = phase
		if phase == v1alpha1.BackupPhaseCompleted {
			b.Status.CompletionTime = ptr.To(metav1.NewTime(slot.Add(time.Minute)))
		}
	})
}

// completedHourly are n Completed scheduled backups of kvs, one per hour
// before testNow.
func completedHourly(kvs *v1alpha1.KeyValueStore, n int) []runtime.Object {
	var objs []runtime.Object
	for h := 1; h <= n; h++ {
		objs = append(objs, scheduledBackup(kvs, testNow.Add(-time.Duration(h)*time.Hour), v1alpha1.BackupPhaseCompleted))
	}
	return objs
}

// serverHas makes the fake server answer every GET of a store with kvs (its
// status writes would otherwise put the cached spec back into its store).
func (f *fixture) serverHas(kvs *v1alpha1.KeyValueStore) {
	f.kvs.PrependReactor("get", "keyvaluestores", func(core.Action) (bool, runtime.Object, error) {
		return true, kvs.DeepCopy(), nil
	})
}

// statusWritesConflict makes every status write of kvs conflict, as when
// someone else wrote the store first; it counts them.
func (f *fixture) statusWritesConflict(kvs *v1alpha1.KeyValueStore) *int {
	n := new(int)
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		*n++
		return true, nil, apierrors.NewConflict(v1alpha1.Resource("keyvaluestores"), kvs.Name, errors.New("the object has been modified"))
	})
	return n
}

func TestDueSlot(t *testing.T) {
	hourly, err := validation.ParseSchedule("0 * * * *", nil)
	require.NoError(t, err)
	at := func(h, m int) time.Time { return time.Date(2026, 11, 30, h, m, 0, 0, time.UTC) }
	assert.Equal(t, at(12, 0), dueSlot(hourly, at(11, 30), at(12, 0)), "a slot at now is due")
	assert.True(t, dueSlot(hourly, at(12, 0), at(12, 59)).IsZero(), "nothing due before the next slot")
	assert.Equal(t, at(12, 0), dueSlot(hourly, at(3, 0), at(12, 30)), "after downtime: only the latest missed slot")
	minutely, err := validation.ParseSchedule("* * * * *", nil)
	require.NoError(t, err)
	assert.Equal(t, at(12, 0), dueSlot(minutely, at(0, 0).AddDate(-1, 0, 0), at(12, 0)),
		"after a year of downtime, the latest minutely slot (before: one in February, then another on each pass)")
	january, err := validation.ParseSchedule("0 * * 1 *", nil)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), dueSlot(january, at(0, 0).AddDate(-2, 0, 0), at(12, 0)),
		"no slot in the last week: the walk goes further back")
	everyMinuteOfJanuary, err := validation.ParseSchedule("* * * 1 *", nil)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 1, 31, 23, 59, 0, 0, time.UTC), dueSlot(everyMinuteOfJanuary, at(0, 0).AddDate(-3, 0, 0), at(12, 0)),
		"the latest slot however many lie between (a walk stopped at its bound in early January, and the next pass took a second catch-up; found by review)")
	for _, tz := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(tz)
		require.NoError(t, err)
		for _, spec := range []string{"30 2 * * *", "*/7 * * * *", "0 0 29 2 *", "15 1 * * 0"} {
			sched, err := validation.ParseSchedule(spec, ptr.To(tz))
			require.NoError(t, err)
			for _, now := range []time.Time{time.Date(2026, 3, 29, 3, 0, 0, 0, loc), time.Date(2026, 11, 1, 1, 45, 0, 0, loc), at(12, 0)} {
				after := now.AddDate(0, -2, 0)
				want := time.Time{}
				for t := sched.Next(after); !t.IsZero() && !t.After(now); t = sched.Next(t) {
					want = t
				}
				assert.True(t, want.Equal(dueSlot(sched, after, now)), "%s %q at %s: want %s, got %s", tz, spec, now, want, dueSlot(sched, after, now))
			}
		}
	}
}

// The schedule creates the due slot's backup once, with a deterministic
// name; a second pass, a restart or a new leader finds it and creates none.
func TestScheduleCreatesEachSlotOnce(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7))
	f := newFixture(t, kvs)
	res, err := f.sync(kvs)
	require.NoError(t, err)
	_, own := f.writes()
	slot := testNow // 12:00, created 11:30
	assert.Contains(t, own, "create keyvaluestorebackups "+scheduledBackupName(kvs, slot))
	assert.Equal(t, "s-202611301200", scheduledBackupName(kvs, slot))
	assert.Equal(t, time.Hour+time.Second, res.requeueAfter, "woken for the next slot, not polled")
	next := f.stored(kvs).Status.NextBackupTime
	require.NotNil(t, next)
	assert.True(t, next.Time.Equal(testNow.Add(time.Hour)))

	// A restarted controller over the same state: no second backup for the slot.
	f.refreshCache("ns")
	f.c, err = f.newController(f.recorder)
	require.NoError(t, err)
	f.c.now = func() metav1.Time { return metav1.NewTime(f.now) }
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	_, own = f.writes()
	for _, w := range own {
		assert.NotContains(t, w, "create keyvaluestorebackups")
	}
	// Even a leader whose cache missed it: the create is refused as a duplicate.
	require.NoError(t, f.c.createScheduledBackup(t.Context(), kvs, slot))
}

func TestSchedulePausedOrDeleting(t *testing.T) {
	for name, stop := range map[string]func(f *fixture, kvs *v1alpha1.KeyValueStore){
		"paused": func(f *fixture, kvs *v1alpha1.KeyValueStore) {
			k := f.stored(kvs)
			k.Spec.Paused = true
			_, err := f.kvs.KvstoreV1alpha1().KeyValueStores("ns").Update(context.Background(), k, metav1.UpdateOptions{})
			require.NoError(f.t, err)
		},
		// Before the fix a teardown kept the last slot, in the past while a
		// final backup failed (found by review).
		"deleting": func(f *fixture, kvs *v1alpha1.KeyValueStore) { f.deleteStore(kvs) },
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore(withSchedule("0 * * * *", 7))
			f := newFixture(t, kvs)
			_, err := f.sync(kvs)
			require.NoError(t, err)
			require.NotNil(t, f.stored(kvs).Status.NextBackupTime)

			stop(f, kvs)
			f.refreshCache("ns")
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			_, own := f.writes()
			for _, w := range own {
				assert.NotContains(t, w, "create keyvaluestorebackups")
			}
			assert.Nil(t, f.stored(kvs).Status.NextBackupTime)
		})
	}
}

// Retention: only Completed scheduled backups beyond keep go (and failed
// ones beyond three); Manual and Final backups are never pruned.
func TestSchedulePrunesBeyondKeep(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 2))
	objs := completedHourly(kvs, 4)
	manual := newBackup("manual", v1alpha1.BackupReasonManual, func(b *v1alpha1.KeyValueStoreBackup) { b.Status.Phase = v1alpha1.BackupPhaseCompleted })
	final := newBackup("final", v1alpha1.BackupReasonFinal, func(b *v1alpha1.KeyValueStoreBackup) { b.Status.Phase = v1alpha1.BackupPhaseCompleted })
	f := newFixture(t, kvs, append(objs, manual, final)...)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	_, own := f.writes()
	assert.Contains(t, own, "delete keyvaluestorebackups "+scheduledBackupName(kvs, testNow.Add(-3*time.Hour)))
	assert.Contains(t, own, "delete keyvaluestorebackups "+scheduledBackupName(kvs, testNow.Add(-4*time.Hour)))
	assert.NotContains(t, own, "delete keyvaluestorebackups "+scheduledBackupName(kvs, testNow.Add(-2*time.Hour)))
	assert.NotContains(t, own, "delete keyvaluestorebackups manual")
	assert.NotContains(t, own, "delete keyvaluestorebackups final")
	// The 12:00 slot (newest 11:00 backup, now 12:00) is due.
	assert.Contains(t, own, "create keyvaluestorebackups "+scheduledBackupName(kvs, testNow))
	cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
}

// The last scheduled backup's failure shows on the store, with one Warning.
func TestScheduledBackupFailureIsReported(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7))
	failed := scheduledBackup(kvs, testNow, v1alpha1.BackupPhaseFailed)
	failed.Status.Message = "attempt 3 of 3 failed"
	f := newFixture(t, kvs, failed)
	for range 2 {
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
	}
	cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Contains(t, cond.Message, "attempt 3 of 3 failed")
	n := 0
	for _, e := range f.events() {
		if strings.Contains(e, "Warning ScheduledBackupFailed") {
			n++
		}
	}
	assert.Equal(t, 1, n)
}

// A scheduled backup deleted before it started (held by a finalizer) is
// never started, and does not hold the next slots back (found by review:
// the schedule stopped without a word).
func TestAScheduledBackupDeletedBeforeItStartedHoldsNothingBack(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7))
	kvs.CreationTimestamp = metav1.NewTime(testNow.Add(-3 * time.Hour))
	waiting := scheduledBackup(kvs, testNow.Add(-2*time.Hour), v1alpha1.BackupPhasePending)
	waiting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	plan := planSchedule(kvs, []*v1alpha1.KeyValueStoreBackup{waiting}, testNow)
	assert.False(t, plan.due.IsZero(), "the next slot is due")
}

// A paused store still reports the newest finished scheduled backup:
// those already created still run, and one that failed while the store
// was paused is told (found by review: the condition kept the success
// before the pause).
func TestAPausedStoreReportsItsNewestScheduledBackup(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7), func(k *v1alpha1.KeyValueStore) { k.Spec.Paused = true })
	completed := scheduledBackup(kvs, testNow.Add(-time.Hour), v1alpha1.BackupPhaseCompleted)
	st := kvs.Status.DeepCopy()
	observeBackups(st, kvs, []*v1alpha1.KeyValueStoreBackup{completed}, planSchedule(kvs, []*v1alpha1.KeyValueStoreBackup{completed}, testNow))
	require.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionScheduledBackupSucceeded))

	failed := scheduledBackup(kvs, testNow, v1alpha1.BackupPhaseFailed)
	backups := []*v1alpha1.KeyValueStoreBackup{failed, completed}
	plan := planSchedule(kvs, backups, testNow)
	assert.True(t, plan.due.IsZero(), "nothing is due while paused")
	assert.Empty(t, plan.prune, "nothing is pruned while paused")
	observeBackups(st, kvs, backups, plan)
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Nil(t, st.NextBackupTime)
}

// An event tells a condition's change once, not again with every spec
// change: the conditions are stamped with each new generation, and an
// Event was sent whenever the stamp moved (a BootstrapSucceeded after each
// HPA scale step for the store's whole life; the same ScheduledBackupFailed
// Warning after each edit). Found by review.
func TestAnEventIsToldOnceNotPerSpecChange(t *testing.T) {
	changeSpecTwice := func(f *fixture, kvs *v1alpha1.KeyValueStore) string {
		var events []string
		for i := range 2 {
			f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Replicas = ptr.To(int32(4 + i)) })
			_, err := f.sync(f.stored(kvs))
			require.NoError(t, err)
			f.markReady(kvs)
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			events = append(events, f.events()...)
		}
		return strings.Join(events, "\n")
	}
	t.Run("bootstrap succeeded", func(t *testing.T) {
		f, kvs := bootstrapFinished(t, batchv1.JobComplete)
		require.Equal(t, 1, strings.Count(strings.Join(f.events(), "\n"), ReasonBootstrapSucceeded))
		assert.NotContains(t, changeSpecTwice(f, kvs), ReasonBootstrapSucceeded)
	})
	t.Run("scheduled backup failed", func(t *testing.T) {
		kvs := newStore(withSchedule("0 * * * *", 7))
		failed := scheduledBackup(kvs, testNow, v1alpha1.BackupPhaseFailed)
		f := newFixture(t, kvs, failed)
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
		require.Equal(t, 1, strings.Count(strings.Join(f.events(), "\n"), "Warning ScheduledBackupFailed"))
		assert.NotContains(t, changeSpecTwice(f, kvs), "ScheduledBackupFailed")
	})
}

// The condition goes with the schedule: before, a failure reported while
// the store had a schedule stayed for ever once it was removed (found by
// review).
func TestScheduleConditionGoesWithTheSchedule(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7))
	failed := scheduledBackup(kvs, testNow, v1alpha1.BackupPhaseFailed)
	f := newFixture(t, kvs, failed)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	require.NotNil(t, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded))

	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Backup.Schedule = "" })
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Nil(t, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded))
}

// A sync that fails still wakes the store at its next slot: the rate
// limiter's backoff alone grows to 1000 s, and every slot's backup came up
// to that late (found by review).
func TestFailingSyncKeepsItsScheduledWakeUp(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7))
	f := newFixture(t, kvs)
	f.failStatusWrites()
	clock := f.slowBackoffQueue()
	f.c.queue.Add("ns/s")
	require.True(t, f.c.processNext(context.Background()))
	require.Zero(t, f.c.queue.Len(), "the failed sync waits")

	clock.Step(time.Hour + 2*time.Second) // past the 13:00 slot, long before the backoff's 10 h
	assert.Eventually(t, func() bool { return f.c.queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"woken for the next slot despite the error")
}

// Only the slot survives a failed sync: a short wait (a bootstrap about to
// be released, a prune waiting for the cache) asked for by a sync that
// fails every time would retry it every second, defeating the backoff.
func TestFailingSyncKeepsItsBackoffForShortWaits(t *testing.T) {
	f, kvs := bootstrapReady(t) // its next pass creates the held Job and asks for a second
	f.failStatusWrites()
	res, err := f.sync(f.stored(kvs))
	require.Error(t, err)
	require.Equal(t, time.Second, res.requeueAfter, "the premise: a short wait with the error")
	require.Zero(t, res.slot, "no schedule, no slot")

	clock := f.slowBackoffQueue()
	f.c.queue.Add("ns/s")
	require.True(t, f.c.processNext(context.Background()))
	clock.Step(time.Minute)
	assert.Never(t, func() bool { return f.c.queue.Len() > 0 }, 300*time.Millisecond, 10*time.Millisecond, "the backoff holds")
}

// slowBackoffQueue gives the controller a queue on a fake clock whose
// error backoff is 10 h, so that any sooner requeue is the sync's own.
func (f *fixture) slowBackoffQueue() *testingclock.FakeClock {
	clock := testingclock.NewFakeClock(testNow)
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Hour, 10*time.Hour)
	f.c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(backoff, workqueue.TypedRateLimitingQueueConfig[string]{Clock: clock})
	f.t.Cleanup(f.c.queue.ShutDown)
	return clock
}

// A schedule that matches no time (30 February) stored before the API
// refused it is reported, not silently never run (found by review).
func TestScheduleThatNeverComesIsReported(t *testing.T) {
	kvs := newStore(withSchedule("0 0 30 2 *", 7))
	f := newFixture(t, kvs)
	assert.Contains(t, f.invalidScheduleMessage(kvs), "no time in the next five years")

	// Fixed: the report goes at once (it stayed until a scheduled backup
	// had finished, and a second unrunnable schedule with the same message
	// then told nothing; found by review).
	require.Equal(t, 1, strings.Count(strings.Join(f.events(), "\n"), "Warning InvalidSchedule"))
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Backup.Schedule = "0 3 * * *" })
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Nil(t, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded))
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Backup.Schedule = "0 0 30 2 *" })
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(strings.Join(f.events(), "\n"), "Warning InvalidSchedule"), "told again")
}

// A stored time zone the server cannot load where it runs now (the API
// keeps accepting it while an update leaves it as it is) is reported as the
// field it is: the message blamed spec.backup.schedule.
func TestScheduleInAZoneThatDoesNotLoadNamesTheZone(t *testing.T) {
	kvs := newStore(withSchedule("0 3 * * *", 7), func(k *v1alpha1.KeyValueStore) { k.Spec.Backup.TimeZone = ptr.To("Mars/Olympus") })
	msg := newFixture(t, kvs).invalidScheduleMessage(kvs)
	assert.Contains(t, msg, `spec.backup.timeZone "Mars/Olympus"`)
	assert.NotContains(t, msg, "spec.backup.schedule")
}

// invalidScheduleMessage syncs the store and returns the message of its
// ScheduledBackupSucceeded condition, which must say InvalidSchedule.
func (f *fixture) invalidScheduleMessage(kvs *v1alpha1.KeyValueStore) string {
	f.t.Helper()
	_, err := f.sync(f.stored(kvs))
	require.NoError(f.t, err)
	cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	require.NotNil(f.t, cond)
	assert.Equal(f.t, ReasonInvalidSchedule, cond.Reason)
	return cond.Message
}

// Pruning deletes backups: it follows keep as the server has it, not as a
// lagging cache does. Before the fix a user who had just raised keep could
// lose the backups the new value keeps.
func TestSchedulePrunesOnlyWithTheServersKeep(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 1))
	objs := completedHourly(kvs, 4)
	f := newFixture(t, kvs, objs...)
	raised := kvs.DeepCopy()
	raised.Spec.Backup.Keep = ptr.To[int32](5)
	// The server's answer (the fake's status updates would put the cached
	// spec back into its store).
	f.serverHas(raised)
	_, err := f.sync(kvs) // the cache still says keep 1
	require.NoError(t, err)
	_, own := f.writes()
	for _, w := range own {
		assert.NotContains(t, w, "delete")
	}
}

// A status write that conflicts brings the server's store, with a keep the
// plan was not made for: the pass must not prune by that stale plan (the
// re-read before pruning compared the server's keep with the one just
// brought in, both 5, and deleted three backups kept at 5; found by review).
func TestScheduleDoesNotPruneByAPlanAConflictOutdated(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 1))
	objs := completedHourly(kvs, 4)
	f := newFixture(t, kvs, objs...)
	raised := kvs.DeepCopy()
	raised.Generation++
	raised.Spec.Backup.Keep = ptr.To[int32](5)
	raised.ResourceVersion = "2"
	f.statusWritesConflict(kvs)
	f.serverHas(raised)
	_, _ = f.sync(kvs) // the cache still says keep 1; the status write conflicts
	_, own := f.writes()
	for _, w := range own {
		assert.NotContains(t, w, "delete")
		assert.NotContains(t, w, "create keyvaluestorebackups")
	}
}

// The same when the conflict comes earlier in the pass, at the bootstrap's
// release: the plan is the generation the pass began with, not the one the
// conflict brought in (a store just paused got the due slot's backup).
func TestScheduleDoesNotRunAPlanAnEarlierConflictOutdated(t *testing.T) {
	f, kvs := bootstrapReady(t, withSchedule("0 * * * *", 7))
	_, err := f.sync(f.stored(kvs)) // the held bootstrap Job, the 12:00 slot's backup
	require.NoError(t, err)
	taken := f.backup(scheduledBackupName(kvs, testNow))
	taken.Status.Phase = v1alpha1.BackupPhaseCompleted // as if taken (none waits, or the next slot would not be)
	_, err = f.kvs.KvstoreV1alpha1().KeyValueStoreBackups("ns").UpdateStatus(context.Background(), taken, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refreshCache("ns")
	paused := f.stored(kvs)
	paused.Generation++
	paused.Spec.Paused = true
	paused.ResourceVersion = "99"
	conflicted := f.statusWritesConflict(kvs)
	f.serverHas(paused)
	f.now = f.now.Add(time.Hour) // the next slot is due in this pass
	_, _ = f.sync(f.stored(kvs))
	require.Positive(t, *conflicted)
	_, own := f.writes()
	for _, w := range own {
		assert.NotContains(t, w, "create keyvaluestorebackups")
	}
}

// Scheduled backups of an earlier store of the same name are not pruned by
// the new one (they may be what the user restores from).
func TestScheduleLeavesAnEarlierStoresBackups(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 1))
	var objs []runtime.Object
	for h := 2; h <= 4; h++ {
		old := scheduledBackup(kvs, testNow.Add(-time.Duration(h)*time.Hour), v1alpha1.BackupPhaseCompleted)
		old.Annotations[storeUIDAnnotation] = "uid-of-an-earlier-store"
		objs = append(objs, old)
	}
	f := newFixture(t, kvs, objs...)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	_, own := f.writes()
	for _, w := range own {
		assert.NotContains(t, w, "delete")
	}
}

// A pass that ends after the slot it planned for (slow writes, a clock
// step) still wakes the store: a negative requeue used to win over every
// other one in sooner and then be dropped, so the next slot, a backoff and
// a bootstrap retry all waited for an unrelated event (found by review).
func TestScheduleRequeueNeverNegative(t *testing.T) {
	assert.Equal(t, 30*time.Second, result{requeueAfter: -time.Second}.sooner(result{requeueAfter: 30 * time.Second}).requeueAfter)
	assert.Equal(t, 30*time.Second, result{requeueAfter: 30 * time.Second}.sooner(result{requeueAfter: -time.Second}).requeueAfter)

	kvs := newStore(withSchedule("* * * * *", 7))
	f := newFixture(t, kvs)
	plan := planSchedule(kvs, nil, f.now)
	require.False(t, plan.next.IsZero())
	f.now = plan.next.Add(2 * time.Second) // the pass ended after the slot
	res, err := f.c.runSchedule(context.Background(), kvs, plan)
	require.NoError(t, err)
	assert.Positive(t, res.requeueAfter)
}

// Retention never deletes the backup another store is still restoring
// from (spec.bootstrap.fromBackup, its bootstrap undecided): that can be
// the only copy of the data it restores (found by review).
func TestSchedulePruningKeepsABackupBeingRestored(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 1))
	var objs []runtime.Object
	for h := 1; h <= 3; h++ {
		objs = append(objs, scheduledBackup(kvs, testNow.Add(-time.Duration(h)*time.Hour), v1alpha1.BackupPhaseCompleted))
	}
	source := scheduledBackupName(kvs, testNow.Add(-3*time.Hour))
	restoring := newStore(withBootstrap(source), func(k *v1alpha1.KeyValueStore) { k.Name, k.UID = "b", "uid-b" })
	f := newFixture(t, kvs, objs...)
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStores("ns").Create(context.Background(), restoring, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = f.sync(kvs)
	require.NoError(t, err)
	_, own := f.writes()
	assert.Contains(t, own, "delete keyvaluestorebackups "+scheduledBackupName(kvs, testNow.Add(-2*time.Hour)))
	assert.NotContains(t, own, "delete keyvaluestorebackups "+source, "store b restores from it")
}

// While a scheduled backup waits to start (another backup runs long, the
// bootstrap is undecided), the next slots create no more: at most one
// waits, and it takes the data when it runs (found by review: one Pending
// backup per slot piled up, then all ran back to back).
func TestScheduleKeepsAtMostOneWaitingBackup(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 7))
	waiting := scheduledBackup(kvs, testNow.Add(-time.Hour), v1alpha1.BackupPhasePending)
	plan := planSchedule(kvs, []*v1alpha1.KeyValueStoreBackup{waiting}, testNow)
	assert.True(t, plan.due.IsZero(), "no second waiting backup: %v", plan.due)
	assert.False(t, plan.next.IsZero(), "the schedule still wakes the store")

	running := scheduledBackup(kvs, testNow.Add(-time.Hour), v1alpha1.BackupPhaseRunning)
	running.Status.Attempts = 1
	assert.Equal(t, testNow, planSchedule(kvs, []*v1alpha1.KeyValueStoreBackup{running}, testNow).due, "one that runs does not hold the next slot")
}

// A scheduled backup refused by a quota on backups shows on the store
// (ScheduledBackupSucceeded False, one Warning) and is tried again every
// 30 s, not after the workqueue's growing backoff; retention still runs,
// so lowering keep makes room. Before, the refusal was only a sync error:
// the condition kept the last success, and pruning, which came after the
// create, never ran (found by review).
func TestAScheduledBackupRefusedByAQuotaIsToldAndRetentionRuns(t *testing.T) {
	kvs := newStore(withSchedule("0 * * * *", 2))
	f := newFixture(t, kvs, completedHourly(kvs, 4)...)
	refusal := "exceeded quota: backups, requested: count/keyvaluestorebackups.kvstore.io=1, used: count/keyvaluestorebackups.kvstore.io=4, limited: count/keyvaluestorebackups.kvstore.io=4"
	refused := true
	f.kvs.PrependReactor("create", "keyvaluestorebackups", func(a core.Action) (bool, runtime.Object, error) {
		if !refused {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(v1alpha1.Resource("keyvaluestorebackups"), scheduledBackupName(kvs, testNow), errors.New(refusal))
	})
	told := 0 // f.events drains what was recorded
	warnings := func() int {
		told += strings.Count(strings.Join(f.events(), "\n"), "Warning "+ReasonScheduledBackupRefused)
		return told
	}
	for range 2 {
		res, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		assert.Equal(t, waitFallback, res.requeueAfter, "tried again in 30 s")
		_, own := f.writes()
		assert.Contains(t, own, "delete keyvaluestorebackups "+scheduledBackupName(kvs, testNow.Add(-4*time.Hour)), "pruned all the same")
		cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionFalse, cond.Status)
		assert.Equal(t, ReasonScheduledBackupRefused, cond.Reason)
		assert.Equal(t, "the backup of the slot at 2026-11-30T12:00:00Z was refused: "+
			`keyvaluestorebackups.kvstore.io "s-202611301200" is forbidden: `+refusal+
			"; tried again every 30 s. Deleting backups, lowering spec.backup.keep or raising the quota makes room", cond.Message)
		f.refreshCache("ns")
	}
	assert.Equal(t, 1, warnings(), "told once")
	// Nor again for each later slot refused (found by review: a minutely
	// schedule under a full quota told it 1440 times a day).
	f.now = f.now.Add(time.Hour)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Contains(t, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded).Message,
		"the backup of the slot at 2026-11-30T13:00:00Z was refused")
	assert.Equal(t, 1, warnings(), "told once, not per slot")
	f.refreshCache("ns")

	refused = false
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	_, own := f.writes()
	assert.Contains(t, own, "create keyvaluestorebackups "+scheduledBackupName(kvs, testNow.Add(time.Hour)))
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	cond := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	require.NotNil(t, cond)
	assert.Equal(t, ReasonScheduledBackupCompleted, cond.Reason, "created: what the backups say again")
}
