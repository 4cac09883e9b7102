package v1beta1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// Hand-written conversions: what conversion-gen cannot pair by name.
// v1beta1 renames spec.storage.size to spec.storage.capacity, and has no
// status.currentImage: the internal value travels in
// kvstore.CurrentImageAnnotation so a v1alpha1 object read and written back
// as v1beta1 loses nothing (as autoscaling/v1 carries v2's metrics).

// Convert_v1beta1_KeyValueStore_To_kvstore_KeyValueStore moves the
// current-image annotation back into the status.
func Convert_v1beta1_KeyValueStore_To_kvstore_KeyValueStore(in *KeyValueStore, out *kvstore.KeyValueStore, s conversion.Scope) error {
	if err := autoConvert_v1beta1_KeyValueStore_To_kvstore_KeyValueStore(in, out, s); err != nil {
		return err
	}
	image, ok := in.Annotations[kvstore.CurrentImageAnnotation]
	if !ok {
		return nil
	}
	out.Status.CurrentImage = image
	// A copy: the generated code shares the map with in.
	out.Annotations = withoutKey(in.Annotations, kvstore.CurrentImageAnnotation)
	return nil
}

// Convert_kvstore_KeyValueStore_To_v1beta1_KeyValueStore writes a non-empty
// status.currentImage into the annotation. Any value the annotation already
// has is replaced, so the annotation only ever says what the status says.
func Convert_kvstore_KeyValueStore_To_v1beta1_KeyValueStore(in *kvstore.KeyValueStore, out *KeyValueStore, s conversion.Scope) error {
	if err := autoConvert_kvstore_KeyValueStore_To_v1beta1_KeyValueStore(in, out, s); err != nil {
		return err
	}
	if _, ok := in.Annotations[kvstore.CurrentImageAnnotation]; ok {
		out.Annotations = withoutKey(in.Annotations, kvstore.CurrentImageAnnotation)
	}
	if in.Status.CurrentImage == "" {
		return nil
	}
	annotations := make(map[string]string, len(out.Annotations)+1)
	for k, v := range out.Annotations {
		annotations[k] = v
	}
	annotations[kvstore.CurrentImageAnnotation] = in.Status.CurrentImage
	out.Annotations = annotations
	return nil
}

// withoutKey returns a copy of m without key, nil when nothing else is left.
func withoutKey(m map[string]string, key string) map[string]string {
	if len(m) <= 1 {
		if _, ok := m[key]; ok {
			return nil
		}
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// Convert_kvstore_KeyValueStoreStatus_To_v1beta1_KeyValueStoreStatus leaves
// currentImage to the KeyValueStore conversion, which owns the annotations.
func Convert_kvstore_KeyValueStoreStatus_To_v1beta1_KeyValueStoreStatus(in *kvstore.KeyValueStoreStatus, out *KeyValueStoreStatus, s conversion.Scope) error {
	return autoConvert_kvstore_KeyValueStoreStatus_To_v1beta1_KeyValueStoreStatus(in, out, s)
}

// Convert_v1beta1_StorageSpec_To_kvstore_StorageSpec converts capacity to the internal size.
func Convert_v1beta1_StorageSpec_To_kvstore_StorageSpec(in *StorageSpec, out *kvstore.StorageSpec, s conversion.Scope) error {
	if err := autoConvert_v1beta1_StorageSpec_To_kvstore_StorageSpec(in, out, s); err != nil {
		return err
	}
	out.Size = in.Capacity
	return nil
}

// Convert_kvstore_StorageSpec_To_v1beta1_StorageSpec converts the internal size to capacity.
func Convert_kvstore_StorageSpec_To_v1beta1_StorageSpec(in *kvstore.StorageSpec, out *StorageSpec, s conversion.Scope) error {
	if err := autoConvert_kvstore_StorageSpec_To_v1beta1_StorageSpec(in, out, s); err != nil {
		return err
	}
	out.Capacity = in.Size
	return nil
}

// addFieldLabelConversionFuncs declares which field selectors the API
// accepts: the same as v1alpha1's, since no selectable field moved.
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
