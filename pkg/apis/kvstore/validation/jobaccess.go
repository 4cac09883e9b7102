package validation

import (
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

const (
	// maxEnvFromSources bounds a container's envFrom: credentials and an
	// address take a few, and each is one more object the kubelet reads
	// per Pod.
	maxEnvFromSources = 16
	// maxEnvPrefixLength bounds an envFrom prefix, which kube-apiserver
	// leaves to the object's size.
	maxEnvPrefixLength = 253
)

// validateJobAccess checks what a backup or bootstrap Job's Pod runs as and
// reads its environment from, as kube-apiserver checks a Pod's
// serviceAccountName and a container's envFrom, so that a Job the
// controller creates is not refused for them.
func validateJobAccess(serviceAccountName string, envFrom []kvstore.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if serviceAccountName != "" {
		allErrs = append(allErrs, validateDNSSubdomain(serviceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	return append(allErrs, validateEnvFrom(envFrom, fldPath.Child("envFrom"))...)
}

// validateEnvFrom checks a container's envFrom as kube-apiserver does.
func validateEnvFrom(envFrom []kvstore.EnvFromSource, fldPath *field.Path) field.ErrorList {
	if n := len(envFrom); n > maxEnvFromSources {
		return field.ErrorList{field.TooMany(fldPath, n, maxEnvFromSources)}
	}
	var allErrs field.ErrorList
	for i, s := range envFrom {
		allErrs = append(allErrs, validateEnvFromSource(s, fldPath.Index(i))...)
	}
	return allErrs
}

func validateEnvFromSource(s kvstore.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch prefixPath := fldPath.Child("prefix"); {
	case len(s.Prefix) > maxEnvPrefixLength:
		allErrs = append(allErrs, field.TooLong(prefixPath, s.Prefix, maxEnvPrefixLength))
	case s.Prefix != "":
		// kube-apiserver's check since RelaxedEnvironmentVariableValidation
		// went GA (1.34): printable ASCII without "=".
		for _, msg := range utilvalidation.IsRelaxedEnvVarName(s.Prefix) {
			allErrs = append(allErrs, field.Invalid(prefixPath, s.Prefix, msg))
		}
	}
	switch {
	case s.ConfigMapRef == nil && s.SecretRef == nil:
		allErrs = append(allErrs, field.Required(fldPath, "must set one of configMapRef or secretRef"))
	case s.ConfigMapRef != nil && s.SecretRef != nil:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("secretRef"), s.SecretRef.Name, "may not be set with configMapRef: set one source per entry"))
	}
	if r := s.ConfigMapRef; r != nil {
		allErrs = append(allErrs, validateEnvSourceName(r.Name, fldPath.Child("configMapRef", "name"))...)
	}
	if r := s.SecretRef; r != nil {
		allErrs = append(allErrs, validateEnvSourceName(r.Name, fldPath.Child("secretRef", "name"))...)
	}
	return allErrs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return validateDNSSubdomain(name, fldPath)
}
