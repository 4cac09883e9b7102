//go:build tools

// Package tools pins the Kubernetes components the local stack and the
// end-to-end tests run, and sample-apiserver, the benchmark's peer
// aggregated API server. It is never imported by the product.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/sample-apiserver"
)
