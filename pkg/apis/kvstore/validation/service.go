package validation

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

const (
	// maxServiceAnnotationsSize bounds spec.service.annotations, as
	// spec.podMetadata.annotations: cloud controllers and tools add their
	// own to the Service.
	maxServiceAnnotationsSize = 64 << 10
	// maxSourceRanges bounds spec.service.loadBalancerSourceRanges.
	maxSourceRanges = 64
)

var serviceTypes = sets.New(kvstore.ServiceTypeClusterIP, kvstore.ServiceTypeNodePort, kvstore.ServiceTypeLoadBalancer)

// validateClientService checks spec.service as kube-apiserver checks the
// same fields of a Service, so that the Service the controller applies is
// not refused after the store was accepted.
func validateClientService(s *kvstore.ClientService, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var allErrs field.ErrorList
	if !serviceTypes.Has(s.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), s.Type, sets.List(serviceTypes)))
	}
	allErrs = append(allErrs, validateServiceAnnotations(s.Annotations, fldPath.Child("annotations"))...)
	return append(allErrs, validateSourceRanges(s, fldPath.Child("loadBalancerSourceRanges"))...)
}

func validateServiceAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	if size := annotationsSize(annotations); size > maxServiceAnnotationsSize {
		return field.ErrorList{field.TooLong(fldPath, "", maxServiceAnnotationsSize)}
	}
	allErrs := apimachineryvalidation.ValidateAnnotations(annotations, fldPath)
	for _, k := range sets.List(sets.KeySet(annotations)) {
		switch {
		case strings.HasPrefix(k, "kvstore.io/"):
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "keys under kvstore.io/ are the controller's"))
		case k == sourceRangesAnnotation:
			// kube-apiserver refuses it on a Service that is not a
			// LoadBalancer, and checks its CIDRs; the field says the same.
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "use spec.service.loadBalancerSourceRanges"))
		}
	}
	hints, hinted := annotations[topologyHintsAnnotation]
	if mode, ok := annotations[topologyModeAnnotation]; ok && hinted && mode != hints {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(topologyHintsAnnotation), hints,
			"must be the value of "+topologyModeAnnotation+" when both are set (kube-apiserver refuses the Service otherwise)"))
	}
	return allErrs
}

// Service annotations kube-apiserver checks.
const (
	sourceRangesAnnotation  = "service.beta.kubernetes.io/load-balancer-source-ranges"
	topologyModeAnnotation  = "service.kubernetes.io/topology-mode"
	topologyHintsAnnotation = "service.kubernetes.io/topology-aware-hints"
)

// validateSourceRanges: canonical CIDRs, each once, and only where a load
// balancer reads them (kube-apiserver refuses them on other Services).
func validateSourceRanges(s *kvstore.ClientService, fldPath *field.Path) field.ErrorList {
	ranges := s.LoadBalancerSourceRanges
	switch {
	case len(ranges) == 0:
		return nil
	case s.Type != kvstore.ServiceTypeLoadBalancer:
		return field.ErrorList{field.Forbidden(fldPath, "only with type LoadBalancer")}
	case len(ranges) > maxSourceRanges:
		return field.ErrorList{field.TooMany(fldPath, len(ranges), maxSourceRanges)}
	}
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, r := range ranges {
		if seen.Has(r) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), r))
			continue
		}
		seen.Insert(r)
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(fldPath.Index(i), r)...)
	}
	return allErrs
}
