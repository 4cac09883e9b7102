package validation

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

// absurdSize parses a size whose exponent Quantity.Cmp would expand into a
// number of billions of digits (hours of CPU, gigabytes of memory). Parsing
// it is quick; such sizes were accepted before MaxStorageSize.
func absurdSize(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	require.NoError(t, err)
	return q
}

// noLongerThan fails the test if f runs for more than a second: the
// regressions these tests guard against never return.
func noLongerThan(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("still running after a second: a size was compared by expanding its exponent")
	}
}

func TestStorageSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		size string
		want []fieldErr
	}{
		{"1Gi", expect()},
		{"9223372036854775807", expect()},
		{"8Ei", expect()}, // resource.Quantity clamps binary sizes of 8Ei and more to MaxInt64
		{"9223372036854775808", expect(invalid("spec.storage.size"))},
		{"10E", expect(invalid("spec.storage.size"))},
		{"1e19", expect(invalid("spec.storage.size"))},
		{"1e99999999999", expect(invalid("spec.storage.size"))}, // the exponent wraps around int32
		{"1e2147483647", expect(invalid("spec.storage.size"))},
		{"1.5e2147483647", expect(invalid("spec.storage.size"))},
		{"0e2147483647", expect(invalid("spec.storage.size"))}, // zero
	} {
		t.Run(tc.size, func(t *testing.T) {
			kvs := validKVS()
			kvs.Spec.Storage.Size = absurdSize(t, tc.size)
			noLongerThan(t, func() {
				assert.Equal(t, tc.want, summarize(ValidateKeyValueStore(kvs)))
			})
		})
	}
	assert.Equal(t, int64(math.MaxInt64), MaxStorageSize.Value())
}

// TestStoredAbsurdSize: a store that holds a size from before the limit can
// still be updated (the teardown removes its finalizer with an update), its
// size cannot change, and a size that changes to one is refused by the
// limit, all without ever comparing the sizes by value.
func TestStoredAbsurdSize(t *testing.T) {
	for _, stored := range []string{"1e2147483647", "10e1215752190", "1.5e2147483647"} {
		t.Run(stored, func(t *testing.T) {
			newObj, oldObj := updatable()
			oldObj.Spec.Storage.Size = absurdSize(t, stored)
			newObj.Spec.Storage.Size = absurdSize(t, stored)
			newObj.Finalizers = nil
			noLongerThan(t, func() {
				assert.Empty(t, ValidateKeyValueStoreUpdate(newObj, oldObj), "an unchanged size stays accepted")
			})

			newObj.Spec.Storage.Size = resource.MustParse("1Gi")
			noLongerThan(t, func() {
				assert.Equal(t, expect(invalid("spec.storage.size")), summarize(ValidateKeyValueStoreUpdate(newObj, oldObj)))
			})
			newObj.Spec.Storage.Size, oldObj.Spec.Storage.Size = oldObj.Spec.Storage.Size, newObj.Spec.Storage.Size
			noLongerThan(t, func() {
				assert.Equal(t, expect(invalid("spec.storage.size")), summarize(ValidateKeyValueStoreUpdate(newObj, oldObj)))
			})
		})
	}
}

func TestSizesEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1Gi", "1024Mi", true},
		{"1Gi", "1073741824", true},
		{"1Gi", "1G", false},
		{"1e3", "1k", true},
		{"1e2147483647", "1e2147483647", true},
		{"1e2147483647", "1Gi", false},
		{"1Gi", "1e2147483647", false},
		{"1e2147483647", "1e2147483646", false},
		{"1.5e2147483647", "15e2147483646", false}, // equal values, compared by text
	} {
		t.Run(tc.a+" "+tc.b, func(t *testing.T) {
			a, b := absurdSize(t, tc.a), absurdSize(t, tc.b)
			noLongerThan(t, func() { assert.Equal(t, tc.want, SizesEqual(a, b)) })
		})
	}
}
