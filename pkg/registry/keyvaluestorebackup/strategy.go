// Package keyvaluestorebackup is the storage of the keyvaluestorebackups
// resource: the strategies that decide what create, update and /status may
// change, the etcd-backed REST stores, field selectors and the table printed
// by kubectl.
package keyvaluestorebackup

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

// Strategy governs create, update and delete of the main resource.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the strategy of the main resource.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

var (
	_ rest.RESTCreateStrategy  = Strategy{}
	_ rest.RESTUpdateStrategy  = Strategy{}
	_ rest.RESTDeleteStrategy  = Strategy{}
	_ rest.ResetFieldsStrategy = Strategy{}
	_ rest.RESTUpdateStrategy  = StatusStrategy{}
	_ rest.ResetFieldsStrategy = StatusStrategy{}
)

// NamespaceScoped is true: a backup lives in the namespace of its store.
func (Strategy) NamespaceScoped() bool { return true }

// GetResetFields: the main endpoint never owns status, so server-side apply
// through it cannot claim or change status fields.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return everyVersion(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
}

// PrepareForCreate wipes any client-sent status (only the controller reports
// progress) and starts the generation at 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	b := obj.(*kvstore.KeyValueStoreBackup)
	b.Status = kvstore.KeyValueStoreBackupStatus{}
	b.Generation = 1
}

// PrepareForUpdate keeps the stored status. The spec is immutable, so a
// changed one is refused by ValidateUpdate; the generation still follows
// the model of every other spec so that it stays right if a field ever
// becomes mutable.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newB := obj.(*kvstore.KeyValueStoreBackup)
	oldB := old.(*kvstore.KeyValueStoreBackup)
	newB.Status = oldB.Status
	if !apiequality.Semantic.DeepEqual(newB.Spec, oldB.Spec) {
		newB.Generation = oldB.Generation + 1
	}
}

// Validate validates a new object.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateKeyValueStoreBackup(obj.(*kvstore.KeyValueStoreBackup))
}

// WarningsOnCreate has no advice: a backup names a store and a reason only.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize has nothing to normalise: defaulting already ran on decode.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: PUT of a missing backup is a 404.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate lets `kubectl replace` work without a resourceVersion.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// ValidateUpdate refuses any change of the spec, naming each changed field.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateKeyValueStoreBackupUpdate(obj.(*kvstore.KeyValueStoreBackup), old.(*kvstore.KeyValueStoreBackup))
}

// WarningsOnUpdate has nothing to say: the spec cannot change.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// StatusStrategy governs the /status subresource: only status may change.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the strategy of the /status subresource.
func NewStatusStrategy(s Strategy) StatusStrategy { return StatusStrategy{s} }

// GetResetFields: /status never owns spec or the metadata it does not write.
func (StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return everyVersion(fieldpath.NewSet(
		fieldpath.MakePathOrDie("spec"),
		fieldpath.MakePathOrDie("metadata", "labels"),
		fieldpath.MakePathOrDie("metadata", "annotations"),
		fieldpath.MakePathOrDie("metadata", "finalizers"),
		fieldpath.MakePathOrDie("metadata", "ownerReferences"),
	))
}

// PrepareForUpdate keeps everything but status from the stored object, so a
// controller's stale copy can never roll back a user's metadata.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newB := obj.(*kvstore.KeyValueStoreBackup)
	oldB := old.(*kvstore.KeyValueStoreBackup)
	newB.Spec = oldB.Spec
	newB.Labels = oldB.Labels
	newB.Annotations = oldB.Annotations
	newB.Finalizers = oldB.Finalizers
	newB.OwnerReferences = oldB.OwnerReferences
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateKeyValueStoreBackupStatusUpdate(obj.(*kvstore.KeyValueStoreBackup), old.(*kvstore.KeyValueStoreBackup))
}

// WarningsOnUpdate has nothing to say about status.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// everyVersion names the same reset fields in every served version: the
// field paths are the same in both, and a client of either version must
// own (and be refused) the same fields.
func everyVersion(set *fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"kvstore.io/v1alpha1": set,
		"kvstore.io/v1beta1":  set,
	}
}
