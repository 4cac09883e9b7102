// Package validation holds the rules every KeyValueStore must satisfy. Each
// error names the field it is about, so the API answers 422 with field paths.
package validation

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// Limits of the API. MaxNameLength keeps every derived name valid: the
// StatefulSet's controller-revision-hash label "<name>-<10 chars>" must fit a
// 63-character label value, as must the headless Service "<name>-headless".
//
// Every string and list of the spec is bounded, so a store costs a known
// amount of etcd, watch-cache and controller memory however it was written.
// The backup command is copied into a Job's container: its limits are far
// above any real backup invocation and far below the 1.5 MiB object limit.
const (
	MinReplicas      = 1
	MaxReplicas      = 9
	MaxProxyReplicas = 20
	MaxNameLength    = 52
	maxImageLength   = 512

	MaxBackupCommandEntries    = 64
	MaxBackupCommandEntryBytes = 4096
	MaxBackupCommandBytes      = 32 * 1024

	// Status is written by the controller only; its bounds are generous
	// enough that the controller never trips them (it reports four
	// condition types and the image of the StatefulSet it manages).
	maxConditions     = 16
	maxStatusImage    = 4096
	maxSelectorLength = 4096
)

// countReady is 1 if conditions hold Ready (which the server derives), else 0.
func countReady(conditions []metav1.Condition) int {
	if meta.FindStatusCondition(conditions, kvstore.ConditionReady) != nil {
		return 1
	}
	return 0
}

// IsPhase says p is a phase of the API (the empty phase is none).
func IsPhase(p kvstore.KeyValueStorePhase) bool {
	return validPhases.Has(p)
}

// MaxStorageSize is the largest spec.storage.size: the most bytes an int64
// counts, as a claim's capacity is. It keeps every size comparable at no
// cost (see SizesEqual).
var MaxStorageSize = *resource.NewQuantity(math.MaxInt64, resource.BinarySI)

var (
	// An OCI/Docker image reference: [registry[:port]/]path[:tag][@digest].
	imageRefPattern = regexp.MustCompile(`^` +
		`(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?/)?` + // registry
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` + // path
		`(?::[\w][\w.-]{0,127})?` + // tag
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?` + // digest
		`$`)

	validPhases = sets.New(
		kvstore.PhasePending, kvstore.PhaseCreating, kvstore.PhaseBootstrapping, kvstore.PhaseReady, kvstore.PhaseUpgrading,
		kvstore.PhaseDegraded, kvstore.PhaseTerminating, kvstore.PhaseFailed)

	validRetentionPolicies = sets.New(
		kvstore.RetainPersistentVolumeClaimRetentionPolicyType,
		kvstore.DeletePersistentVolumeClaimRetentionPolicyType)

	// The garbage collector's finalizers. Orphaning would leave the data tier
	// running without the teardown; foreground deletion would let the
	// collector delete the workloads while the teardown still needs them. A
	// delete never sets them (the registry serves every delete as a
	// background one), and neither may a client.
	garbageCollectorFinalizers = sets.New(metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)
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
		// One length error, ours: a DNS-1035 label's 63 is the looser one.
		errs = slices.DeleteFunc(errs, func(msg string) bool { return msg == utilvalidation.MaxLenError(utilvalidation.DNS1035LabelMaxLength) })
		errs = append(errs, fmt.Sprintf("must be no more than %d characters", limit))
	}
	return errs
}

// ValidateKeyValueStore validates a whole object, as on create.
func ValidateKeyValueStore(kvs *kvstore.KeyValueStore) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&kvs.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNoGarbageCollectorFinalizers(kvs.Finalizers, nil, field.NewPath("metadata", "finalizers"))...)
	allErrs = append(allErrs, validateNoConversionAnnotation(kvs.Annotations, nil, field.NewPath("metadata", "annotations"))...)
	allErrs = append(allErrs, ValidateKeyValueStoreSpec(&kvs.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateKeyValueStoreUpdate validates an update of the spec and metadata.
func ValidateKeyValueStoreUpdate(newObj, oldObj *kvstore.KeyValueStore) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNoGarbageCollectorFinalizers(newObj.Finalizers, oldObj.Finalizers, field.NewPath("metadata", "finalizers"))...)
	allErrs = append(allErrs, validateNoConversionAnnotation(newObj.Annotations, oldObj.Annotations, field.NewPath("metadata", "annotations"))...)
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateSpec(&newObj.Spec, &oldObj.Spec, specPath)...)
	// Each field is named with its value as the client wrote it (a v1beta1
	// request then reads spec.storage.capacity, see the registry).
	storagePath := specPath.Child("storage")
	newStorage, oldStorage := newObj.Spec.Storage, oldObj.Spec.Storage
	allErrs = append(allErrs, validateSizeUpdate(newStorage.Size, oldStorage.Size, storagePath.Child("size"))...)
	if !apiequality.Semantic.DeepEqual(newStorage.StorageClassName, oldStorage.StorageClassName) {
		allErrs = append(allErrs, field.Invalid(storagePath.Child("storageClassName"), newStorage.StorageClassName, apimachineryvalidation.FieldImmutableErrorMsg))
	}
	return allErrs
}

// validateSizeUpdate lets the storage size change, except a size stored
// before MaxStorageSize existed, which cannot be compared cheaply. The
// controller grows the store's claims to a larger size and never lowers a
// claim, so a smaller size shrinks nothing: it stops asking for a growth
// not yet made (one the storage cannot make, say).
func validateSizeUpdate(size, old resource.Quantity, fldPath *field.Path) field.ErrorList {
	if !SizesEqual(size, old) && !cheapToCompare(old) {
		return field.ErrorList{field.Invalid(fldPath, size.String(), fmt.Sprintf("may not change: the stored size %s is not a comparable quantity", old.String()))}
	}
	return nil // validateSpec bounds the new size
}

// SizesEqual compares two quantities by value when both are within
// MaxStorageSize's range, and by their text otherwise. Quantity.Cmp computes
// 10 to the power of the difference of their exponents, which for a size
// stored before MaxStorageSize existed (e.g. "10e1215752190") would take
// hours and gigabytes.
func SizesEqual(a, b resource.Quantity) bool {
	if cheapToCompare(a) && cheapToCompare(b) {
		return a.Cmp(b) == 0
	}
	return a.String() == b.String()
}

// Semantic is apiequality.Semantic with quantities compared as SizesEqual
// compares them: it compares specs before validation, on whatever
// quantities a request carries, and Quantity.Cmp of an absurd exponent
// would not return for hours.
var Semantic = func() conversion.Equalities {
	e := conversion.Equalities{Equalities: maps.Clone(apiequality.Semantic.Equalities)}
	if err := e.AddFunc(SizesEqual); err != nil {
		panic(err)
	}
	return e
}()

// cheapToCompare: q's exponent is small enough for Cmp against any other
// comparable quantity to be cheap. Parsed quantities have at most 9
// decimal places (nano), and 19 digits reach past MaxStorageSize.
func cheapToCompare(q resource.Quantity) bool {
	d := q.AsDec() // q is a copy: AsDec may change its representation.
	return d.Scale() >= -maxComparableExponent && d.Scale() <= maxComparableExponent
}

const maxComparableExponent = 64

// validateNoGarbageCollectorFinalizers refuses the orphan and
// foregroundDeletion finalizers unless the stored object already had them
// (written before they were refused), so such an object can still be updated.
func validateNoGarbageCollectorFinalizers(finalizers, oldFinalizers []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	old := sets.New(oldFinalizers...)
	for _, f := range finalizers {
		if garbageCollectorFinalizers.Has(f) && !old.Has(f) {
			allErrs = append(allErrs, field.Forbidden(fldPath, fmt.Sprintf(
				"%q may not be set on a KeyValueStore: its deletion always runs the ordered teardown, "+
					"and its dependents are removed after it (delete it normally; claims are kept by default)", f)))
		}
	}
	return allErrs
}

// validateNoConversionAnnotation refuses kvstore.CurrentImageAnnotation in
// the internal object: v1beta1's conversion owns it and removes it before
// the object gets here, so only a v1alpha1 client can send it, and a stored
// value would be read back as status.currentImage through v1beta1. An
// object stored with it before it was refused can still be updated.
func validateNoConversionAnnotation(annotations, oldAnnotations map[string]string, fldPath *field.Path) field.ErrorList {
	value, ok := annotations[kvstore.CurrentImageAnnotation]
	if !ok {
		return nil
	}
	if old, had := oldAnnotations[kvstore.CurrentImageAnnotation]; had && old == value {
		return nil
	}
	return field.ErrorList{field.Forbidden(fldPath.Key(kvstore.CurrentImageAnnotation),
		"is reserved: it carries status.currentImage through kvstore.io/v1beta1 and is set by the server only")}
}

// ValidateKeyValueStoreSpec validates the desired state.
func ValidateKeyValueStoreSpec(spec *kvstore.KeyValueStoreSpec, fldPath *field.Path) field.ErrorList {
	return validateSpec(spec, nil, fldPath)
}

// validateSpec validates spec; oldSpec is the stored spec on update, nil on
// create. Limits added after stores were written (the sizes, the
// characters of a command, and the schedule's separators) ratchet: a value
// the update leaves as it is stays accepted, so such a store can still be
// updated and, above all, released by its teardown (which removes the
// finalizer through an update).
func validateSpec(spec, oldSpec *kvstore.KeyValueStoreSpec, fldPath *field.Path) field.ErrorList {
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
	switch size := spec.Storage.Size; {
	case size.Sign() <= 0:
		allErrs = append(allErrs, field.Invalid(storagePath.Child("size"), size.String(), "must be greater than zero"))
	case (oldSpec == nil || !SizesEqual(size, oldSpec.Storage.Size)) && (!cheapToCompare(size) || size.Cmp(MaxStorageSize) > 0):
		// Checked only when the size changes: a store created before the
		// limit existed can still be updated and released by its teardown.
		allErrs = append(allErrs, field.Invalid(storagePath.Child("size"), size.String(),
			fmt.Sprintf("must be at most %d bytes (just under 8Ei)", int64(math.MaxInt64))))
	}
	if sc := spec.Storage.StorageClassName; sc != nil {
		allErrs = append(allErrs, validateDNSSubdomain(*sc, storagePath.Child("storageClassName"))...)
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
		allErrs = append(allErrs, validateResources(p.Resources, proxyPath.Child("resources"))...)
	}

	if b := spec.Backup; b != nil {
		backupPath := fldPath.Child("backup")
		allErrs = append(allErrs, validateImage(b.Image, backupPath.Child("image"))...)
		if b.ActiveDeadlineSeconds != nil && *b.ActiveDeadlineSeconds <= 0 {
			allErrs = append(allErrs, field.Invalid(backupPath.Child("activeDeadlineSeconds"), *b.ActiveDeadlineSeconds, "must be greater than zero"))
		}
		unchanged := oldSpec != nil && oldSpec.Backup != nil && slices.Equal(oldSpec.Backup.Command, b.Command)
		allErrs = append(allErrs, validateBackupCommand(b.Command, unchanged, backupPath.Child("command"))...)
		var oldBackup *kvstore.BackupSpec
		if oldSpec != nil {
			oldBackup = oldSpec.Backup
		}
		allErrs = append(allErrs, validateSchedule(b, oldBackup, backupPath)...)
		allErrs = append(allErrs, validateResources(b.Resources, backupPath.Child("resources"))...)
		allErrs = append(allErrs, validateJobAccess(b.ServiceAccountName, b.EnvFrom, backupPath)...)
	}
	allErrs = append(allErrs, validateBootstrap(spec, oldSpec, fldPath.Child("bootstrap"))...)
	allErrs = append(allErrs, validateSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	allErrs = append(allErrs, validateResources(spec.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateScheduling(spec.Scheduling, fldPath.Child("scheduling"))...)
	allErrs = append(allErrs, validatePodMetadata(spec.PodMetadata, fldPath.Child("podMetadata"))...)
	allErrs = append(allErrs, validateImagePullSecrets(spec.ImagePullSecrets, fldPath.Child("imagePullSecrets"))...)
	allErrs = append(allErrs, validateArgv(spec.Args, false, fldPath.Child("args"))...)
	allErrs = append(allErrs, validateEnvFrom(spec.EnvFrom, fldPath.Child("envFrom"))...)
	allErrs = append(allErrs, validateClientService(spec.Service, fldPath.Child("service"))...)

	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil && !validRetentionPolicies.Has(p.WhenDeleted) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("persistentVolumeClaimRetentionPolicy", "whenDeleted"), p.WhenDeleted,
			sets.List(validRetentionPolicies)))
	}
	return allErrs
}

// validateBackupCommand checks the command, and its size limits and
// characters unless it is unchanged from the stored one.
func validateBackupCommand(command []string, unchanged bool, fldPath *field.Path) field.ErrorList {
	if unchanged {
		if len(command) > 0 && command[0] == "" {
			return field.ErrorList{field.Invalid(fldPath.Index(0), command[0], "must not be empty")}
		}
		return nil
	}
	return validateArgv(command, true, fldPath)
}

// validateArgv checks a command's or arguments' size limits and
// characters; a command's first entry, the program, must not be empty.
func validateArgv(argv []string, isCommand bool, fldPath *field.Path) field.ErrorList {
	if n := len(argv); n > MaxBackupCommandEntries {
		// One error, not one per oversized entry of an oversized list.
		return field.ErrorList{field.TooMany(fldPath, n, MaxBackupCommandEntries)}
	}
	var allErrs field.ErrorList
	total := 0
	for i, arg := range argv {
		total += len(arg)
		switch {
		case len(arg) > MaxBackupCommandEntryBytes:
			allErrs = append(allErrs, field.TooLong(fldPath.Index(i), arg, MaxBackupCommandEntryBytes))
		case isCommand && i == 0 && arg == "":
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), arg, "must not be empty"))
		case !printable(arg):
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), arg,
				"must be UTF-8 text without control characters other than tab, newline and carriage return, and without U+FFFE or U+FFFF"))
		}
	}
	if total > MaxBackupCommandBytes {
		tooLong := field.TooLong(fldPath, argv, MaxBackupCommandBytes)
		tooLong.Detail = fmt.Sprintf("all entries together may not be more than %d bytes", MaxBackupCommandBytes)
		allErrs = append(allErrs, tooLong)
	}
	return allErrs
}

// printable reports whether s is UTF-8 text every media type serves as it
// is stored. Protobuf keeps invalid UTF-8 that JSON would serve as U+FFFD
// (and a JSON read-modify-write would then store); YAML cannot carry DEL, C1
// controls or U+FFFE/U+FFFF at all (kubectl get -o yaml fails on them,
// kubernetes/kubectl#774); and control characters in a command are never
// meant and can rewrite a terminal that prints them.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\r':
			return false
		case 0xFFFE, 0xFFFF:
			return true
		}
		return unicode.IsControl(r)
	})
}

// validateSecurityContext checks the IDs within a Pod's range (0 to
// 2147483647) and the user not root: the Pods run with runAsNonRoot, so
// the kubelet would refuse to start a container as root.
func validateSecurityContext(sc *kvstore.SecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	if sc.RunAsUser < 1 || sc.RunAsUser > math.MaxInt32 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("runAsUser"), sc.RunAsUser,
			fmt.Sprintf("must be between 1 and %d, inclusive: the Pods run as a user other than root", math.MaxInt32)))
	}
	for _, id := range []struct {
		name  string
		value *int64
	}{{"runAsGroup", sc.RunAsGroup}, {"fsGroup", sc.FSGroup}} {
		if id.value != nil && (*id.value < 0 || *id.value > math.MaxInt32) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(id.name), *id.value, fmt.Sprintf("must be between 0 and %d, inclusive", math.MaxInt32)))
		}
	}
	return allErrs
}

// resourceNames are the compute resources a store's containers may ask for.
var resourceNames = sets.New("cpu", "memory", "ephemeral-storage")

// validateResources checks what a Pod's container would be checked for
// (known names, no negative quantity, each request at most its limit), so
// that a workload the controller applies is not refused.
func validateResources(r *kvstore.Resources, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	allErrs := validateResourceList(r.Limits, fldPath.Child("limits"))
	allErrs = append(allErrs, validateResourceList(r.Requests, fldPath.Child("requests"))...)
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		request := r.Requests[name]
		limit, ok := r.Limits[name]
		// Only valid quantities are compared, each name on its own, as
		// kube-apiserver does for a Pod's.
		if ok && validResource(name, request) && validResource(name, limit) && request.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(name), request.String(),
				fmt.Sprintf("must be less than or equal to the %s limit of %s", name, limit.String())))
		}
	}
	return allErrs
}

// validResource: validateResourceList accepts q under name.
func validResource(name string, q resource.Quantity) bool {
	return resourceNames.Has(name) && q.Sign() >= 0 && cheapToCompare(q) && q.Cmp(MaxStorageSize) <= 0
}

func validateResourceList(list map[string]resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q, path := list[name], fldPath.Key(name)
		switch {
		case !resourceNames.Has(name):
			allErrs = append(allErrs, field.NotSupported(path, name, sets.List(resourceNames)))
		case q.Sign() < 0:
			allErrs = append(allErrs, field.Invalid(path, q.String(), "must be greater than or equal to 0"))
		case !cheapToCompare(q) || q.Cmp(MaxStorageSize) > 0:
			allErrs = append(allErrs, field.Invalid(path, q.String(), fmt.Sprintf("must be at most %d", int64(math.MaxInt64))))
		}
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
	if len(status.CurrentImage) > maxStatusImage {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("currentImage"), status.CurrentImage, maxStatusImage))
	}
	if len(status.Selector) > maxSelectorLength {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("selector"), status.Selector, maxSelectorLength))
	} else if status.Selector != "" {
		// /scale serves it as a Scale's selector, by way of a LabelSelector
		// (client-go's internal Scale), for autoscalers to list the data
		// replica Pods with. What a LabelSelector cannot hold (!=, <, >) is
		// refused here rather than breaking /scale later.
		if _, err := metav1.ParseToLabelSelector(status.Selector); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), status.Selector, err.Error()))
		}
	}
	// The bound is on what the writer sent: Ready is the server's own,
	// derived from the phase on every status write.
	if n := len(status.Conditions) - countReady(status.Conditions); n > maxConditions {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("conditions"), n, maxConditions))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	}
	return allErrs
}

// IsStoredSizeRefusal says err is the server refusing a whole KeyValueStore
// for its spec.storage size (422 naming spec.storage.*). A writer that sends
// the stored spec back unchanged gets it only for a size stored before the
// size guard existed; such a store is written through /status, which
// carries no size.
func IsStoredSizeRefusal(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
		return strings.HasPrefix(c.Field, "spec.storage.")
	})
}
