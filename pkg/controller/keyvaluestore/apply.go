package keyvaluestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// ownedKind is how the controller reads and server-side applies one kind of
// object it owns. T is the typed object, AC its apply configuration.
type ownedKind[T metav1.Object, AC any] struct {
	kind string
	// cached reads the informer's copy (only objects labelled managed-by).
	cached func(namespace, name string) (T, error)
	// live reads the server: the only way to see an unlabelled object that
	// happens to carry a store's derived name.
	live func(ctx context.Context, namespace, name string) (T, error)
	// extract returns the fields we applied; unused for createOnly kinds.
	extract func(T) (AC, error)
	apply   func(ctx context.Context, namespace string, desired AC) (T, error)
	// createOnly kinds (Jobs: their template is immutable) are applied only
	// to create them; an existing one of ours is left as it is.
	createOnly bool
	// memo spares extract for an object unchanged since it last matched
	// (nil: always extract).
	memo *appliedMemo
	// normalize, if set, makes the extracted fields equal to desired where
	// they differ only as admission may rewrite them in our own request.
	normalize func(live, desired AC)
	// adapt, if set, fits desired to the existing object's immutable fields
	// (read from the same object the apply is judged on).
	adapt func(cur T, desired AC)
}

// get reads the object from the cache, or, on a miss, from the server (the
// cache holds only objects labelled managed-by).
func (k ownedKind[T, AC]) get(ctx context.Context, namespace, name string) (T, error) {
	obj, err := k.cached(namespace, name)
	if apierrors.IsNotFound(err) {
		return k.live(ctx, namespace, name)
	}
	return obj, err
}

// carries says cur carries desired, once desired is fitted to cur's
// immutable fields.
func (k ownedKind[T, AC]) carries(cur T, desired AC) bool {
	if k.adapt != nil {
		k.adapt(cur, desired)
	}
	return k.unchanged(cur, desired)
}

// applied returns the fields of cur that are ours in managedFields, and
// desired fitted to cur's immutable fields, both normalized as unchanged
// compares them; ok is false if they cannot be read.
func (k ownedKind[T, AC]) applied(cur T, desired AC) (live AC, ok bool) {
	if k.adapt != nil {
		k.adapt(cur, desired)
	}
	live, err := k.extract(cur)
	if err != nil {
		return live, false
	}
	if k.normalize != nil {
		k.normalize(live, desired)
	}
	return live, true
}

// unchanged says cur carries, as ours in managedFields, exactly desired.
func (k ownedKind[T, AC]) unchanged(cur T, desired AC) bool {
	digest, memoable := k.memo.digest(cur, desired)
	if memoable && k.memo.holds(cur, digest) {
		return true
	}
	live, err := k.extract(cur)
	if err != nil {
		return false
	}
	if k.normalize != nil {
		k.normalize(live, desired)
	}
	if !apiequality.Semantic.DeepEqual(live, desired) {
		return false
	}
	if memoable {
		k.memo.remember(cur, digest)
	}
	return true
}

// applyOutcome says what applyUnlessUnchanged did.
type applyOutcome string

const (
	applyUnchanged applyOutcome = "unchanged"
	applyCreated   applyOutcome = "created"
	applyUpdated   applyOutcome = "updated"
	applyRefused   applyOutcome = "refused"
)

// objectInTheWayError: an object with a store's derived name exists and the
// store does not control it. The controller never takes it over (and so
// never deletes it with the store); the user renames or removes one of them.
type objectInTheWayError struct {
	kind, namespace, name, holder string
	// problem, if set, says what is wrong with the object and the ways on,
	// in place of "not controlled by this store" (a claim never is).
	problem string
	// heldScaleUp: the object holds only a scale-up back; everything else
	// was applied (the StatefulSet at the replicas that may run).
	heldScaleUp bool
}

func (e *objectInTheWayError) Error() string {
	if e.problem != "" {
		return fmt.Sprintf("%s %s/%s %s", e.kind, e.namespace, e.name, e.problem)
	}
	return fmt.Sprintf("%s %s/%s already exists and is not controlled by this KeyValueStore (%s); "+
		"delete or rename it, or give the store another name", e.kind, e.namespace, e.name, e.holder)
}

// applyUnlessUnchanged server-side applies desired as the object name of
// kind k, unless the store's object already carries, as the controller's in
// managedFields, exactly that configuration (the request would be a no-op).
// A field someone else changed is no longer ours in managedFields, so drift
// still fails the comparison and is repaired. An object the store does not
// control is never applied over: that is an *objectInTheWayError.
func applyUnlessUnchanged[T metav1.Object, AC any](ctx context.Context, c *Controller, k ownedKind[T, AC], kvs *v1alpha1.KeyValueStore, name string, desired AC) (T, error) {
	var zero T
	cur, err := k.get(ctx, kvs.Namespace, name)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return zero, fmt.Errorf("get %s %s: %w", k.kind, name, err)
	}
	if exists {
		if !ours(cur, kvs) {
			observeApply(k.kind, applyRefused)
			err := &objectInTheWayError{kind: k.kind, namespace: kvs.Namespace, name: name, holder: holder(cur)}
			if cur.GetDeletionTimestamp() != nil {
				// An earlier store's, held by a finalizer: it goes on its own.
				err.problem = "is being deleted and is not controlled by this KeyValueStore; the store creates its own once it is gone"
			}
			return zero, err
		}
		if k.createOnly && !metav1.IsControlledBy(cur, kvs) {
			// A createOnly kind (a Job) is never adopted: the store finds
			// its Jobs by controller reference, so one without it would be
			// taken for created on every pass and never seen.
			observeApply(k.kind, applyRefused)
			return zero, &objectInTheWayError{kind: k.kind, namespace: kvs.Namespace, name: name,
				holder: "it has the store's labels but no controller reference, and a " + k.kind + " is never adopted"}
		}
		if k.createOnly {
			observeApply(k.kind, applyUnchanged)
			return cur, nil
		}
		if k.carries(cur, desired) {
			observeApply(k.kind, applyUnchanged)
			return cur, nil
		}
	}
	applied, err := k.apply(ctx, kvs.Namespace, desired)
	if err != nil {
		return zero, fmt.Errorf("apply %s %s: %w", k.kind, name, err)
	}
	if exists {
		observeApply(k.kind, applyUpdated)
		c.recorder.Eventf(kvs, corev1.EventTypeNormal, "Updated", "Updated %s %s to the desired state of generation %d", k.kind, name, kvs.Generation)
	} else {
		observeApply(k.kind, applyCreated)
		c.recorder.Eventf(kvs, corev1.EventTypeNormal, "Created", "Created %s %s", k.kind, name)
	}
	return applied, nil
}

// ours says the store controls obj: its controller ownerReference is the
// store, or it has none and carries the store's labels (an object whose
// ownerReference was stripped is still found by name and labels, the way a
// ReplicaSet adopts orphans its selector matches). An object controlled by
// anything else, including an earlier store of the same name, is not ours.
func ours(obj metav1.Object, kvs *v1alpha1.KeyValueStore) bool {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return ref.UID == kvs.UID
	}
	l := obj.GetLabels()
	return l[LabelManagedBy] == ManagedBy && l[LabelInstance] == kvs.Name
}

// holder describes who controls obj, for the message of a refused apply.
func holder(obj metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return fmt.Sprintf("controlled by %s %s, uid %s", ref.Kind, ref.Name, ref.UID)
	}
	return "it has no controller and not the store's labels " + LabelManagedBy + "=" + ManagedBy + ", " + LabelInstance + "=<store>"
}
