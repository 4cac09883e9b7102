package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// validBackup returns an internal backup that passes create validation, as
// the v1alpha1 defaulting would leave it.
func validBackup() *kvstore.KeyValueStoreBackup {
	return &kvstore.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-backup", Namespace: "default"},
		Spec:       kvstore.KeyValueStoreBackupSpec{StoreName: "demo", Reason: kvstore.BackupReasonManual},
	}
}

func TestValidateKeyValueStoreBackup(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*kvstore.KeyValueStoreBackup)
		want   []fieldErr
	}{
		{"valid", func(*kvstore.KeyValueStoreBackup) {}, expect()},
		{"scheduled", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = kvstore.BackupReasonScheduled }, expect()},
		{"final", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = kvstore.BackupReasonFinal }, expect()},
		{"store name of the longest store", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = strings.Repeat("a", MaxNameLength) }, expect()},
		{"missing store name", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = "" }, expect(required("spec.storeName"))},
		{"store name not a store name", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = "Demo.Store" }, expect(invalid("spec.storeName"))},
		{"store name starting with a digit", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = "1demo" }, expect(invalid("spec.storeName"))},
		{"store name too long for a store", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = strings.Repeat("a", MaxNameLength+1) }, expect(invalid("spec.storeName"))},
		{"bad reason", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = "Whim" }, expect(notSupported("spec.reason"))},
		{"lower-case reason", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = "manual" }, expect(notSupported("spec.reason"))},
		{"missing reason", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = "" }, expect(required("spec.reason"))},
		{"missing name", func(b *kvstore.KeyValueStoreBackup) { b.Name = "" }, expect(required("metadata.name"))},
		{"name not a DNS label", func(b *kvstore.KeyValueStoreBackup) { b.Name = "demo.backup" }, expect(invalid("metadata.name"))},
		{"name too long for a Job", func(b *kvstore.KeyValueStoreBackup) { b.Name = strings.Repeat("a", 64) }, expect(invalid("metadata.name"))},
		{"missing namespace", func(b *kvstore.KeyValueStoreBackup) { b.Namespace = "" }, expect(required("metadata.namespace"))},
		{"several at once", func(b *kvstore.KeyValueStoreBackup) { b.Spec = kvstore.KeyValueStoreBackupSpec{Reason: "Whim"} },
			expect(required("spec.storeName"), notSupported("spec.reason"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := validBackup()
			tc.mutate(b)
			assert.Equal(t, tc.want, summarize(ValidateKeyValueStoreBackup(b)))
		})
	}
}

func TestValidateKeyValueStoreBackupUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*kvstore.KeyValueStoreBackup)
		want   []fieldErr
	}{
		{"unchanged", func(*kvstore.KeyValueStoreBackup) {}, expect()},
		{"labels may change", func(b *kvstore.KeyValueStoreBackup) { b.Labels = map[string]string{"team": "a"} }, expect()},
		{"store name is immutable", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = "other" }, expect(invalid("spec.storeName"))},
		{"reason is immutable", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = kvstore.BackupReasonFinal }, expect(invalid("spec.reason"))},
		{"every spec field named", func(b *kvstore.KeyValueStoreBackup) {
			b.Spec = kvstore.KeyValueStoreBackupSpec{StoreName: "other", Reason: kvstore.BackupReasonScheduled}
		}, expect(invalid("spec.storeName"), invalid("spec.reason"))},
		{"name is immutable", func(b *kvstore.KeyValueStoreBackup) { b.Name = "renamed" }, expect(invalid("metadata.name"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldB := validBackup()
			oldB.ResourceVersion = "1"
			newB := oldB.DeepCopy()
			tc.mutate(newB)
			assert.Equal(t, tc.want, summarize(ValidateKeyValueStoreBackupUpdate(newB, oldB)))
		})
	}
}

func TestValidateKeyValueStoreBackupStatus(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	later := metav1.NewTime(start.Add(time.Minute))
	earlier := metav1.NewTime(start.Add(-time.Second))
	condition := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "JobSucceeded", LastTransitionTime: later}
	}
	cases := []struct {
		name   string
		status kvstore.KeyValueStoreBackupStatus
		want   []fieldErr
	}{
		{"empty", kvstore.KeyValueStoreBackupStatus{}, expect()},
		{"completed", kvstore.KeyValueStoreBackupStatus{
			Phase: kvstore.BackupPhaseCompleted, ObservedGeneration: 1, StartTime: &start, CompletionTime: &later,
			JobName: "demo-backup", Attempts: 2, Message: "done", Conditions: []metav1.Condition{condition("Complete")},
		}, expect()},
		{"completion at the start", kvstore.KeyValueStoreBackupStatus{StartTime: &start, CompletionTime: ptr.To(start)}, expect()},
		{"completion without start", kvstore.KeyValueStoreBackupStatus{CompletionTime: &later}, expect()},
		{"running", kvstore.KeyValueStoreBackupStatus{Phase: kvstore.BackupPhaseRunning}, expect()},
		{"bad phase", kvstore.KeyValueStoreBackupStatus{Phase: "Done"}, expect(notSupported("status.phase"))},
		{"store phase is not a backup phase", kvstore.KeyValueStoreBackupStatus{Phase: "Ready"}, expect(notSupported("status.phase"))},
		{"negative attempts", kvstore.KeyValueStoreBackupStatus{Attempts: -1}, expect(invalid("status.attempts"))},
		{"negative observed generation", kvstore.KeyValueStoreBackupStatus{ObservedGeneration: -1}, expect(invalid("status.observedGeneration"))},
		{"completion before start", kvstore.KeyValueStoreBackupStatus{StartTime: &start, CompletionTime: &earlier}, expect(invalid("status.completionTime"))},
		{"bad job name", kvstore.KeyValueStoreBackupStatus{JobName: "Demo_Job"}, expect(invalid("status.jobName"))},
		{"job name too long", kvstore.KeyValueStoreBackupStatus{JobName: strings.Repeat("a", 254)}, expect(tooLong("status.jobName"))},
		{"message too long", kvstore.KeyValueStoreBackupStatus{Message: strings.Repeat("x", MaxBackupMessageLength+1)}, expect(tooLong("status.message"))},
		{"message at the limit", kvstore.KeyValueStoreBackupStatus{Message: strings.Repeat("x", MaxBackupMessageLength)}, expect()},
		{"invalid condition", kvstore.KeyValueStoreBackupStatus{Conditions: []metav1.Condition{{Type: "Complete", Status: "Maybe", Reason: "x", LastTransitionTime: later}}},
			expect(notSupported("status.conditions[0].status"))},
		{"duplicate condition", kvstore.KeyValueStoreBackupStatus{Conditions: []metav1.Condition{condition("Complete"), condition("Complete")}},
			expect(fieldErr{"FieldValueDuplicate", "status.conditions[1]"})},
		{"too many conditions", kvstore.KeyValueStoreBackupStatus{Conditions: func() []metav1.Condition {
			var cs []metav1.Condition
			for i := 0; i <= maxConditions; i++ {
				cs = append(cs, condition("C"+strings.Repeat("x", i)))
			}
			return cs
		}()}, expect(tooMany("status.conditions"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldB := validBackup()
			oldB.ResourceVersion = "1"
			newB := oldB.DeepCopy()
			newB.Status = tc.status
			assert.Equal(t, tc.want, summarize(ValidateKeyValueStoreBackupStatusUpdate(newB, oldB)))
		})
	}
}
