package keyvaluestore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

// ReasonReplacedStuckPod is the Warning event of a data Pod deleted so that
// a rollout can go on.
const ReasonReplacedStuckPod = "ReplacedStuckPod"

// cannotStartReasons are the waiting reasons of a container whose Pod will
// not start as it is: its image cannot be pulled, or it crashes, or the
// runtime refuses its configuration. Not a Pod still being scheduled, pulling
// or starting.
var cannotStartReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// podCannotStart says a container of p waits for a reason it will not get
// over by itself, or the scheduler found no node for p (a node selector or
// taint of a spec.scheduling since changed).
func podCannotStart(p *corev1.Pod) bool {
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && slices.Contains(cannotStartReasons, w.Reason) {
			return true
		}
	}
	return p.Spec.NodeName == "" && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
	})
}

// replaceStuckPod deletes the data Pod that keeps the StatefulSet's rollout
// from going on: an OrderedReady StatefulSet never replaces a Pod that is
// not running and ready (Kubernetes' "forced rollback", kubernetes#67250),
// so after a bad image is reverted or fixed, the Pod left on the bad
// revision stays broken for ever. Such a Pod does not serve; deleting it
// keeps its claim, and the StatefulSet recreates it on its update revision.
// Only a Pod of the StatefulSet that runs neither its update revision nor
// its current one (the revision the whole set last ran ready) and cannot
// start is deleted, and only when every data Pod not ready is such a Pod:
// Pods left behind by a rollout since reverted or fixed, which alone hold
// it up. The lowest goes first (an OrderedReady StatefulSet recreates a Pod
// only once every lower one is ready, so it comes back at once), and the
// next only once it is back and ready: one that comes back on a bad update
// revision and does not start stops the deletions. A Pod
// on the current revision is left, whatever the rollout: the StatefulSet
// would recreate it on the update revision (a bad image not reverted yet)
// or, below a partition, as it was, again and again; so is every Pod while
// one not ready runs the update or current revision, or may still start.
// Only if the Pod is still as the cache has it (a Pod that has just become
// ready is left); one changed meanwhile is tried again.
func (c *Controller) replaceStuckPod(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) error {
	if sts == nil || sts.DeletionTimestamp != nil || sts.Status.ObservedGeneration < sts.Generation || sts.Status.UpdateRevision == "" {
		return nil // the update revision may not be the spec's yet
	}
	pods, err := c.componentPods(kvs, ComponentData)
	if err != nil {
		return err
	}
	if beingCreated(sts, pods) {
		return nil
	}
	// A store never Ready has no good revision to keep: its current one is
	// the one it was created at, which never ran (an image or a node
	// selector mistyped at creation, then fixed). Below a partition set by
	// hand a Pod would come back on it, so not then.
	keepCurrent := kvs.Status.CurrentImage != "" || sts.Status.CurrentRevision == sts.Status.UpdateRevision || partitioned(sts)
	// A replica whose Pod is missing is down too. While the update
	// revision is not the one the set last ran ready, a Pod deleted now
	// comes back on a revision that may never run: a second replica down.
	if keepCurrent && sts.Status.CurrentRevision != sts.Status.UpdateRevision && c.replicaMissing(kvs, sts, pods) {
		return nil
	}
	var stuck *corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return nil // one at a time
		}
		if podReady(p) {
			continue
		}
		revision := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		if !metav1.IsControlledBy(p, sts) || revision == sts.Status.UpdateRevision || (keepCurrent && revision == sts.Status.CurrentRevision) ||
			!podCannotStart(p) {
			// A Pod not ready that was not left behind by the rollout: it
			// may wait on it, and a Pod deleted now would come back on the
			// update revision (maybe a bad one, its Pod not started yet).
			return nil
		}
		if keepCurrent && stuck != nil && revision != stuck.Labels[appsv1.ControllerRevisionHashLabelKey] &&
			sts.Status.CurrentRevision != sts.Status.UpdateRevision {
			// Left on two revisions, one of which may be good (a replica
			// that ran ready on it and crashed once): deleted, it would
			// come back on an update revision that may never run, a second
			// replica down. After a revert it comes back on one that ran.
			// (A store never Ready has no replica to keep.)
			return nil
		}
		if stuck == nil || ordinal(p) < ordinal(stuck) {
			stuck = p
		}
	}
	if stuck == nil {
		return nil
	}
	err = c.kube.CoreV1().Pods(stuck.Namespace).Delete(ctx, stuck.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &stuck.UID, ResourceVersion: &stuck.ResourceVersion},
	})
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("Stuck data Pod gone before its deletion", "pod", klog.KObj(stuck))
		return nil
	case apierrors.IsConflict(err):
		// Changed since it was read: look again after the error backoff.
		// The change may wake nobody (ErrImagePull to ImagePullBackOff).
		return fmt.Errorf("data Pod %s changed before its deletion; looking again: %w", stuck.Name, err)
	case err != nil:
		return fmt.Errorf("delete data Pod %s: %w", stuck.Name, err)
	}
	c.recorder.Eventf(kvs, corev1.EventTypeWarning, ReasonReplacedStuckPod,
		"Deleted data Pod %s: it runs revision %s and cannot start, and the StatefulSet does not replace a Pod that is not ready; it is recreated on revision %s, its claim kept",
		stuck.Name, stuck.Labels[appsv1.ControllerRevisionHashLabelKey], sts.Status.UpdateRevision)
	return nil
}

// partitioned says sts's rolling update holds Pods below an ordinal back
// (a partition set by hand).
func partitioned(sts *appsv1.StatefulSet) bool {
	ru := sts.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ptr.Deref(ru.Partition, 0) > 0
}

// replicaMissing says a replica that holds data has no Pod: an ordinal
// with a claim and no Pod of the StatefulSet (deleted to be updated, not
// made again yet), below both its replicas and those that hold data
// (readyReplicasAnnotation; without it, its replicas). An ordinal with no
// claim is one a scale-up adds, which never ran; so is one at or above
// those holding data, whose claim a scale-down kept.
func (c *Controller) replicaMissing(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, pods []*corev1.Pod) bool {
	have := sets.New[int]()
	for _, p := range pods {
		if metav1.IsControlledBy(p, sts) {
			have.Insert(ordinal(p))
		}
	}
	held := ptr.Deref(sts.Spec.Replicas, 1)
	if n, ok := readyReplicas(sts); ok {
		held = min(held, n)
	}
	for i := range held {
		if !have.Has(int(i)) && c.cachedClaim(kvs, i) != nil {
			return true
		}
	}
	return false
}

// rememberReadyReplicas keeps on the data StatefulSet how many of its
// replicas hold data (readyReplicasAnnotation), with a merge patch: the
// annotation is not part of what the controller applies, so an apply
// leaves it. The count is
//   - the replicas, once the set runs them all ready on one revision, or
//     once it has been scaled to them (it has seen its spec and runs no
//     Pod above them): those above were scaled away, their claims kept;
//   - raised at once to every replica that has run ready (a scale-up's
//     replica holds data once it has run, whatever the rollout);
//   - never lowered otherwise.
//
// Written only where it tells something: a claim kept by a scale-down
// above the replicas, or a count already recorded; a store never scaled
// down costs no write. The patch carries the resourceVersion read: a pass
// from a stale cache does not write an older count over a newer one.
func (c *Controller) rememberReadyReplicas(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	if sts.DeletionTimestamp != nil {
		return sts, nil
	}
	pods, err := c.componentPods(kvs, ComponentData)
	if err != nil {
		return sts, err
	}
	client := c.kube.AppsV1().StatefulSets(sts.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		want, write := c.replicasHoldingData(kvs, sts, pods)
		if !write {
			return nil
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": sts.UID, "resourceVersion": sts.ResourceVersion,
			"annotations": map[string]string{readyReplicasAnnotation: strconv.Itoa(int(want))}}})
		if err != nil {
			return err
		}
		updated, err := client.Patch(ctx, sts.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			// The cache was behind (the StatefulSet controller writes its
			// status often): judge again on the server's copy.
			if live, getErr := client.Get(ctx, sts.Name, metav1.GetOptions{}); getErr == nil && live.UID == sts.UID {
				sts = live
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("record the replicas holding data of StatefulSet %s: %w", sts.Name, err)
		}
		sts = updated
		return nil
	})
	return sts, err
}

// replicasHoldingData is the count rememberReadyReplicas keeps for sts,
// and whether it is to be written.
func (c *Controller) replicasHoldingData(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, pods []*corev1.Pod) (int32, bool) {
	n := ptr.Deref(sts.Spec.Replicas, 1)
	recorded, ok := readyReplicas(sts)
	want := int32(-1) // none
	if ok {
		want = recorded
	}
	switch {
	case statefulSetReady(sts, "", n):
		want = n
	case sts.Status.ObservedGeneration >= sts.Generation && !slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		return metav1.IsControlledBy(p, sts) && int32(ordinal(p)) >= n
	}):
		// Scaled to n: a count above it is lowered to it (never raised: a
		// replica a scale-up adds holds data only once it has run).
		want = n
		if ok {
			want = min(recorded, n)
		}
	}
	if !ok && (want < 0 || !c.claimKeptAbove(kvs, n)) {
		return 0, false // nothing to tell: no scale-down kept a claim
	}
	for _, p := range pods {
		if metav1.IsControlledBy(p, sts) && podReady(p) {
			want = max(want, min(int32(ordinal(p))+1, n))
		}
	}
	return want, !ok || want != recorded
}

// readyReplicas is the count readyReplicasAnnotation records, if any.
func readyReplicas(sts *appsv1.StatefulSet) (int32, bool) {
	n, err := strconv.ParseInt(sts.Annotations[readyReplicasAnnotation], 10, 32)
	return int32(n), err == nil && n >= 0
}

// claimKeptAbove says the store has a data claim at ordinal n or above (a
// scale-down keeps them; replicas are at most validation.MaxReplicas).
func (c *Controller) claimKeptAbove(kvs *v1alpha1.KeyValueStore, n int32) bool {
	for i := n; i < validation.MaxReplicas; i++ {
		if c.cachedClaim(kvs, i) != nil {
			return true
		}
	}
	return false
}

// beingCreated says the StatefulSet is about to create one of its Pods (a
// replaced one coming back): a Pod missing whose lower Pods are all ready.
// An OrderedReady StatefulSet creates no Pod above one that is not ready,
// so a Pod missing there is not waited for.
func beingCreated(sts *appsv1.StatefulSet, pods []*corev1.Pod) bool {
	byOrdinal := make(map[int]*corev1.Pod, len(pods))
	for _, p := range pods {
		if metav1.IsControlledBy(p, sts) {
			byOrdinal[ordinal(p)] = p
		}
	}
	for i := range int(ptr.Deref(sts.Spec.Replicas, 1)) {
		p, ok := byOrdinal[i]
		if !ok {
			return true
		}
		if !podReady(p) {
			return false
		}
	}
	return false
}
