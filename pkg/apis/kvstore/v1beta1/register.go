package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by kvstore-apiserver.
const GroupName = "kvstore.io"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

var (
	// SchemeBuilder registers the v1alpha1 types, defaults and conversions.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds the v1alpha1 types to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated functions register themselves in zz_generated files; only the
	// hand-written ones are registered here so the package compiles without them.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addFieldLabelConversionFuncs)
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&KeyValueStore{},
		&KeyValueStoreList{},
		&KeyValueStoreBackup{},
		&KeyValueStoreBackupList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
