package integration

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

func unstructuredSerializer() runtime.NegotiatedSerializer {
	return scheme.Codecs.WithoutConversion()
}
