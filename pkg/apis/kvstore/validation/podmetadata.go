package validation

import (
	"slices"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

const (
	// maxPodLabels bounds spec.podMetadata.labels.
	maxPodLabels = 64
	// maxPodAnnotationsSize bounds spec.podMetadata.annotations, a quarter
	// of what a Pod may carry in all: kubectl, admission webhooks and
	// the user's tools add their own.
	maxPodAnnotationsSize = 64 << 10
)

// reservedPodLabels are the label keys the controller sets on a store's
// Pods (its selectors and Services rely on them) and those Kubernetes'
// workload controllers set on theirs: a store's own value would change
// what selects the Pods, or get a Job refused.
var reservedPodLabels = sets.New(
	"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "app.kubernetes.io/managed-by",
	"controller-revision-hash", "pod-template-hash", "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
	"controller-uid", "job-name",
)

// reservedPrefixes are the label and annotation key prefixes that belong
// to the controller (kvstore.io/) and to the Job controller.
var reservedPrefixes = []string{"kvstore.io/", "batch.kubernetes.io/"}

// refusedPodAnnotations are annotations kube-apiserver checks on a Pod
// template against its spec (ValidatePodSpecificAnnotations and the seccomp
// and AppArmor checks): deprecated forms of fields the controller sets
// (seccomp, AppArmor per container, tolerations), the kubelet's mirror-Pod
// mark, and a ReplicaSet's deletion cost. A value the store could set
// there would get its workloads refused, after the store was accepted.
var (
	refusedPodAnnotations = sets.New(
		"seccomp.security.alpha.kubernetes.io/pod", "scheduler.alpha.kubernetes.io/tolerations",
		"kubernetes.io/config.mirror", "controller.kubernetes.io/pod-deletion-cost",
	)
	refusedPodAnnotationPrefixes = []string{"container.seccomp.security.alpha.kubernetes.io/", "container.apparmor.security.beta.kubernetes.io/"}
)

// refusedPodAnnotation says a store may not set key in
// spec.podMetadata.annotations, and why.
func refusedPodAnnotation(key string) string {
	switch {
	case hasAnyPrefix(key, reservedPrefixes):
		return "is set by the controller or by Kubernetes on the store's Pods"
	case refusedPodAnnotations.Has(key) || hasAnyPrefix(key, refusedPodAnnotationPrefixes):
		return "is checked by kube-apiserver against the Pod's spec, which the controller sets: use spec.securityContext and spec.scheduling"
	}
	return ""
}

// ReservedPodLabel says a store may not set key in spec.podMetadata.labels.
func ReservedPodLabel(key string) bool {
	return reservedPodLabels.Has(key) || hasAnyPrefix(key, reservedPrefixes)
}

func hasAnyPrefix(key string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(key, p) })
}

// validatePodMetadata checks spec.podMetadata as kube-apiserver checks a
// Pod template's labels and annotations, and refuses the keys that are not
// the store's to set.
func validatePodMetadata(m *kvstore.PodMetadata, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var allErrs field.ErrorList
	labelsPath := fldPath.Child("labels")
	if n := len(m.Labels); n > maxPodLabels {
		allErrs = append(allErrs, field.TooMany(labelsPath, n, maxPodLabels))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabels(m.Labels, labelsPath)...)
		for _, k := range sets.List(sets.KeySet(m.Labels)) {
			if ReservedPodLabel(k) {
				allErrs = append(allErrs, field.Forbidden(labelsPath.Key(k), "is set by the controller or by Kubernetes on the store's Pods"))
			}
		}
	}
	annotationsPath := fldPath.Child("annotations")
	if size := annotationsSize(m.Annotations); size > maxPodAnnotationsSize {
		return append(allErrs, field.TooLong(annotationsPath, "", maxPodAnnotationsSize))
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(m.Annotations, annotationsPath)...)
	for _, k := range sets.List(sets.KeySet(m.Annotations)) {
		if why := refusedPodAnnotation(k); why != "" {
			allErrs = append(allErrs, field.Forbidden(annotationsPath.Key(k), why))
		}
	}
	return allErrs
}

// annotationsSize counts keys and values as kube-apiserver does.
func annotationsSize(annotations map[string]string) int {
	var n int
	for k, v := range annotations {
		n += len(k) + len(v)
	}
	return n
}

// maxImagePullSecrets bounds spec.imagePullSecrets.
const maxImagePullSecrets = 16

// validateImagePullSecrets checks spec.imagePullSecrets: Secret names,
// each once.
func validateImagePullSecrets(refs []kvstore.LocalSecretReference, fldPath *field.Path) field.ErrorList {
	if n := len(refs); n > maxImagePullSecrets {
		return field.ErrorList{field.TooMany(fldPath, n, maxImagePullSecrets)}
	}
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, r := range refs {
		namePath := fldPath.Index(i).Child("name")
		switch {
		case r.Name == "":
			allErrs = append(allErrs, field.Required(namePath, "the name of a Secret"))
		case seen.Has(r.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, r.Name))
		default:
			allErrs = append(allErrs, validateDNSSubdomain(r.Name, namePath)...)
		}
		seen.Insert(r.Name)
	}
	return allErrs
}
