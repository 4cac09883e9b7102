// +k8s:deepcopy-gen=package
// +groupName=kvstore.io

// Package kvstore holds the internal (hub) types of the kvstore.io API group.
// Every served version converts to and from these; strategies and validation
// work on them only.
package kvstore
