// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore
// +k8s:defaulter-gen=TypeMeta
// +groupName=kvstore.io
// +k8s:openapi-model-package=io.kvstore.v1alpha1

// Package v1alpha1 is the v1alpha1 version of the kvstore.io API: the wire
// and storage format of KeyValueStore and KeyValueStoreBackup.
package v1alpha1
