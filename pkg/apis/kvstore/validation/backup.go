package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// MaxBackupMessageLength bounds status.message of a KeyValueStoreBackup, the
// limit metav1.Condition puts on its own message.
const MaxBackupMessageLength = 32 * 1024

var (
	validBackupReasons = sets.New(kvstore.BackupReasonManual, kvstore.BackupReasonScheduled, kvstore.BackupReasonFinal)
	validBackupPhases  = sets.New(kvstore.BackupPhasePending, kvstore.BackupPhaseRunning, kvstore.BackupPhaseCompleted, kvstore.BackupPhaseFailed)
)

// ValidateBackupName checks a KeyValueStoreBackup name: a DNS-1123 label, so
// that a Job (whose name becomes a label value on its Pods) can be named
// after it.
var ValidateBackupName = apimachineryvalidation.NameIsDNSLabel

// ValidateKeyValueStoreBackup validates a whole backup, as on create.
func ValidateKeyValueStoreBackup(b *kvstore.KeyValueStoreBackup) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, true, ValidateBackupName, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateKeyValueStoreBackupSpec(&b.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateKeyValueStoreBackupSpec validates the desired backup.
func ValidateKeyValueStoreBackupSpec(spec *kvstore.KeyValueStoreBackupSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	storePath := fldPath.Child("storeName")
	if spec.StoreName == "" {
		allErrs = append(allErrs, field.Required(storePath, "the name of a KeyValueStore in this namespace"))
	} else {
		for _, msg := range ValidateName(spec.StoreName, false) {
			allErrs = append(allErrs, field.Invalid(storePath, spec.StoreName, msg))
		}
	}
	switch {
	case spec.Reason == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("reason"), ""))
	case !validBackupReasons.Has(spec.Reason):
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("reason"), spec.Reason, sets.List(validBackupReasons)))
	}
	return allErrs
}

// ValidateKeyValueStoreBackupUpdate validates an update of the spec and
// metadata. The spec cannot change: each field that does is named.
func ValidateKeyValueStoreBackupUpdate(newObj, oldObj *kvstore.KeyValueStoreBackup) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newObj.Spec.StoreName, oldObj.Spec.StoreName, specPath.Child("storeName"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newObj.Spec.Reason, oldObj.Spec.Reason, specPath.Child("reason"))...)
	return allErrs
}

// ValidateKeyValueStoreBackupStatusUpdate validates a write to /status.
func ValidateKeyValueStoreBackupStatusUpdate(newObj, oldObj *kvstore.KeyValueStoreBackup) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateKeyValueStoreBackupStatus(&newObj.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateKeyValueStoreBackupStatus validates the observed progress.
func ValidateKeyValueStoreBackupStatus(status *kvstore.KeyValueStoreBackupStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if status.Phase != "" && !validBackupPhases.Has(status.Phase) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), status.Phase, sets.List(validBackupPhases)))
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(status.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(status.Attempts), fldPath.Child("attempts"))...)
	if status.StartTime != nil && status.CompletionTime != nil && status.CompletionTime.Before(status.StartTime) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), status.CompletionTime.String(), "must not be before status.startTime"))
	}
	if j := status.JobName; j != "" {
		jobPath := fldPath.Child("jobName")
		if len(j) > utilvalidation.DNS1123SubdomainMaxLength {
			allErrs = append(allErrs, field.TooLong(jobPath, j, utilvalidation.DNS1123SubdomainMaxLength))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(j) {
				allErrs = append(allErrs, field.Invalid(jobPath, j, msg))
			}
		}
	}
	if len(status.Message) > MaxBackupMessageLength {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("message"), status.Message, MaxBackupMessageLength))
	}
	if n := len(status.Conditions); n > maxConditions {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("conditions"), n, maxConditions))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	}
	return allErrs
}
