package storagemigration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

func store(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kvstore.io/v1beta1")
	u.SetKind("KeyValueStore")
	u.SetNamespace("default")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// Each object is written back once, with its resourceVersion; what the
// server answers decides how it is counted, and one failure does not stop
// the others.
func TestRunCountsEachOutcome(t *testing.T) {
	gvr := DefaultResources[0]
	scheme := runtime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{gvr: "KeyValueStoreList"},
		store("migrated", "1"), store("current", "2"), store("gone", "3"), store("raced", "4"), store("broken", "5"))

	var sentVersions []string
	client.PrependReactor("update", "keyvaluestores", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		sentVersions = append(sentVersions, obj.GetName()+"@"+obj.GetResourceVersion())
		gr := gvr.GroupResource()
		switch obj.GetName() {
		case "migrated":
			out := obj.DeepCopy()
			out.SetResourceVersion("10")
			return true, out, nil
		case "current":
			return true, obj.DeepCopy(), nil // no write: same resourceVersion
		case "gone":
			return true, nil, apierrors.NewNotFound(gr, obj.GetName())
		case "raced":
			return true, nil, apierrors.NewConflict(gr, obj.GetName(), fmt.Errorf("changed"))
		default:
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is down"))
		}
	})

	var out strings.Builder
	results, err := Run(context.Background(), client, Options{Resources: []schema.GroupVersionResource{gvr}, Out: &out})
	require.Error(t, err, "a failed object fails the run")
	assert.Contains(t, err.Error(), "1 objects could not be rewritten")
	require.Len(t, results, 1)
	r := results[0]
	assert.Equal(t, 1, r.Rewritten)
	assert.Equal(t, 1, r.Unchanged)
	assert.Equal(t, 2, r.Gone)
	assert.Equal(t, 1, r.Failed)
	require.Len(t, r.Errors, 1)
	assert.Contains(t, r.Errors[0].Error(), "default/broken")
	assert.ElementsMatch(t, []string{"migrated@1", "current@2", "gone@3", "raced@4", "broken@5"}, sentVersions,
		"every object is sent back with the resourceVersion it was listed at")
	assert.Contains(t, out.String(), "keyvaluestores.kvstore.io: 1 rewritten, 1 already in the storage version, 2 changed or deleted meanwhile, 1 failed")
	assert.Contains(t, out.String(), "default/broken")
}

func TestRunStopsWhenListingFails(t *testing.T) {
	gvr := DefaultResources[0]
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "KeyValueStoreList", DefaultResources[1]: "KeyValueStoreBackupList"})
	client.PrependReactor("list", "keyvaluestores", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "", fmt.Errorf("no"))
	})
	results, err := Run(context.Background(), client, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "list keyvaluestores.kvstore.io")
	assert.Len(t, results, 1, "the backups are not reached")
}
