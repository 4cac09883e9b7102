package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	scalescheme "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/install"
)

var (
	// Scheme holds every type the server serves, internal and versioned.
	Scheme = runtime.NewScheme()
	// Codecs serialize and deserialize the types in Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)

	// keyvaluestores/scale serves autoscaling/v1 Scale. The generic handlers
	// decode a request body to the internal version of its kind's group
	// (autoscaling/__internal), so that needs a type of its own: client-go's
	// scale scheme has one and the conversions to and from autoscaling/v1,
	// as apiextensions-apiserver uses for custom resources. Only Scale is
	// registered, not the rest of autoscaling/v1.
	Scheme.AddKnownTypes(autoscalingv1.SchemeGroupVersion, &autoscalingv1.Scale{})
	utilruntime.Must(scalescheme.AddToScheme(Scheme))
	utilruntime.Must(scaleautoscalingv1.RegisterConversions(Scheme))

	// Options such as ListOptions and DeleteOptions are decoded as meta/v1 in
	// every group; the generic server looks them up under version "v1".
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}
