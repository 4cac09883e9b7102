package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// One test per hand-written conversion function in conversion.go.

func TestConvertStorageSpec(t *testing.T) {
	class := "fast"
	in := &StorageSpec{VolumeSize: resource.MustParse("1536Mi"), StorageClassName: &class}
	internal := &kvstore.StorageSpec{}
	require.NoError(t, Convert_v1alpha1_StorageSpec_To_kvstore_StorageSpec(in, internal, nil))
	assert.Equal(t, "1536Mi", internal.Size.String())
	assert.Equal(t, &class, internal.StorageClassName)

	back := &StorageSpec{}
	require.NoError(t, Convert_kvstore_StorageSpec_To_v1alpha1_StorageSpec(internal, back, nil))
	assert.Equal(t, "1536Mi", back.VolumeSize.String())
	assert.Equal(t, &class, back.StorageClassName)
}
