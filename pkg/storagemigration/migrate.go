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
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// FieldManager names the migration in managedFields. A rewrite changes no
// field, so it never appears there in practice.
const FieldManager = "kvstore-migrate-storage"

// DefaultResources are the resources a migration rewrites: every resource
// of kvstore.io that is stored, through the preferred version.
var DefaultResources = []schema.GroupVersionResource{
	{Group: "kvstore.io", Version: "v1beta1", Resource: "keyvaluestores"},
	{Group: "kvstore.io", Version: "v1beta1", Resource: "keyvaluestorebackups"},
}

// Options say what to migrate and how.
type Options struct {
	// Resources to rewrite; DefaultResources when empty.
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
func Run(ctx context.Context, client dynamic.Interface, opts Options) ([]Result, error) {
	resources := opts.Resources
	if len(resources) == 0 {
		resources = DefaultResources
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 100
	}
	var results []Result
	failed := 0
	for _, gvr := range resources {
		res, err := migrateResource(ctx, client.Resource(gvr), gvr, pageSize)
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

func migrateResource(ctx context.Context, client dynamic.NamespaceableResourceInterface, gvr schema.GroupVersionResource, pageSize int64) (Result, error) {
	res := Result{Resource: gvr}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := client.List(ctx, opts)
		if apierrors.IsResourceExpired(err) {
			// The continue token outlived etcd's compaction: start over.
			// What is done stays done, and is skipped without a write.
			opts.Continue = ""
			continue
		}
		if err != nil {
			return res, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			rewrite(ctx, client, &list.Items[i], &res)
		}
		if list.GetContinue() == "" {
			return res, nil
		}
		opts.Continue = list.GetContinue()
	}
}

// rewrite writes obj back unchanged. Its resourceVersion is a precondition:
// an object changed since the list was written by someone else in the
// storage version already, and is not overwritten with the listed copy.
func rewrite(ctx context.Context, client dynamic.NamespaceableResourceInterface, obj *unstructured.Unstructured, res *Result) {
	sent := obj.GetResourceVersion()
	updated, err := client.Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
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
