package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// StorageSpec's size is VolumeSize here and Size in the internal type (see
// the field's comment), so conversion-gen leaves that one field to these.

// Convert_v1alpha1_StorageSpec_To_kvstore_StorageSpec converts StorageSpec to the internal type.
func Convert_v1alpha1_StorageSpec_To_kvstore_StorageSpec(in *StorageSpec, out *kvstore.StorageSpec, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_StorageSpec_To_kvstore_StorageSpec(in, out, s); err != nil {
		return err
	}
	out.Size = in.VolumeSize
	return nil
}

// Convert_kvstore_StorageSpec_To_v1alpha1_StorageSpec converts the internal StorageSpec to v1alpha1.
func Convert_kvstore_StorageSpec_To_v1alpha1_StorageSpec(in *kvstore.StorageSpec, out *StorageSpec, s conversion.Scope) error {
	if err := autoConvert_kvstore_StorageSpec_To_v1alpha1_StorageSpec(in, out, s); err != nil {
		return err
	}
	out.VolumeSize = in.Size
	return nil
}

// addFieldLabelConversionFuncs declares which field selectors the API accepts.
// Without it only metadata.name and metadata.namespace would be selectable.
func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	if err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("KeyValueStore"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "spec.image", "status.phase":
				return label, value, nil
			default:
				return "", "", fmt.Errorf("field label %q is not supported for KeyValueStore; supported: metadata.name, metadata.namespace, spec.image, status.phase", label)
			}
		}); err != nil {
		return err
	}
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("KeyValueStoreBackup"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "spec.storeName":
				return label, value, nil
			default:
				return "", "", fmt.Errorf("field label %q is not supported for KeyValueStoreBackup; supported: metadata.name, metadata.namespace, spec.storeName", label)
			}
		})
}
