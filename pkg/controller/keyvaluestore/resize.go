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
	// (its resizer said so). Lowering spec.storage does not lower the
	// claim's request: see docs/api.md for the way out.
	ReasonResizeInfeasible = "ResizeInfeasible"
	// ReasonClaimOfAnotherStore: a replica runs on a claim of another
	// store's lineage, which is never touched, and it holds less.
	ReasonClaimOfAnotherStore = "ClaimOfAnotherStore"
)

// storageResize is what growing the store's claims found; the zero value
// (nothing to say) leaves no condition.
type storageResize struct {
	asked   bool // a claim asked for less than spec.storage, or was told about before
	reason  string
	message string
	// poll: a claim the cache does not hold (made by hand) has yet to
	// grow; no event of it would bring the store back.
	poll bool
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

// claimsReport sorts what resizeClaims found of each claim, by what the
// condition says first.
type claimsReport struct {
	refused, infeasible, foreign, resizing []string
}

// resizeClaims grows the claims of the store's running replicas to
// spec.storage. The StatefulSet's claim template is immutable and keeps the
// size it was created with (see keepClaimTemplate): a claim made from it
// later (a scale-up), one kept from a scale-down, and those of a store
// grown before its StatefulSet was recreated are grown the same way. A
// claim's request is only ever raised, never lowered: spec.storage is the
// least each claim asks for. Claims are not touched while unbound, being
// deleted, or of another store's lineage (held back by replicasToRun; one
// a replica already runs on is reported).
func (c *Controller) resizeClaims(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) (storageResize, error) {
	if sts == nil {
		return storageResize{}, nil
	}
	want := kvs.Spec.Storage.VolumeSize
	tmpl, hasTemplate := claimTemplateSize(sts)
	replicas := ptr.Deref(sts.Spec.Replicas, 1)
	// Claims made from a template below the spec ask for less, and so may
	// cached ones made from an earlier template.
	belowSpec := hasTemplate && want.Cmp(tmpl) > 0
	lineage := c.lineage(kvs, sts)
	asked := belowSpec || meta.FindStatusCondition(kvs.Status.Conditions, v1alpha1.ConditionStorageResized) != nil ||
		len(c.cachedClaimsToGrow(kvs, lineage, replicas)) > 0
	var report claimsReport
	var readLive bool
	for i := range replicas {
		// A claim the cache lacks (made by hand, or just made) is read from
		// the server when it may have to grow, or its replica runs (so it
		// exists): not for every claim of a store being created.
		pvc, live, err := c.dataClaim(ctx, kvs, i, asked || i < sts.Status.Replicas)
		if err != nil {
			return storageResize{}, err
		}
		readLive = readLive || live
		if pvc == nil {
			if belowSpec {
				report.resizing = append(report.resizing, fmt.Sprintf("claim %s: not created yet", dataClaimName(kvs, i)))
			}
			continue
		}
		short := holdsLessThan(pvc, want)
		asked = asked || short
		if pvc.DeletionTimestamp != nil {
			continue
		}
		if !ofLineage(pvc, lineage) {
			if short {
				report.foreign = append(report.foreign, fmt.Sprintf("claim %s: holds the data of another store (uid %s), not grown", pvc.Name, pvc.Labels[LabelStoreUID]))
			}
			continue // another store's data: never touched
		}
		state, err := c.growClaim(ctx, kvs, pvc, want)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			report.refused = append(report.refused, fmt.Sprintf("claim %s: %v", pvc.Name, err))
		case err != nil:
			return storageResize{}, fmt.Errorf("grow claim %s to %s: %w", pvc.Name, want.String(), err)
		case state.infeasible:
			report.infeasible = append(report.infeasible, state.String())
		case !state.done:
			report.resizing = append(report.resizing, state.String())
		}
	}
	if !asked {
		return storageResize{}, nil
	}
	r := report.summary(want)
	r.poll = readLive && r.reason != ReasonResized
	return r, nil
}

// claimsToGrow are the cached claims of the first n replicas that
// resizeClaims would ask for more: what a paused store holds back.
func (c *Controller) claimsToGrow(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, n int32) []string {
	return c.cachedClaimsToGrow(kvs, c.lineage(kvs, sts), n)
}

// cachedClaimsToGrow is claimsToGrow with the store's lineage given.
func (c *Controller) cachedClaimsToGrow(kvs *v1alpha1.KeyValueStore, lineage map[string]bool, n int32) []string {
	want := kvs.Spec.Storage.VolumeSize
	var names []string
	for i := range n {
		pvc := c.cachedClaim(kvs, i)
		if pvc != nil && pvc.DeletionTimestamp == nil && ofLineage(pvc, lineage) && holdsLessThan(pvc, want) {
			names = append(names, pvc.Name)
		}
	}
	return names
}

// holdsLessThan says pvc neither asks for nor holds want: it has to be
// asked for more. (A claim may hold more than it asks for: one bound to a
// larger volume, or rounded up by its provisioner.)
func holdsLessThan(pvc *corev1.PersistentVolumeClaim, want resource.Quantity) bool {
	requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	return requested.Cmp(want) < 0 && capacity.Cmp(want) < 0
}

// ofLineage says pvc holds the store's data: made by hand (unlabelled) or
// by a StatefulSet of one of lineage's stores.
func ofLineage(pvc *corev1.PersistentVolumeClaim, lineage map[string]bool) bool {
	uid := pvc.Labels[LabelStoreUID]
	return uid == "" || lineage[uid]
}

// summary is the condition's reason and message: the first kind of
// trouble, in the order of the report's fields, or Resized.
func (r claimsReport) summary(want resource.Quantity) storageResize {
	for _, kind := range []struct {
		reason string
		claims []string
	}{
		{ReasonResizeRefused, r.refused},
		{ReasonResizeInfeasible, r.infeasible},
		{ReasonClaimOfAnotherStore, r.foreign},
		{ReasonResizing, r.resizing},
	} {
		if len(kind.claims) > 0 {
			return storageResize{asked: true, reason: kind.reason, message: joinClaims(kind.claims)}
		}
	}
	return storageResize{asked: true, reason: ReasonResized, message: fmt.Sprintf("every data claim holds %s", want.String())}
}

// dataClaim is the claim of ordinal i from the cache, or, if the cache has
// none (a claim made by hand carries none of our labels) and readLive,
// from the server (live says so); nil if there is none.
func (c *Controller) dataClaim(ctx context.Context, kvs *v1alpha1.KeyValueStore, i int32, readLive bool) (pvc *corev1.PersistentVolumeClaim, live bool, err error) {
	if pvc := c.cachedClaim(kvs, i); pvc != nil {
		return pvc, false, nil
	}
	if !readLive {
		return nil, false, nil
	}
	pvc, err = c.liveClaim(ctx, kvs, i)
	return pvc, pvc != nil, err
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
	requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	bound := pvc.Status.Phase == corev1.ClaimBound
	switch {
	case capacity.Cmp(want) >= 0:
		// Holds enough already: a request raised anyway would be refused
		// where the class cannot expand (a small claim bound to a large
		// volume).
		st.done = true
		return st, nil
	case !bound && requested.Cmp(want) >= 0:
		st.done = true // binds with enough
		return st, nil
	case !bound:
		// kube-apiserver lets only a bound claim's request change.
		st.detail = cmp.Or(string(pvc.Status.Phase), string(corev1.ClaimPending)) + ", grown once bound"
		return st, nil
	}
	if requested.Cmp(want) < 0 {
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
	case ReasonResizeRefused, ReasonResizeInfeasible, ReasonClaimOfAnotherStore:
		c.recorder.Event(kvs, corev1.EventTypeWarning, now.Reason, now.Message)
	}
}
