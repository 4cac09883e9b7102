package keyvaluestorebackup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

var started = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func newBackup() *kvstore.KeyValueStoreBackup {
	return &kvstore.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-1", Namespace: "default"},
		Spec:       kvstore.KeyValueStoreBackupSpec{StoreName: "demo", Reason: kvstore.BackupReasonManual},
	}
}

// storedBackup is newBackup as the registry would have stored it, with the
// progress a controller reported.
func storedBackup() *kvstore.KeyValueStoreBackup {
	b := newBackup()
	b.UID = types.UID("11111111-2222-3333-4444-555555555555")
	b.ResourceVersion = "10"
	b.Generation = 1
	b.CreationTimestamp = started
	b.Labels = map[string]string{"team": "storage"}
	b.Annotations = map[string]string{"note": "old"}
	b.Status = kvstore.KeyValueStoreBackupStatus{
		Phase: kvstore.BackupPhaseRunning, ObservedGeneration: 1, StartTime: &started, JobName: "demo-1", Attempts: 1,
	}
	return b
}

func testStrategy() Strategy { return NewStrategy(runtime.NewScheme()) }

func paths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestStrategyBasics(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	assert.True(t, s.NamespaceScoped())
	assert.False(t, s.AllowCreateOnUpdate(ctx))
	assert.True(t, s.AllowUnconditionalUpdate(ctx))
	assert.Nil(t, s.WarningsOnCreate(ctx, newBackup()))
	assert.Nil(t, s.WarningsOnUpdate(ctx, newBackup(), storedBackup()))

	status := NewStatusStrategy(s)
	assert.True(t, status.NamespaceScoped())
	assert.False(t, status.AllowCreateOnUpdate(ctx))
	assert.Nil(t, status.WarningsOnUpdate(ctx, newBackup(), storedBackup()))

	obj := storedBackup()
	s.Canonicalize(obj)
	assert.Equal(t, storedBackup(), obj)
}

func TestPrepareForCreateWipesStatus(t *testing.T) {
	in := newBackup()
	in.Generation = 7
	in.Status = storedBackup().Status
	in.Status.Phase = kvstore.BackupPhaseCompleted
	testStrategy().PrepareForCreate(context.Background(), in)

	assert.Equal(t, kvstore.KeyValueStoreBackupStatus{}, in.Status, "a client cannot create a backup that claims progress")
	assert.Equal(t, int64(1), in.Generation)
	assert.Equal(t, newBackup().Spec, in.Spec)
	assert.Empty(t, in.Finalizers, "backups get no finalizer")
	assert.Empty(t, testStrategy().Validate(context.Background(), in))
}

func TestPrepareForUpdateKeepsStatus(t *testing.T) {
	old := storedBackup()
	in := old.DeepCopy()
	in.Status = kvstore.KeyValueStoreBackupStatus{Phase: kvstore.BackupPhaseCompleted, Attempts: 9}
	in.Labels = map[string]string{"team": "other"}
	testStrategy().PrepareForUpdate(context.Background(), in, old)

	assert.Equal(t, old.Status, in.Status, "status is written through /status only")
	assert.Equal(t, map[string]string{"team": "other"}, in.Labels, "metadata is the main endpoint's")
	assert.Equal(t, int64(1), in.Generation, "an unchanged spec keeps the generation")
	assert.Empty(t, testStrategy().ValidateUpdate(context.Background(), in, old))
}

func TestUpdateOfSpecRefused(t *testing.T) {
	s := testStrategy()
	for _, tc := range []struct {
		name   string
		mutate func(*kvstore.KeyValueStoreBackup)
		want   []string
	}{
		{"storeName", func(b *kvstore.KeyValueStoreBackup) { b.Spec.StoreName = "other" }, []string{"spec.storeName"}},
		{"reason", func(b *kvstore.KeyValueStoreBackup) { b.Spec.Reason = kvstore.BackupReasonFinal }, []string{"spec.reason"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := storedBackup()
			in := old.DeepCopy()
			tc.mutate(in)
			s.PrepareForUpdate(context.Background(), in, old)
			assert.Equal(t, tc.want, paths(s.ValidateUpdate(context.Background(), in, old)))
		})
	}
}

func TestStatusPrepareForUpdateKeepsSpecAndMetadata(t *testing.T) {
	old := storedBackup()
	in := old.DeepCopy()
	in.Spec = kvstore.KeyValueStoreBackupSpec{StoreName: "other", Reason: kvstore.BackupReasonFinal}
	in.Labels = map[string]string{"team": "stale"}
	in.Annotations = nil
	in.Finalizers = []string{"example.com/stale"}
	in.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u"}}
	completed := metav1.NewTime(started.Add(time.Minute))
	in.Status.Phase = kvstore.BackupPhaseCompleted
	in.Status.CompletionTime = &completed

	status := NewStatusStrategy(testStrategy())
	status.PrepareForUpdate(context.Background(), in, old)

	assert.Equal(t, old.Spec, in.Spec, "/status cannot change spec")
	assert.Equal(t, old.Labels, in.Labels)
	assert.Equal(t, old.Annotations, in.Annotations)
	assert.Equal(t, old.Finalizers, in.Finalizers)
	assert.Equal(t, old.OwnerReferences, in.OwnerReferences)
	assert.Equal(t, kvstore.BackupPhaseCompleted, in.Status.Phase)
	assert.Equal(t, &completed, in.Status.CompletionTime)
	assert.Empty(t, status.ValidateUpdate(context.Background(), in, old))
}

func TestStatusValidateUpdate(t *testing.T) {
	old := storedBackup()
	in := old.DeepCopy()
	before := metav1.NewTime(started.Add(-time.Hour))
	in.Status.CompletionTime = &before
	in.Status.Attempts = -1
	in.Status.Phase = "Done"
	status := NewStatusStrategy(testStrategy())
	assert.ElementsMatch(t, []string{"status.completionTime", "status.attempts", "status.phase"},
		paths(status.ValidateUpdate(context.Background(), in, old)))
}

func TestValidateOnCreate(t *testing.T) {
	in := newBackup()
	in.Spec = kvstore.KeyValueStoreBackupSpec{Reason: "Whim"}
	assert.ElementsMatch(t, []string{"spec.storeName", "spec.reason"}, paths(testStrategy().Validate(context.Background(), in)))
}

func TestGetResetFields(t *testing.T) {
	for _, version := range []fieldpath.APIVersion{"kvstore.io/v1alpha1", "kvstore.io/v1beta1"} {
		t.Run(string(version), func(t *testing.T) {
			main := testStrategy().GetResetFields()
			require.Contains(t, main, version)
			assert.True(t, main[version].Equals(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))))

			status := NewStatusStrategy(testStrategy()).GetResetFields()
			require.Contains(t, status, version)
			set := status[version]
			for _, p := range [][]interface{}{
				{"spec"}, {"metadata", "labels"}, {"metadata", "annotations"}, {"metadata", "finalizers"}, {"metadata", "ownerReferences"},
			} {
				assert.True(t, set.Has(fieldpath.MakePathOrDie(p...)), "%v", p)
			}
			assert.False(t, set.Has(fieldpath.MakePathOrDie("status")), "/status owns status")
		})
	}
}
