// Package v1alpha1 is the KeyValueStore API of bench.kvstore.io: the same
// fields as kvstore.io/v1alpha1, served as a CRD by kube-apiserver
// (artifacts/bench/keyvaluestores-crd.yaml). Written the kubebuilder way:
// plain Go types and controller-gen's deepcopy.
// +kubebuilder:object:generate=true
// +groupName=bench.kvstore.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the CRD.
	GroupVersion = schema.GroupVersion{Group: "bench.kvstore.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
