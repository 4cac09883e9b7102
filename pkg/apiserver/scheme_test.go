package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	scalescheme "k8s.io/client-go/scale/scheme"
)

// TestScaleConversion: /scale answers with autoscaling/v1 Scale made from the
// internal Scale, and decodes request bodies to the internal Scale (the
// generic handlers' hub for the autoscaling group). status.selector comes
// back as the controller wrote it: a selector in canonical form (requirements
// sorted by key, as labels.Selector.String() prints them) is unchanged; any
// other comes back as the same selector in canonical form.
func TestScaleConversion(t *testing.T) {
	for _, tc := range []struct{ selector, want string }{
		{"", ""},
		// labels.SelectorFromSet(...).String(), what the controller writes.
		{"app.kubernetes.io/component=data,app.kubernetes.io/instance=demo", "app.kubernetes.io/component=data,app.kubernetes.io/instance=demo"},
		{"app=demo,!legacy,tier in (a,b)", "app=demo,!legacy,tier in (a,b)"},
		{"tier in (b,a),app=demo", "app=demo,tier in (a,b)"},
	} {
		selector := tc.selector
		t.Run(selector, func(t *testing.T) {
			internal := &scalescheme.Scale{
				ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", ResourceVersion: "5"},
				Spec:       scalescheme.ScaleSpec{Replicas: 3},
				Status:     scalescheme.ScaleStatus{Replicas: 2},
			}
			if selector != "" {
				var err error
				internal.Status.Selector, err = metav1.ParseToLabelSelector(selector)
				require.NoError(t, err)
			}

			out, err := Scheme.ConvertToVersion(internal.DeepCopy(), autoscalingv1.SchemeGroupVersion)
			require.NoError(t, err)
			v1, ok := out.(*autoscalingv1.Scale)
			require.True(t, ok, "got %T", out)
			assert.Equal(t, autoscalingv1.SchemeGroupVersion.WithKind("Scale"), v1.GroupVersionKind())
			assert.Equal(t, "demo", v1.Name)
			assert.Equal(t, "5", v1.ResourceVersion)
			assert.Equal(t, int32(3), v1.Spec.Replicas)
			assert.Equal(t, int32(2), v1.Status.Replicas)
			assert.Equal(t, tc.want, v1.Status.Selector)

			back, err := Scheme.ConvertToVersion(v1, schema.GroupVersion{Group: "autoscaling", Version: runtime.APIVersionInternal})
			require.NoError(t, err)
			require.IsType(t, &scalescheme.Scale{}, back)
			back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			assert.Equal(t, internal, back)
		})
	}
}

// TestScaleJSON: a kubectl-style body decodes to the internal Scale, and the
// internal Scale encodes as autoscaling/v1.
func TestScaleJSON(t *testing.T) {
	body := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"demo","resourceVersion":"9"},"spec":{"replicas":4}}`)
	decoder := Codecs.UniversalDecoder(schema.GroupVersion{Group: "autoscaling", Version: runtime.APIVersionInternal})
	obj, err := runtime.Decode(decoder, body)
	require.NoError(t, err)
	scale, ok := obj.(*scalescheme.Scale)
	require.True(t, ok, "got %T", obj)
	assert.Equal(t, int32(4), scale.Spec.Replicas)
	assert.Equal(t, "9", scale.ResourceVersion)

	info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	encoded, err := runtime.Encode(Codecs.EncoderForVersion(info.Serializer, autoscalingv1.SchemeGroupVersion), scale)
	require.NoError(t, err)
	assert.Contains(t, string(encoded), `"apiVersion":"autoscaling/v1"`)
	assert.Contains(t, string(encoded), `"kind":"Scale"`)
	assert.Contains(t, string(encoded), `"replicas":4`)
}
