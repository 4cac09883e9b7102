package keyvaluestore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Reasons of the StorageResized condition.
const (
	// ReasonResized: every data claim holds spec.storage.
	ReasonResized = "Resized"
	// ReasonResizing: a claim was asked for more and does not hold it yet.
	ReasonResizing = "Resizing"
	// ReasonResizeRefused: kube-apiserver refused to grow a claim (its
	// StorageClass does not allow expansion, a quota); the controller tries
	// again now and then.
	ReasonResizeRefused = "ResizeRefused"
	// ReasonResizeInfeasible: the storage cannot grow a claim to the size
	// (its resizer said so); it is not retried until the size changes.
	ReasonResizeInfeasible = "ResizeInfeasible"
)

// storageResize is what growing the store's claims found; the zero value
// (not asked) leaves no condition.
type storageResize struct {
	asked   bool // spec.storage is above the StatefulSet's claim template
	reason  string
	message string
}

// claimTemplateSize is the storage its claim template gives a new claim of
// sts, and whether it has one.
func claimTemplateSize(sts *appsv1.StatefulSet) (resource.Quantity, bool) {
	i := slices.IndexFunc(sts.Spec.VolumeClaimTemplates, func(t corev1.PersistentVolumeClaim) bool { return t.Name == dataVolumeName })
	if i < 0 {
		return resource.Quantity{}, false
	}
	q, ok := sts.Spec.VolumeClaimTemplates[i].Spec.Resources.Requests[corev1.ResourceStorage]
	return q, ok
}

// resizeClaims grows the claims of the store's running replicas to
// spec.storage. The StatefulSet's claim template is immutable and keeps the
// size the store was created with (see keepClaimTemplate), so growing is
// asked only once the spec is above it, and a claim the StatefulSet makes
// later (a scale-up) is grown the same way. Claims are never shrunk, nor
// touched while unbound, being deleted, or of another store's lineage
// (held back by replicasToRun).
func (c *Controller) resizeClaims(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) (storageResize, error) {
	want := kvs.Spec.Storage.VolumeSize
	if sts == nil {
		return storageResize{}, nil
	}
	if tmpl, ok := claimTemplateSize(sts); !ok || want.Cmp(tmpl) <= 0 {
		return storageResize{}, nil
	}
	lineage := c.lineage(kvs, sts)
	var resizing, refused, infeasible []string
	for i := range ptr.Deref(sts.Spec.Replicas, 1) {
		pvc, err := c.dataClaim(ctx, kvs, i)
		if err != nil {
			return storageResize{}, err
		}
		switch {
		case pvc == nil:
			resizing = append(resizing, fmt.Sprintf("claim %s: not created yet", dataClaimName(kvs, i)))
			continue
		case pvc.DeletionTimestamp != nil:
			continue
		case pvc.Labels[LabelStoreUID] != "" && !lineage[pvc.Labels[LabelStoreUID]]:
			continue // another store's data: never touched
		}
		state, err := c.growClaim(ctx, kvs, pvc, want)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			refused = append(refused, fmt.Sprintf("claim %s: %v", pvc.Name, err))
		case err != nil:
			return storageResize{}, fmt.Errorf("grow claim %s to %s: %w", pvc.Name, want.String(), err)
		case state.infeasible:
			infeasible = append(infeasible, state.String())
		case !state.done:
			resizing = append(resizing, state.String())
		}
	}
	switch {
	case len(refused) > 0:
		return storageResize{asked: true, reason: ReasonResizeRefused, message: joinClaims(refused)}, nil
	case len(infeasible) > 0:
		return storageResize{asked: true, reason: ReasonResizeInfeasible, message: joinClaims(infeasible)}, nil
	case len(resizing) > 0:
		return storageResize{asked: true, reason: ReasonResizing, message: joinClaims(resizing)}, nil
	}
	return storageResize{asked: true, reason: ReasonResized,
		message: fmt.Sprintf("every data claim holds %s", want.String())}, nil
}

// dataClaim is the claim of ordinal i from the cache, or, if the cache
// has none (a claim made by hand carries none of our labels), from the
// server; nil if there is none.
func (c *Controller) dataClaim(ctx context.Context, kvs *v1alpha1.KeyValueStore, i int32) (*corev1.PersistentVolumeClaim, error) {
	obj, exists, err := c.claims.GetByKey(kvs.Namespace + "/" + dataClaimName(kvs, i))
	if err == nil && exists {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			return pvc, nil
		}
	}
	return c.liveClaim(ctx, kvs, i)
}

// claimState is where one claim's growth stands.
type claimState struct {
	name       string
	detail     string
	done       bool
	infeasible bool
}

func (s claimState) String() string { return "claim " + s.name + ": " + s.detail }

// growClaim asks pvc for want if it asks for less, and says how far it is.
// The patch carries the claim's resourceVersion, so a claim changed since
// it was read (replaced, or grown by someone else) is not changed: a lower
// request than the server's would even be accepted while the claim is
// still below it.
func (c *Controller) growClaim(ctx context.Context, kvs *v1alpha1.KeyValueStore, pvc *corev1.PersistentVolumeClaim, want resource.Quantity) (claimState, error) {
	st := claimState{name: pvc.Name}
	if pvc.Status.Phase != corev1.ClaimBound {
		// kube-apiserver lets only a bound claim's request change.
		st.detail = cmp.Or(string(pvc.Status.Phase), string(corev1.ClaimPending)) + ", grown once bound"
		return st, nil
	}
	requested, hasRequest := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !hasRequest || requested.Cmp(want) < 0 {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": pvc.ResourceVersion},
			"spec":     map[string]any{"resources": map[string]any{"requests": map[string]any{string(corev1.ResourceStorage): want.String()}}},
		})
		if err != nil {
			return st, err
		}
		if _, err := c.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return st, err
		}
		c.recorder.Eventf(kvs, corev1.EventTypeNormal, "ResizingClaim", "Asked claim %s for %s (it asked for %s)", pvc.Name, want.String(), requested.String())
		st.detail = "asked for " + want.String()
		return st, nil
	}
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	if capacity.Cmp(want) >= 0 {
		st.done = true
		return st, nil
	}
	st.detail = fmt.Sprintf("holds %s of %s", capacity.String(), want.String())
	if rs, ok := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; ok {
		st.detail += " (" + string(rs) + ")"
		st.infeasible = rs == corev1.PersistentVolumeClaimControllerResizeInfeasible || rs == corev1.PersistentVolumeClaimNodeResizeInfeasible
	}
	for _, cond := range pvc.Status.Conditions {
		if cond.Status == corev1.ConditionTrue && cond.Message != "" {
			st.detail += "; " + string(cond.Type) + ": " + cond.Message
		}
	}
	return st, nil
}

// joinClaims is what the condition says of the claims, bounded.
func joinClaims(parts []string) string {
	return truncate(strings.Join(parts, "; "), maxFailureMessage)
}

// setStorageResized records the resize in st: False (reason says why) while
// a claim is below spec.storage, True once every claim holds it, absent
// when the claims were never asked to grow.
func setStorageResized(st *v1alpha1.KeyValueStoreStatus, r storageResize, generation int64) {
	if !r.asked {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStorageResized)
		return
	}
	status := metav1.ConditionFalse
	if r.reason == ReasonResized {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionStorageResized, Status: status,
		Reason: r.reason, Message: r.message, ObservedGeneration: generation})
}

// recordResizeEvent tells a refused, infeasible or finished growth once,
// when it is first recorded (before is the condition the sync started from).
func (c *Controller) recordResizeEvent(kvs *v1alpha1.KeyValueStore, before *metav1.Condition) {
	now := meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionStorageResized)
	if now == nil || tellsTheSame(before, now) {
		return
	}
	switch now.Reason {
	case ReasonResized:
		c.recorder.Event(kvs, corev1.EventTypeNormal, now.Reason, now.Message)
	case ReasonResizeRefused, ReasonResizeInfeasible:
		c.recorder.Event(kvs, corev1.EventTypeWarning, now.Reason, now.Message)
	}
}
