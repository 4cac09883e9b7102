// Package storagemigration rewrites every stored kvstore.io object through
// the API, so etcd holds it in the server's current storage version: the
// StorageVersionMigration pattern (a no-op update of each object) as a
// command, `kvstore-apiserver migrate-storage`.
//
// It is safe to run any number of times and to stop at any point: an object
// already in the storage version encodes to the bytes etcd holds, so the
// server skips the write (no new resourceVersion, no watch event), and a
// run after an interrupted one writes only what is left.
package storagemigration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	kvstorev1beta1 "github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/typed/kvstore/v1beta1"
)

// FieldManager names the migration in managedFields. A rewrite changes no
// field, so it never appears there in practice.
const FieldManager = "kvstore-migrate-storage"

// DefaultResources are the resources a migration rewrites: every resource
// of kvstore.io that is stored, through the preferred version.
var DefaultResources = []schema.GroupVersionResource{
	v1beta1.SchemeGroupVersion.WithResource("keyvaluestores"),
	v1beta1.SchemeGroupVersion.WithResource("keyvaluestorebackups"),
}

// Options say what to migrate and how.
type Options struct {
	// Resources to rewrite; DefaultResources when empty. Each must be one
	// of DefaultResources.
	Resources []schema.GroupVersionResource
	// PageSize is how many objects one list call returns (default 100).
	PageSize int64
	// Out receives one line per resource; nil for none.
	Out io.Writer
}

// Result counts what a migration did to one resource.
type Result struct {
	Resource schema.GroupVersionResource
	// Rewritten objects were written again: they were stored in another
	// version (or encoding) before.
	Rewritten int
	// Unchanged objects were already stored as the server would write them.
	Unchanged int
	// Gone objects were deleted, or changed (and so rewritten by their
	// writer), between the list and their rewrite.
	Gone int
	// Failed objects could not be written; Errors says why.
	Failed int
	Errors []error
}

// Run rewrites every object of every resource and returns what it did. It
// goes on past objects it cannot write and returns an error naming them
// all at the end; it stops only when listing fails or ctx ends.
//
// client should speak protobuf (NewCommand's does): an object goes back
// with the bytes it was read with. JSON would turn bytes that are not valid
// UTF-8, which protobuf clients could store (in annotations, in
// spec.backup.command before it was checked), into U+FFFD, and the rewrite
// would store that change.
func Run(ctx context.Context, client versioned.Interface, opts Options) ([]Result, error) {
	resources := opts.Resources
	if len(resources) == 0 {
		resources = DefaultResources
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 100
	}
	for _, gvr := range resources {
		if _, ok := resourceClients[gvr]; !ok {
			// Before anything is written: a typo must not leave half a run.
			return nil, fmt.Errorf("cannot migrate %s: not one of %v", gvr, DefaultResources)
		}
	}
	var results []Result
	failed := 0
	for _, gvr := range resources {
		res, err := migrateResource(ctx, resourceClients[gvr](client.KvstoreV1beta1()), gvr, pageSize)
		results = append(results, res)
		if opts.Out != nil {
			fmt.Fprintf(opts.Out, "%s: %d rewritten, %d already in the storage version, %d changed or deleted meanwhile, %d failed\n",
				gvr.GroupResource(), res.Rewritten, res.Unchanged, res.Gone, res.Failed)
			for _, e := range res.Errors {
				fmt.Fprintf(opts.Out, "  %v\n", e)
			}
		}
		if err != nil {
			return results, err
		}
		failed += res.Failed
	}
	if failed > 0 {
		return results, fmt.Errorf("%d objects could not be rewritten; run again once their errors are fixed", failed)
	}
	return results, nil
}

// resourceClient lists one resource's objects a page at a time and writes
// one back, typed.
type resourceClient struct {
	list   func(ctx context.Context, opts metav1.ListOptions) (items []metav1.Object, continueToken string, err error)
	update func(ctx context.Context, obj metav1.Object) (metav1.Object, error)
	// rewriteStatus, if set, writes obj back through /status, unchanged,
	// with its resourceVersion as precondition: for an object the server
	// refuses whole for a field /status does not carry.
	rewriteStatus func(ctx context.Context, obj metav1.Object) (metav1.Object, error)
}

var resourceClients = map[schema.GroupVersionResource]func(kvstorev1beta1.KvstoreV1beta1Interface) resourceClient{
	DefaultResources[0]: func(c kvstorev1beta1.KvstoreV1beta1Interface) resourceClient {
		return resourceClient{
			list: func(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, string, error) {
				l, err := c.KeyValueStores("").List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				return objects(l.Items), l.Continue, nil
			},
			update: func(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
				return c.KeyValueStores(obj.GetNamespace()).Update(ctx, obj.(*v1beta1.KeyValueStore), metav1.UpdateOptions{FieldManager: FieldManager})
			},
			rewriteStatus: func(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
				return c.KeyValueStores(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, resourceVersionPatch(obj),
					metav1.PatchOptions{FieldManager: FieldManager}, "status")
			},
		}
	},
	DefaultResources[1]: func(c kvstorev1beta1.KvstoreV1beta1Interface) resourceClient {
		return resourceClient{
			list: func(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, string, error) {
				l, err := c.KeyValueStoreBackups("").List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				return objects(l.Items), l.Continue, nil
			},
			update: func(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
				return c.KeyValueStoreBackups(obj.GetNamespace()).Update(ctx, obj.(*v1beta1.KeyValueStoreBackup), metav1.UpdateOptions{FieldManager: FieldManager})
			},
		}
	},
}

// objects are pointers to items, as metav1.Objects.
func objects[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

func migrateResource(ctx context.Context, client resourceClient, gvr schema.GroupVersionResource, pageSize int64) (Result, error) {
	res := Result{Resource: gvr}
	// done counts each object once when a list has to start over.
	done := map[types.UID]bool{}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		items, next, err := client.list(ctx, opts)
		if apierrors.IsResourceExpired(err) {
			// The continue token outlived etcd's compaction. Go on from
			// where the list was with the token the 410 carries (what it
			// misses was written since, so in the storage version already);
			// without one, start over.
			opts.Continue = inconsistentContinue(err)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
		}
		for _, obj := range slices.DeleteFunc(items, func(o metav1.Object) bool { return done[o.GetUID()] }) {
			rewrite(ctx, client, obj, &res)
			done[obj.GetUID()] = true
		}
		if next == "" {
			return res, nil
		}
		opts.Continue = next
	}
}

// resourceVersionPatch is a JSON patch that changes nothing and writes only
// at obj's resourceVersion (the server takes a resourceVersion in the
// patched object as a precondition: a conflict if it changed since).
func resourceVersionPatch(obj metav1.Object) []byte {
	patch, _ := json.Marshal([]map[string]string{{"op": "replace", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()}})
	return patch
}

// inconsistentContinue is the continue token an expired list's 410 offers
// to go on without a consistent snapshot ("" if none).
func inconsistentContinue(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().ListMeta.Continue
	}
	return ""
}

// rewrite writes obj back unchanged. Its resourceVersion is a precondition:
// an object changed since the list was written by someone else in the
// storage version already, and is not overwritten with the listed copy.
func rewrite(ctx context.Context, client resourceClient, obj metav1.Object, res *Result) {
	sent := obj.GetResourceVersion()
	updated, err := client.update(ctx, obj)
	if validation.IsStoredSizeRefusal(err) && client.rewriteStatus != nil {
		// A size stored before the size guard: refused whole for ever (such
		// a size cannot change), but /status carries no size. (The patch
		// goes through JSON, unlike the rest of the run; only status could
		// change by it, and status is the controller's.)
		if updated, err = client.rewriteStatus(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			err = fmt.Errorf("its size was stored before the size guard, so it is written back through /status (which needs patch on keyvaluestores/status): %w", err)
		}
	}
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		res.Gone++
	case err != nil:
		res.Failed++
		res.Errors = append(res.Errors, fmt.Errorf("%s/%s: %w", obj.GetNamespace(), obj.GetName(), err))
	case updated.GetResourceVersion() == sent:
		res.Unchanged++
	default:
		res.Rewritten++
	}
}
