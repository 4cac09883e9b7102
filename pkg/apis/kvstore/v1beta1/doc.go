// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore
// +k8s:defaulter-gen=TypeMeta
// +groupName=kvstore.io
// +k8s:openapi-model-package=io.kvstore.v1beta1

// Package v1beta1 is the v1beta1 version of the kvstore.io API, the preferred
// version and the storage format of KeyValueStore and KeyValueStoreBackup.
// It differs from v1alpha1 where v1alpha1 had warts (docs/api.md, "Versions
// and conversion"); everything either version can say survives conversion
// through the other, with annotations for what v1beta1 cannot express.
package v1beta1
