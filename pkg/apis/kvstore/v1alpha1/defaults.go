package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// Scalar defaults are declared with +default markers on the fields (they
// reach both the generated defaulters and the OpenAPI schema); this file holds
// only what a marker cannot express.

// DefaultStorageSize is the volume size of a data replica when none is given.
const DefaultStorageSize = "1Gi"

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_KeyValueStoreSpec defaults the storage size (a Quantity marker
// is not supported) and creates the retention policy so its marker applies.
func SetDefaults_KeyValueStoreSpec(obj *KeyValueStoreSpec) {
	if obj.Storage.VolumeSize.IsZero() {
		obj.Storage.VolumeSize = resource.MustParse(DefaultStorageSize)
	}
	if obj.PersistentVolumeClaimRetentionPolicy == nil {
		obj.PersistentVolumeClaimRetentionPolicy = &PersistentVolumeClaimRetentionPolicy{}
	}
}
