package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// addFieldLabelConversionFuncs declares which field selectors the API accepts.
// Without it only metadata.name and metadata.namespace would be selectable.
func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("KeyValueStore"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "spec.image", "status.phase":
				return label, value, nil
			default:
				return "", "", fmt.Errorf("field label %q is not supported for KeyValueStore; supported: metadata.name, metadata.namespace, spec.image, status.phase", label)
			}
		})
}
