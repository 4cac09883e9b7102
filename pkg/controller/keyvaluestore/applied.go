package keyvaluestore

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// appliedMemo remembers, per owned object, a digest of the last state in
// which it carried exactly the desired configuration as ours, so that the
// next reconcile of an unchanged object need not extract our fields again.
// The extraction (structured-merge-diff converts and validates the whole
// object by reflection) was 13 % of kvstore-apiserver's CPU while 200
// stores rolled out: it ran for every owned object in every reconcile, and
// a StatefulSet's status changes, which trigger those reconciles, do not
// touch what it returns.
//
// The digest covers everything the extraction reads that an apply owns:
//   - our managedFields entry (which fields are ours: a write by anyone
//     else that changes one of our values takes that field from us);
//   - the spec: through metadata.generation for the kinds whose strategy
//     increments it on every spec change (StatefulSets, Deployments,
//     PodDisruptionBudgets; a client cannot set it on update), through the
//     resourceVersion for the others (a Service keeps whatever generation
//     it was created with);
//   - the labels, annotations and ownerReferences themselves, which change
//     no generation (compared by value, so not even a rewritten
//     managedFields entry can hide their drift);
//   - the object's UID, and the desired configuration.
//
// A stale or missing entry costs one extraction, never a skipped repair.
type appliedMemo struct {
	// generationTracksSpec: see above.
	generationTracksSpec bool

	mu   sync.Mutex
	seen map[string]stateDigest // by the informer's key, namespace/name
}

// stateDigest is a SHA-256 of an object's state and a desired configuration.
type stateDigest [sha256.Size]byte

func newAppliedMemo(generationTracksSpec bool) *appliedMemo {
	return &appliedMemo{generationTracksSpec: generationTracksSpec, seen: map[string]stateDigest{}}
}

// digest of obj's state as the extraction sees it and of desired; false
// without a memo, or if either cannot be serialized (the caller then
// extracts).
func (m *appliedMemo) digest(obj metav1.Object, desired any) (stateDigest, bool) {
	if m == nil {
		return stateDigest{}, false
	}
	version := "rv" + obj.GetResourceVersion()
	if m.generationTracksSpec {
		version = "g" + strconv.FormatInt(obj.GetGeneration(), 10)
	}
	b, err := json.Marshal(struct {
		UID             string                  `json:"uid"`
		Version         string                  `json:"version"`
		Fields          *metav1.FieldsV1        `json:"fields"`
		Labels          map[string]string       `json:"labels"`
		Annotations     map[string]string       `json:"annotations"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		Desired         any                     `json:"desired"`
	}{string(obj.GetUID()), version, appliedFields(obj), obj.GetLabels(), obj.GetAnnotations(), obj.GetOwnerReferences(), desired})
	if err != nil {
		return stateDigest{}, false
	}
	return sha256.Sum256(b), true
}

// appliedFields are the fields our applies own, as the extraction finds
// them (the first Apply entry of our manager on the main resource).
func appliedFields(obj metav1.Object) *metav1.FieldsV1 {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return e.FieldsV1
		}
	}
	return nil
}

// holds says obj was last seen carrying desired, in this very state.
func (m *appliedMemo) holds(obj metav1.Object, digest stateDigest) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.seen[cache.MetaObjectToName(obj).String()]
	return ok && d == digest
}

func (m *appliedMemo) remember(obj metav1.Object, digest stateDigest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen[cache.MetaObjectToName(obj).String()] = digest
}

// forget is the informer's delete handler. A reconcile that read an object
// just before its deletion can still remember it afterwards: that entry (a
// digest) stays until the name is deleted again, and never matches a new
// object of the name (another UID).
func (m *appliedMemo) forget(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, key)
}
