package keyvaluestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// TestPrepareForUpdateAbsurdStoredSize: a store that holds a size from
// before validation.MaxStorageSize is updated (by its teardown, at least)
// without comparing sizes by value, which would never return.
func TestPrepareForUpdateAbsurdStoredSize(t *testing.T) {
	absurd, err := resource.ParseQuantity("1e2147483647")
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		newSize  resource.Quantity
		wantBump bool
	}{
		{"unchanged", absurd, false},
		{"changed", resource.MustParse("1Gi"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := storedKVS()
			old.Spec.Storage.Size = absurd
			obj := old.DeepCopy()
			obj.Spec.Storage.Size = tc.newSize
			done := make(chan struct{})
			go func() { testStrategy().PrepareForUpdate(context.Background(), obj, old); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Second):
				t.Fatal("PrepareForUpdate compared the sizes by value")
			}
			assert.Equal(t, tc.wantBump, obj.Generation == old.Generation+1)
		})
	}
}

// An update carrying an absurd quantity anywhere in the spec (a resources
// map: the request's quantity guard refuses it today, so this is defence in
// depth) is compared without Quantity.Cmp, which would run for hours
// before validation could refuse it (found by review).
func TestPrepareForUpdateAbsurdResource(t *testing.T) {
	absurd, err := resource.ParseQuantity("1e2147483647")
	require.NoError(t, err)
	old := storedKVS()
	old.Spec.Resources = &kvstore.Resources{Requests: map[string]resource.Quantity{"cpu": resource.MustParse("1")}}
	obj := old.DeepCopy()
	obj.Spec.Resources.Requests["cpu"] = absurd
	done := make(chan struct{})
	go func() { testStrategy().PrepareForUpdate(context.Background(), obj, old); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("PrepareForUpdate compared the quantities by value")
	}
	assert.Equal(t, old.Generation+1, obj.Generation)
}
