// Package validation holds the rules every KeyValueStore must satisfy. Each
// error names the field it is about, so the API answers 422 with field paths.
package validation

import (
	"fmt"
	"regexp"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// Limits of the API. MaxNameLength keeps every derived name valid: the
// StatefulSet's controller-revision-hash label "<name>-<10 chars>" must fit a
// 63-character label value, as must the headless Service "<name>-headless".
const (
	MinReplicas      = 1
	MaxReplicas      = 9
	MaxProxyReplicas = 20
	MaxNameLength    = 52
	maxImageLength   = 512
)

var (
	// An OCI/Docker image reference: [registry[:port]/]path[:tag][@digest].
	imageRefPattern = regexp.MustCompile(`^` +
		`(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?/)?` + // registry
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` + // path
		`(?::[\w][\w.-]{0,127})?` + // tag
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?` + // digest
		`$`)

	validPhases = sets.New(
		kvstore.PhasePending, kvstore.PhaseCreating, kvstore.PhaseReady, kvstore.PhaseUpgrading,
		kvstore.PhaseDegraded, kvstore.PhaseTerminating, kvstore.PhaseFailed)

	validRetentionPolicies = sets.New(
		kvstore.RetainPersistentVolumeClaimRetentionPolicyType,
		kvstore.DeletePersistentVolumeClaimRetentionPolicyType)
)

// ValidateName checks a KeyValueStore name: a DNS-1035 label short enough for
// every object derived from it.
func ValidateName(name string, prefix bool) []string {
	errs := apimachineryvalidation.NameIsDNS1035Label(name, prefix)
	limit := MaxNameLength
	if prefix {
		// generateName appends 5 random characters.
		limit -= 5
	}
	if len(name) > limit {
		errs = append(errs, fmt.Sprintf("must be no more than %d characters", limit))
	}
	return errs
}

// ValidateKeyValueStore validates a whole object, as on create.
func ValidateKeyValueStore(kvs *kvstore.KeyValueStore) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&kvs.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateKeyValueStoreSpec(&kvs.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateKeyValueStoreUpdate validates an update of the spec and metadata.
func ValidateKeyValueStoreUpdate(newObj, oldObj *kvstore.KeyValueStore) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, ValidateKeyValueStoreSpec(&newObj.Spec, specPath)...)
	// A StatefulSet's volumeClaimTemplates cannot change, so neither can storage.
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newObj.Spec.Storage, oldObj.Spec.Storage, specPath.Child("storage"))...)
	return allErrs
}

// ValidateKeyValueStoreSpec validates the desired state.
func ValidateKeyValueStoreSpec(spec *kvstore.KeyValueStoreSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	if spec.Replicas == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("replicas"), ""))
	} else if r := *spec.Replicas; r < MinReplicas || r > MaxReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), r, fmt.Sprintf("must be between %d and %d, inclusive", MinReplicas, MaxReplicas)))
	}
	allErrs = append(allErrs, validateImage(spec.Image, fldPath.Child("image"))...)
	for _, msg := range utilvalidation.IsValidPortNum(int(spec.Port)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("port"), spec.Port, msg))
	}

	storagePath := fldPath.Child("storage")
	if spec.Storage.Size.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(storagePath.Child("size"), spec.Storage.Size.String(), "must be greater than zero"))
	}
	if sc := spec.Storage.StorageClassName; sc != nil {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(*sc) {
			allErrs = append(allErrs, field.Invalid(storagePath.Child("storageClassName"), *sc, msg))
		}
	}

	if p := spec.Proxy; p != nil {
		proxyPath := fldPath.Child("proxy")
		replicas := int32(0)
		if p.Replicas != nil {
			replicas = *p.Replicas
		}
		if replicas < 0 || replicas > MaxProxyReplicas {
			allErrs = append(allErrs, field.Invalid(proxyPath.Child("replicas"), replicas, fmt.Sprintf("must be between 0 and %d, inclusive", MaxProxyReplicas)))
		}
		if replicas > 0 || p.Image != "" {
			allErrs = append(allErrs, validateImage(p.Image, proxyPath.Child("image"))...)
		}
	}

	if b := spec.Backup; b != nil {
		backupPath := fldPath.Child("backup")
		allErrs = append(allErrs, validateImage(b.Image, backupPath.Child("image"))...)
		if b.ActiveDeadlineSeconds != nil && *b.ActiveDeadlineSeconds <= 0 {
			allErrs = append(allErrs, field.Invalid(backupPath.Child("activeDeadlineSeconds"), *b.ActiveDeadlineSeconds, "must be greater than zero"))
		}
		for i, arg := range b.Command {
			if i == 0 && arg == "" {
				allErrs = append(allErrs, field.Invalid(backupPath.Child("command").Index(i), arg, "must not be empty"))
			}
		}
	}

	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil && !validRetentionPolicies.Has(p.WhenDeleted) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("persistentVolumeClaimRetentionPolicy", "whenDeleted"), p.WhenDeleted,
			sets.List(validRetentionPolicies)))
	}
	return allErrs
}

func validateImage(image string, fldPath *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(fldPath, "an image reference such as \"redis:7.2\"")}
	case len(image) > maxImageLength:
		return field.ErrorList{field.TooLong(fldPath, image, maxImageLength)}
	case strings.TrimSpace(image) != image:
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	case !imageRefPattern.MatchString(image):
		return field.ErrorList{field.Invalid(fldPath, image, "must be a valid image reference: [registry[:port]/]repository[:tag][@digest], repository in lower case")}
	}
	return nil
}

// ValidateKeyValueStoreStatusUpdate validates a write to /status.
func ValidateKeyValueStoreStatusUpdate(newObj, oldObj *kvstore.KeyValueStore) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateKeyValueStoreStatus(&newObj.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateKeyValueStoreStatus validates the observed state.
func ValidateKeyValueStoreStatus(status *kvstore.KeyValueStoreStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if status.Phase != "" && !validPhases.Has(status.Phase) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), status.Phase, sets.List(validPhases)))
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(status.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	for _, c := range []struct {
		name  string
		value int32
	}{
		{"replicas", status.Replicas},
		{"readyReplicas", status.ReadyReplicas},
		{"updatedReplicas", status.UpdatedReplicas},
		{"proxyReadyReplicas", status.ProxyReadyReplicas},
	} {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	if status.ReadyReplicas > status.Replicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("readyReplicas"), status.ReadyReplicas, "cannot be greater than status.replicas"))
	}
	if status.UpdatedReplicas > status.Replicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("updatedReplicas"), status.UpdatedReplicas, "cannot be greater than status.replicas"))
	}
	allErrs = append(allErrs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	return allErrs
}
