package storagemigration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/fake"
)

// store is the one fixture: a stored KeyValueStore at resourceVersion rv.
func store(name, rv string) *v1beta1.KeyValueStore {
	return &v1beta1.KeyValueStore{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// newClient is a fake clientset holding objs; every write goes through
// update's answer.
func newClient(update func(*v1beta1.KeyValueStore) (runtime.Object, error), objs ...runtime.Object) *fake.Clientset {
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck // no apply here: the simple clientset is enough
	client.PrependReactor("update", "keyvaluestores", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := update(action.(clienttesting.UpdateAction).GetObject().(*v1beta1.KeyValueStore))
		return true, obj, err
	})
	return client
}

// Each object is written back once, with its resourceVersion; what the
// server answers decides how it is counted, and one failure does not stop
// the others.
func TestRunCountsEachOutcome(t *testing.T) {
	gvr := DefaultResources[0]
	var sentVersions []string
	client := newClient(func(obj *v1beta1.KeyValueStore) (runtime.Object, error) {
		sentVersions = append(sentVersions, obj.Name+"@"+obj.ResourceVersion)
		gr := gvr.GroupResource()
		switch obj.Name {
		case "migrated":
			out := obj.DeepCopy()
			out.ResourceVersion = "10"
			return out, nil
		case "current":
			return obj.DeepCopy(), nil // no write: same resourceVersion
		case "gone":
			return nil, apierrors.NewNotFound(gr, obj.Name)
		case "raced":
			return nil, apierrors.NewConflict(gr, obj.Name, fmt.Errorf("changed"))
		default:
			return nil, apierrors.NewInternalError(fmt.Errorf("etcd is down"))
		}
	}, store("migrated", "1"), store("current", "2"), store("gone", "3"), store("raced", "4"), store("broken", "5"))

	var out strings.Builder
	results, err := Run(context.Background(), client, Options{Resources: DefaultResources[:1], Out: &out})
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
	client := fake.NewSimpleClientset() //nolint:staticcheck // see newClient
	client.PrependReactor("list", "keyvaluestores", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(DefaultResources[0].GroupResource(), "", fmt.Errorf("no"))
	})
	results, err := Run(context.Background(), client, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "list keyvaluestores.kvstore.io")
	assert.Len(t, results, 1, "the backups are not reached")
}

// A list whose continue token expired (410) goes on with the token the
// 410 offers, or starts over; either way each object is written and
// counted once. Before, a restart counted the first pages twice.
func TestRunAfterAnExpiredContinueToken(t *testing.T) {
	for name, offered := range map[string]string{"with the 410's token": "inconsistent", "starting over": ""} {
		t.Run(name, func(t *testing.T) {
			writes := map[string]int{}
			client := newClient(func(obj *v1beta1.KeyValueStore) (runtime.Object, error) {
				writes[obj.Name]++
				return obj.DeepCopy(), nil
			})
			pages := map[string]*v1beta1.KeyValueStoreList{
				"":             {Items: []v1beta1.KeyValueStore{*store("a", "1"), *store("b", "2")}, ListMeta: metav1.ListMeta{Continue: "page2"}},
				"inconsistent": {Items: []v1beta1.KeyValueStore{*store("c", "3")}},
			}
			expired := false
			client.PrependReactor("list", "keyvaluestores", func(action clienttesting.Action) (bool, runtime.Object, error) {
				cont := action.(clienttesting.ListActionImpl).GetListOptions().Continue
				if cont == "page2" {
					if !expired {
						expired = true
						gone := apierrors.NewResourceExpired("continue token expired")
						gone.ErrStatus.ListMeta.Continue = offered
						return true, nil, gone
					}
					return true, pages["inconsistent"], nil
				}
				return true, pages[cont], nil
			})
			results, err := Run(context.Background(), client, Options{Resources: DefaultResources[:1], PageSize: 2})
			require.NoError(t, err)
			assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, writes)
			assert.Equal(t, 3, results[0].Unchanged, "%+v", results[0])
		})
	}
}

// An unknown resource is refused before anything is written.
func TestRunRefusesAnUnknownResourceFirst(t *testing.T) {
	var writes int
	client := newClient(func(obj *v1beta1.KeyValueStore) (runtime.Object, error) {
		writes++
		return obj.DeepCopy(), nil
	}, store("a", "1"))
	_, err := Run(context.Background(), client, Options{Resources: []schema.GroupVersionResource{
		DefaultResources[0], v1beta1.SchemeGroupVersion.WithResource("keyvaluestores.kvstore.io")}})
	require.ErrorContains(t, err, "cannot migrate")
	assert.Zero(t, writes)
}

// A store whose size was stored before the size guard cannot be written
// back whole (the guard refuses its size, and such a size cannot change): it is
// rewritten through /status, which carries no size, with the same
// resourceVersion precondition. It was counted as failed on every run
// (found by review), and a rollback could not move it back.
func TestRunRewritesAStoreWithAPreGuardSizeThroughStatus(t *testing.T) {
	gr := DefaultResources[0].GroupResource()
	client := newClient(func(obj *v1beta1.KeyValueStore) (runtime.Object, error) {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "KeyValueStore"}, obj.Name,
			field.ErrorList{field.TooLong(field.NewPath("spec", "storage", "capacity"), "", 64)})
	}, store("old", "7"))
	var patches []string
	client.PrependReactor("patch", "keyvaluestores", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchAction)
		patches = append(patches, p.GetSubresource()+" "+string(p.GetPatchType())+" "+string(p.GetPatch()))
		out := store("old", "8")
		return true, out, nil
	})
	results, err := Run(context.Background(), client, Options{Resources: DefaultResources[:1]})
	require.NoError(t, err)
	assert.Equal(t, 1, results[0].Rewritten)
	require.Len(t, patches, 1)
	assert.Equal(t, `status application/json-patch+json [{"op":"replace","path":"/metadata/resourceVersion","value":"7"}]`, patches[0])
}
