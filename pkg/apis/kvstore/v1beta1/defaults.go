package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// Scalar defaults are declared with +default markers on the fields (they
// reach both the generated defaulters and the OpenAPI schema); this file holds
// only what a marker cannot express. The defaults are v1alpha1's: a store
// means the same whichever version created it.

// DefaultStorageCapacity is the volume capacity of a data replica when none is given.
const DefaultStorageCapacity = "1Gi"

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_KeyValueStoreSpec defaults the storage capacity (a Quantity
// marker is not supported) and creates the retention policy so its marker
// applies.
func SetDefaults_KeyValueStoreSpec(obj *KeyValueStoreSpec) {
	if obj.Storage.Capacity.IsZero() {
		obj.Storage.Capacity = resource.MustParse(DefaultStorageCapacity)
	}
	if obj.PersistentVolumeClaimRetentionPolicy == nil {
		obj.PersistentVolumeClaimRetentionPolicy = &PersistentVolumeClaimRetentionPolicy{}
	}
}
