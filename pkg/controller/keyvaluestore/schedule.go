package keyvaluestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

// Reasons of the ScheduledBackupSucceeded condition.
const (
	ReasonScheduledBackupCompleted = "ScheduledBackupCompleted"
	ReasonScheduledBackupFailed    = "ScheduledBackupFailed"
	ReasonInvalidSchedule          = "InvalidSchedule"
	// ReasonScheduledBackupRefused: kube-apiserver refused to create the
	// due slot's backup (a ResourceQuota on backups).
	ReasonScheduledBackupRefused = "ScheduledBackupRefused"
)

// Scheduled backups kept besides the Completed ones spec.backup.keep
// counts: the newest failed ones, for their messages and Jobs' logs.
const keepFailedScheduledBackups = 3

// dueSlot is the latest slot of sched in (after, now], or zero if none:
// after downtime, only the most recent missed slot is taken. It bisects
// rather than walks: a walk over every slot had to stop at a bound, at a
// slot months old for a schedule firing every minute of some month, and the
// next pass walked on from there (a second catch-up backup).
func dueSlot(sched cron.Schedule, after, now time.Time) time.Time {
	if first := sched.Next(after); first.IsZero() || first.After(now) {
		return time.Time{}
	}
	// A slot lies in (lo, hi], none in (hi, now]; halve until one is left
	// (slots are whole seconds, so (lo, hi] of a second holds one).
	lo, hi := after, now
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if next := sched.Next(mid); !next.IsZero() && !next.After(hi) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sched.Next(lo)
}

// slotOf is the schedule slot a Scheduled backup was made for.
func slotOf(b *v1alpha1.KeyValueStoreBackup) (time.Time, bool) {
	if b.Spec.Reason != v1alpha1.BackupReasonScheduled {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, b.Annotations[slotAnnotation])
	return t, err == nil
}

// scheduledOf are the store's Scheduled backups, newest slot first.
func scheduledOf(backups []*v1alpha1.KeyValueStoreBackup) []*v1alpha1.KeyValueStoreBackup {
	var out []*v1alpha1.KeyValueStoreBackup
	for _, b := range backups {
		if _, ok := slotOf(b); ok {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.KeyValueStoreBackup) int {
		sa, _ := slotOf(a)
		sb, _ := slotOf(b)
		return sb.Compare(sa)
	})
	return out
}

// scheduling is what the schedule of one store needs done now.
type scheduling struct {
	// next is the next slot (zero without a schedule).
	next time.Time
	// due is a slot whose backup is to be created now (zero if none).
	due time.Time
	// prune are scheduled backups beyond what is kept.
	prune []*v1alpha1.KeyValueStoreBackup
	// scheduled are this store's scheduled backups, newest slot first.
	scheduled []*v1alpha1.KeyValueStoreBackup
	err       error
}

// planSchedule works out, from the store and its backups only (nothing in
// status is remembered), which slot is due, the next slot and what to prune.
func planSchedule(kvs *v1alpha1.KeyValueStore, backups []*v1alpha1.KeyValueStoreBackup, now time.Time) scheduling {
	b := kvs.Spec.Backup
	if b == nil || b.Schedule == "" {
		return scheduling{}
	}
	// Only this store's own: scheduled backups of an earlier store of the
	// same name are neither its position nor its to prune.
	scheduled := slices.DeleteFunc(scheduledOf(backups), func(b *v1alpha1.KeyValueStoreBackup) bool {
		return b.Annotations[storeUIDAnnotation] != string(kvs.UID)
	})
	if kvs.Spec.Paused || kvs.DeletionTimestamp != nil {
		// Nothing is due or pruned; those created still run, and the
		// newest finished one is still reported.
		return scheduling{scheduled: scheduled}
	}
	sched, err := validation.ParseSchedule(b.Schedule, b.TimeZone)
	if err != nil {
		return scheduling{err: err}
	}
	next := sched.Next(now)
	if next.IsZero() {
		// Stored before the API refused it: say so rather than never fire.
		return scheduling{err: errors.New("it matches no time in the next five years")}
	}
	after := kvs.CreationTimestamp.Time
	if len(scheduled) > 0 {
		newest, _ := slotOf(scheduled[0])
		after = later(after, newest)
	}
	due := dueSlot(sched, after, now)
	if slices.ContainsFunc(scheduled, func(b *v1alpha1.KeyValueStoreBackup) bool {
		return !backupFinished(b) && b.Status.Attempts == 0 && b.DeletionTimestamp == nil
	}) {
		// One still waits to start and takes the data when it runs: at
		// most one waits, however long backups are held up.
		due = time.Time{}
	}
	return scheduling{
		next:      next,
		due:       due,
		prune:     toPrune(scheduled, keepOf(b)),
		scheduled: scheduled,
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// toPrune are the Completed scheduled backups beyond keep and the failed
// ones beyond keepFailedScheduledBackups (scheduled: newest first). Manual
// and Final backups are never pruned; neither is the newest slot's backup,
// which the schedule reads its position from.
func toPrune(scheduled []*v1alpha1.KeyValueStoreBackup, keep int) []*v1alpha1.KeyValueStoreBackup {
	var out []*v1alpha1.KeyValueStoreBackup
	completed, failed := 0, 0
	for i, b := range scheduled {
		switch b.Status.Phase {
		case v1alpha1.BackupPhaseCompleted:
			completed++
			if completed > keep && i > 0 {
				out = append(out, b)
			}
		case v1alpha1.BackupPhaseFailed:
			failed++
			if failed > keepFailedScheduledBackups && i > 0 {
				out = append(out, b)
			}
		}
	}
	return out
}

// runSchedule creates the due slot's backup and prunes; it returns when to
// look again (the next slot).
func (c *Controller) runSchedule(ctx context.Context, kvs *v1alpha1.KeyValueStore, plan scheduling) (result, error) {
	if plan.err != nil {
		return result{}, nil // reported in status (ScheduledBackupSucceeded)
	}
	var refused error
	if !plan.due.IsZero() {
		err := c.createScheduledBackup(ctx, kvs, plan.due)
		switch {
		case exceededQuota(err):
			// Retention still runs (a lowered keep makes room); the
			// refusal is told, and tried again every 30 s: a quota frees
			// up as backups are deleted, which wakes nobody.
			refused = err
		case err != nil:
			return result{}, err
		}
	}
	if refused != nil {
		if len(plan.prune) > 0 {
			if _, err := c.pruneScheduled(ctx, kvs, plan.prune); err != nil {
				return result{}, err
			}
		}
		return result{requeueAfter: waitFallback}, c.recordScheduleRefusal(ctx, kvs, plan.due, refused)
	}
	if len(plan.prune) > 0 {
		pruned, err := c.pruneScheduled(ctx, kvs, plan.prune)
		if err != nil {
			return result{}, err
		}
		if !pruned {
			// The informer brings the store's change; the next pass prunes by it.
			return result{requeueAfter: time.Second}, nil
		}
	}
	if plan.next.IsZero() {
		return result{}, nil
	}
	// A second late rather than early: a requeue that lands before the slot
	// would find nothing due and wait a whole period. A pass that ended
	// after the slot it planned for looks again in a second.
	wait := max(plan.next.Sub(c.now().Time), 0) + time.Second
	return result{requeueAfter: wait, slot: wait}, nil
}

// recordScheduleRefusal tells on the store that the backup of slot was
// refused, with a Warning event when it was not refused before (not one
// per slot, nor per change of the quota's usage in the message).
func (c *Controller) recordScheduleRefusal(ctx context.Context, kvs *v1alpha1.KeyValueStore, slot time.Time, refusal error) error {
	msg := fmt.Sprintf("the backup of the slot at %s was refused: %v; tried again every 30 s. Deleting backups, lowering spec.backup.keep or raising the quota makes room",
		slot.UTC().Format(time.RFC3339), errors.Unwrap(refusal))
	was, err := c.updateStatus(ctx, kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionScheduledBackupSucceeded,
			Status: metav1.ConditionFalse, Reason: ReasonScheduledBackupRefused, Message: msg, ObservedGeneration: k.Generation})
		return st
	})
	before := meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
	if err == nil && (before == nil || before.Reason != ReasonScheduledBackupRefused) {
		c.recorder.Event(kvs, corev1.EventTypeWarning, ReasonScheduledBackupRefused, msg)
	}
	return err
}

// pruneScheduled deletes the scheduled backups beyond retention, each with
// a UID precondition; pruned is false, and nothing is deleted, when a fresh
// read of the store shows a keep the cache has not seen yet. (kvs is the
// spec the plan was made for: syncStore runs the schedule only then.)
func (c *Controller) pruneScheduled(ctx context.Context, kvs *v1alpha1.KeyValueStore, prune []*v1alpha1.KeyValueStoreBackup) (pruned bool, err error) {
	if current, err := c.retentionUnchanged(ctx, kvs); err != nil || !current {
		return false, err
	}
	restoring, err := c.backupsBeingRestored(ctx, kvs.Namespace)
	if err != nil {
		return false, err
	}
	for _, b := range prune {
		if restoring[b.Name] {
			continue // a store restores from it; a later slot's pruning takes it
		}
		err := c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &b.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("prune scheduled backup %s: %w", b.Name, err)
		}
	}
	return true, nil
}

// backupsBeingRestored are the backups of the namespace that a store's
// bootstrap, not yet decided, restores from (spec.bootstrap.fromBackup):
// pruning must not take the data a restore is about to read. Listed from
// the server, not the cache: a store just created may restore from the
// oldest backup kept.
func (c *Controller) backupsBeingRestored(ctx context.Context, namespace string) (map[string]bool, error) {
	stores, err := c.kvs.KvstoreV1alpha1().KeyValueStores(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list stores restoring from backups: %w", err)
	}
	out := map[string]bool{}
	for i := range stores.Items {
		if s := &stores.Items[i]; bootstrapUndecided(s) && s.Spec.Bootstrap.FromBackup != "" {
			out[s.Spec.Bootstrap.FromBackup] = true
		}
	}
	return out, nil
}

// retentionUnchanged re-reads the store from the server, not the cache,
// before backups are pruned: only the same store, still keeping as many
// backups as the cached copy says, loses them.
func (c *Controller) retentionUnchanged(ctx context.Context, kvs *v1alpha1.KeyValueStore) (bool, error) {
	fresh, err := c.kvs.KvstoreV1alpha1().KeyValueStores(kvs.Namespace).Get(ctx, kvs.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("re-read the store before pruning backups: %w", err)
	}
	return fresh.UID == kvs.UID && fresh.Spec.Backup != nil && keepOf(fresh.Spec.Backup) == keepOf(kvs.Spec.Backup), nil
}

// defaultKeep is spec.backup.keep's default in the API (+default=7); the
// server fills it in, so it only matters for a store the cache got unset.
const defaultKeep = 7

// keepOf is how many Completed scheduled backups b keeps.
func keepOf(b *v1alpha1.BackupSpec) int {
	return int(ptr.Deref(b.Keep, defaultKeep))
}

func (c *Controller) createScheduledBackup(ctx context.Context, kvs *v1alpha1.KeyValueStore, slot time.Time) error {
	b := &v1alpha1.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        scheduledBackupName(kvs, slot),
			Namespace:   kvs.Namespace,
			Labels:      labelsFor(kvs, ComponentBackup),
			Annotations: map[string]string{slotAnnotation: slot.UTC().Format(time.RFC3339), storeUIDAnnotation: string(kvs.UID)},
		},
		Spec: v1alpha1.KeyValueStoreBackupSpec{StoreName: kvs.Name, Reason: v1alpha1.BackupReasonScheduled},
	}
	_, err := c.kvs.KvstoreV1alpha1().KeyValueStoreBackups(kvs.Namespace).Create(ctx, b, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // this slot was taken already (by us before a restart, or by the previous leader)
	case err != nil:
		return fmt.Errorf("create scheduled backup %s: %w", b.Name, err)
	}
	c.recorder.Eventf(kvs, corev1.EventTypeNormal, "Created", "Created KeyValueStoreBackup %s for the slot at %s", b.Name, slot.UTC().Format(time.RFC3339))
	return nil
}

// observeBackups sets the backup fields of status: lastBackupTime (the
// newest Completed backup of any reason taken for this store, not an
// earlier one of its name), nextBackupTime and the outcome of
// the newest finished scheduled backup.
func observeBackups(st *v1alpha1.KeyValueStoreStatus, kvs *v1alpha1.KeyValueStore, backups []*v1alpha1.KeyValueStoreBackup, plan scheduling) {
	for _, b := range backups {
		if b.Status.Phase == v1alpha1.BackupPhaseCompleted && b.Status.CompletionTime != nil && !takenForAnother(b, kvs) &&
			(st.LastBackupTime == nil || st.LastBackupTime.Before(b.Status.CompletionTime)) {
			st.LastBackupTime = b.Status.CompletionTime.DeepCopy()
		}
	}
	st.NextBackupTime = nil
	if !plan.next.IsZero() {
		st.NextBackupTime = &metav1.Time{Time: plan.next}
	}
	set := func(s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionScheduledBackupSucceeded,
			Status: s, Reason: reason, Message: msg, ObservedGeneration: kvs.Generation})
	}
	if b := kvs.Spec.Backup; b == nil || b.Schedule == "" {
		// A condition about a schedule the store no longer has.
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
		return
	}
	if plan.err != nil {
		msg := "spec.backup.schedule cannot be run: " + plan.err.Error()
		if tzErr := (*validation.TimeZoneError)(nil); errors.As(plan.err, &tzErr) {
			msg = "the backup schedule cannot be run: " + tzErr.Error()
		}
		set(metav1.ConditionFalse, ReasonInvalidSchedule, msg)
		return
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionScheduledBackupSucceeded); c != nil {
		switch {
		case c.Reason == ReasonScheduledBackupRefused && !plan.due.IsZero():
			return // still refused, until a create is let through
		case c.Reason == ReasonInvalidSchedule || c.Reason == ReasonScheduledBackupRefused:
			// The schedule runs now, or the backup was created: until a
			// scheduled backup finishes there is nothing to report, not
			// the refusal.
			meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionScheduledBackupSucceeded)
		}
	}
	i := slices.IndexFunc(plan.scheduled, backupFinished)
	if i < 0 {
		return
	}
	last := plan.scheduled[i]
	if last.Status.Phase == v1alpha1.BackupPhaseCompleted {
		set(metav1.ConditionTrue, ReasonScheduledBackupCompleted, fmt.Sprintf("scheduled backup %s completed", last.Name))
	} else {
		set(metav1.ConditionFalse, ReasonScheduledBackupFailed, fmt.Sprintf("scheduled backup %s failed: %s", last.Name, last.Status.Message))
	}
}
