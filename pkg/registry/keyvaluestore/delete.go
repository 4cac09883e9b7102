package keyvaluestore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

// Every delete of a KeyValueStore is served as a background delete. The
// teardown finalizer then holds the store while the controller tears it down
// in order (clients, proxy, final backup, data tier, claims), and the garbage collector
// only collects leftover dependents once the store is gone. Foreground
// deletion would let the collector delete the StatefulSet, Deployment and Jobs
// while the teardown still needs them; orphaning would strip their
// ownerReferences and leave the data tier running with no store.
const (
	foregroundDeletionWarning = "foreground deletion of a KeyValueStore runs its ordered teardown " +
		"(clients, proxy, final backup, data tier, claims) exactly as a background deletion does; " +
		"its dependents are removed after it, not before it"

	orphanRefusal = "deleteOptions.%s: a KeyValueStore cannot be deleted with its dependents orphaned: " +
		"orphaning would skip the ordered teardown (no final backup) and leave the data tier running, " +
		"detached from any store. Delete it without a propagation policy (or with Background or Foreground); " +
		"its PersistentVolumeClaims, and so its data, are kept by default " +
		"(spec.persistentVolumeClaimRetentionPolicy.whenDeleted=Retain)"
)

// Delete refuses orphaning and serves a foreground delete as a background one.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	options, err := teardownDeleteOptions(ctx, options)
	if err != nil {
		return nil, false, err
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// DeleteCollection applies the rules of Delete once for the whole request:
// the generic store deletes each item through its own Delete, never ours.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	options, err := teardownDeleteOptions(ctx, options)
	if err != nil {
		return nil, err
	}
	return r.Store.DeleteCollection(ctx, deleteValidation, options, listOptions)
}

// teardownDeleteOptions returns a copy of options whose only propagation
// policy is an explicit Background, or a 400 for an orphaning delete.
//
// An explicit policy (rather than none) matters: the generic store takes the
// policy from the options before the object's finalizers, so Background both
// keeps the orphan and foregroundDeletion finalizers from being set and
// removes one a store may carry from before they were refused. The store's
// deletion path never runs the strategy's validation, so this is the only
// gate on what a delete writes into metadata.finalizers.
func teardownDeleteOptions(ctx context.Context, options *metav1.DeleteOptions) (*metav1.DeleteOptions, error) {
	if options == nil {
		// What the generic store does with nil options.
		options = metav1.NewDeleteOptions(0)
	} else {
		options = options.DeepCopy()
	}
	//nolint:staticcheck // SA1019: old clients still send orphanDependents.
	if o := options.OrphanDependents; o != nil && *o {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(orphanRefusal, "orphanDependents=true"))
	}
	if p := options.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan:
			return nil, apierrors.NewBadRequest(fmt.Sprintf(orphanRefusal, "propagationPolicy=Orphan"))
		case metav1.DeletePropagationForeground:
			warning.AddWarning(ctx, "", foregroundDeletionWarning)
		}
	}
	//nolint:staticcheck // SA1019: orphanDependents=false says Background too.
	options.OrphanDependents = nil
	options.PropagationPolicy = ptr.To(metav1.DeletePropagationBackground)
	return options, nil
}
