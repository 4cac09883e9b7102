package validation

import (
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

const (
	// maxSchedulingEntries bounds spec.scheduling's node selector and its
	// tolerations, each.
	maxSchedulingEntries = 64
	// maxSpreadConstraints bounds its topology spread constraints: one per
	// kind of domain (zone, node, rack) and way, with room to spare.
	maxSpreadConstraints = 8
)

var (
	tolerationOperators = sets.New(kvstore.TolerationOpEqual, kvstore.TolerationOpExists)
	taintEffects        = sets.New(kvstore.TaintEffectNoSchedule, kvstore.TaintEffectPreferNoSchedule, kvstore.TaintEffectNoExecute)
	unsatisfiableAction = sets.New(kvstore.DoNotSchedule, kvstore.ScheduleAnyway)
)

// validateScheduling checks what kube-apiserver would check of the same
// fields of a Pod, so that a workload the controller applies is not
// refused for them.
func validateScheduling(s *kvstore.Scheduling, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var allErrs field.ErrorList
	selectorPath := fldPath.Child("nodeSelector")
	if len(s.NodeSelector) > maxSchedulingEntries {
		allErrs = append(allErrs, field.TooMany(selectorPath, len(s.NodeSelector), maxSchedulingEntries))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabels(s.NodeSelector, selectorPath)...)
	}
	tolerationsPath := fldPath.Child("tolerations")
	if len(s.Tolerations) > maxSchedulingEntries {
		allErrs = append(allErrs, field.TooMany(tolerationsPath, len(s.Tolerations), maxSchedulingEntries))
	} else {
		for i, t := range s.Tolerations {
			allErrs = append(allErrs, validateToleration(t, tolerationsPath.Index(i))...)
		}
	}
	if name := s.PriorityClassName; name != "" {
		allErrs = append(allErrs, validateDNSSubdomain(name, fldPath.Child("priorityClassName"))...)
	}
	allErrs = append(allErrs, validateSpreadConstraints(s.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	return allErrs
}

// validateSpreadConstraints checks topology spread constraints as
// kube-apiserver checks a Pod's (the label selector is the controller's).
func validateSpreadConstraints(constraints []kvstore.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	if len(constraints) > maxSpreadConstraints {
		return field.ErrorList{field.TooMany(fldPath, len(constraints), maxSpreadConstraints)}
	}
	var allErrs field.ErrorList
	type kind struct {
		key    string
		action kvstore.UnsatisfiableConstraintAction
	}
	seen := sets.New[kind]()
	for i, c := range constraints {
		path := fldPath.Index(i)
		if c.MaxSkew < 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("maxSkew"), c.MaxSkew, "must be at least 1"))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(path.Child("topologyKey"), "the node label whose values are the domains"))
		} else {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(c.TopologyKey, path.Child("topologyKey"))...)
		}
		if !unsatisfiableAction.Has(c.WhenUnsatisfiable) {
			allErrs = append(allErrs, field.NotSupported(path.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, sets.List(unsatisfiableAction)))
		}
		if k := (kind{c.TopologyKey, c.WhenUnsatisfiable}); seen.Has(k) {
			allErrs = append(allErrs, field.Duplicate(path, fmt.Sprintf("topologyKey %q with whenUnsatisfiable %q", k.key, k.action)))
		} else {
			seen.Insert(k)
		}
		if c.MinDomains != nil {
			if *c.MinDomains < 1 {
				allErrs = append(allErrs, field.Invalid(path.Child("minDomains"), *c.MinDomains, "must be at least 1"))
			}
			if c.WhenUnsatisfiable != kvstore.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(path.Child("minDomains"), *c.MinDomains, "may be set only with whenUnsatisfiable DoNotSchedule"))
			}
		}
	}
	return allErrs
}

// validateToleration checks one toleration as kube-apiserver checks a
// Pod's.
func validateToleration(t kvstore.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if t.Key != "" {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, fldPath.Child("key"))...)
	}
	switch t.Operator {
	case kvstore.TolerationOpExists:
		if t.Value != "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value, "must be empty when operator is Exists"))
		}
	case kvstore.TolerationOpEqual, "":
		if t.Key == "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), t.Operator, "must be Exists when key is empty: an empty key matches every taint"))
		}
		for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value, msg))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("operator"), t.Operator, sets.List(tolerationOperators)))
	}
	if t.Effect != "" && !taintEffects.Has(t.Effect) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("effect"), t.Effect, sets.List(taintEffects)))
	}
	if t.TolerationSeconds != nil && t.Effect != kvstore.TaintEffectNoExecute {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("tolerationSeconds"), *t.TolerationSeconds, "may be set only with effect NoExecute"))
	}
	return allErrs
}

// validateDNSSubdomain checks a name that must be a DNS-1123 subdomain.
func validateDNSSubdomain(name string, fldPath *field.Path) field.ErrorList {
	if len(name) > utilvalidation.DNS1123SubdomainMaxLength {
		return field.ErrorList{field.TooLong(fldPath, name, utilvalidation.DNS1123SubdomainMaxLength)}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}
