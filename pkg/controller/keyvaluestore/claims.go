package keyvaluestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// dataClaimName is the claim the StatefulSet gives the data replica with
// ordinal i (and takes over if it exists).
func dataClaimName(kvs *v1alpha1.KeyValueStore, i int32) string {
	return fmt.Sprintf("%s-%s-%d", dataVolumeName, kvs.Name, i)
}

// liveClaim reads a data claim from the server (nil if there is none): a
// claim made by hand may carry none of our labels, so the cache, which
// holds only labelled ones, cannot say it is absent.
func (c *Controller) liveClaim(ctx context.Context, kvs *v1alpha1.KeyValueStore, i int32) (*corev1.PersistentVolumeClaim, error) {
	name := dataClaimName(kvs, i)
	pvc, err := c.kube.CoreV1().PersistentVolumeClaims(kvs.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read claim %s: %w", name, err)
	}
	return pvc, nil
}

// keptClaims are the data claims of the store's Pods that its StatefulSet
// did not create (see claimOfStore), read from the server.
func (c *Controller) keptClaims(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) ([]string, error) {
	var kept []string
	for i := range ptr.Deref(kvs.Spec.Replicas, 1) {
		pvc, err := c.liveClaim(ctx, kvs, i)
		if err != nil {
			return nil, err
		}
		if pvc != nil && !claimOfStore(pvc, kvs, sts) {
			kept = append(kept, pvc.Name)
		}
	}
	return kept, nil
}

// claimOfStore says the store's StatefulSet made pvc: it carries the
// store's UID (LabelStoreUID, from the claim template; a claim kept from an
// earlier store of the same name carries that one's). Beside a labelled
// template, a claim without the label was made by hand. Beside a
// StatefulSet from before the label, it is judged by its age: not older
// than the StatefulSet, on kube-apiserver's clock like its own (an earlier
// store's StatefulSet had to be gone before this one was created), or,
// without a StatefulSet (deleted by hand in a teardown), than the store, on
// this server's clock.
func claimOfStore(pvc *corev1.PersistentVolumeClaim, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) bool {
	if uid := pvc.Labels[LabelStoreUID]; uid != "" {
		return uid == string(kvs.UID)
	}
	since := kvs.CreationTimestamp
	if sts != nil {
		if _, labelled := claimTemplateUID(sts); labelled {
			return false // its StatefulSet labels every claim it makes: made by hand
		}
		since = sts.CreationTimestamp
	}
	return !pvc.CreationTimestamp.Before(&since)
}

// replicasToRun is how many data replicas the StatefulSet may run. A new
// replica stops before the first ordinal whose claim was kept from another
// store of the same name (it carries that store's UID; see lineage): the
// StatefulSet would give the replica that claim, and with it data of
// another lineage. Taken over are the store's own claims (kept by an
// earlier scale-down), claims without the label (made by hand, as at
// creation), and those of the store's lineage. A replica that already runs
// (by the StatefulSet, or by the data Pods in the cache) is never taken
// away by this check. held names the claim that stops it;
// nil when the spec's replicas can run.
//
// The claims come from the cache: a claim kept from another store carries
// our labels (its StatefulSet's template gave them), so the cache holds it
// unless its labels were removed, and then it counts as made by hand.
func (c *Controller) replicasToRun(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) (int32, *objectInTheWayError, error) {
	want := ptr.Deref(kvs.Spec.Replicas, 1)
	if _, _, found := c.foreignClaim(kvs, sts, 0, want); !found {
		return want, nil, nil // no request at all in the common case
	}
	if sts == nil {
		// Not in the cache (created just now, or missed): what runs is read
		// live, so that the check never scales a running store down.
		live, err := c.statefulSets.live(ctx, kvs.Namespace, kvs.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, nil, fmt.Errorf("get StatefulSet %s: %w", kvs.Name, err)
		case !ours(live, kvs):
			return want, nil, nil // in the way: the apply refuses it anyway
		default:
			sts = live
		}
	}
	running := c.runningPods(kvs)
	if sts != nil {
		running = max(running, ptr.Deref(sts.Spec.Replicas, 1))
	}
	i, uid, found := c.foreignClaim(kvs, sts, running, want)
	if !found {
		return want, nil, nil
	}
	return i, &objectInTheWayError{kind: "PersistentVolumeClaim", namespace: kvs.Namespace, name: dataClaimName(kvs, i), heldScaleUp: true,
		problem: fmt.Sprintf("holds the data of an earlier store of this name (uid %s); the scale-up stops before Pod %s-%d, which would start on that data: "+
			"delete the claim if its data is not wanted, or set spec.replicas to %d or fewer", uid, kvs.Name, i, i)}, nil
}

// foreignClaim is the first ordinal in [from, to) whose cached claim
// carries a store UID outside the store's lineage, and that UID.
func (c *Controller) foreignClaim(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, from, to int32) (int32, string, bool) {
	lineage := c.lineage(kvs, sts)
	for i := from; i < to; i++ {
		if uid := c.cachedClaimUID(kvs, i); uid != "" && !lineage[uid] {
			return i, uid, true
		}
	}
	return 0, "", false
}

// lineage are the store UIDs whose claims hold the store's data: its own,
// its claim template's (a StatefulSet adopted by its labels keeps the UID
// of the store that created it), and that of its first replica's claim (a
// store recreated on an earlier store's kept claims runs on that store's
// data). A lineage longer than that (recreated twice, scaled up between)
// is not followed: those claims are held back, the side of the data.
func (c *Controller) lineage(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) map[string]bool {
	uids := map[string]bool{string(kvs.UID): true}
	if sts != nil {
		if uid, ok := claimTemplateUID(sts); ok {
			uids[uid] = true
		}
	}
	if uid := c.cachedClaimUID(kvs, 0); uid != "" {
		uids[uid] = true
	}
	return uids
}

// cachedClaimUID is the store UID label of the cached claim of ordinal i
// ("" if there is none, it has no label, or it is being deleted: the
// StatefulSet starts no Pod on a claim being deleted).
func (c *Controller) cachedClaimUID(kvs *v1alpha1.KeyValueStore, i int32) string {
	pvc := c.cachedClaim(kvs, i)
	if pvc == nil || pvc.DeletionTimestamp != nil {
		return ""
	}
	return pvc.Labels[LabelStoreUID]
}

// cachedClaim is the cached data claim of ordinal i, nil if there is none.
func (c *Controller) cachedClaim(kvs *v1alpha1.KeyValueStore, i int32) *corev1.PersistentVolumeClaim {
	obj, exists, err := c.claims.GetByKey(kvs.Namespace + "/" + dataClaimName(kvs, i))
	if err != nil || !exists {
		return nil
	}
	pvc, _ := obj.(*corev1.PersistentVolumeClaim)
	return pvc
}

// runningPods is one more than the highest ordinal among the store's cached
// data Pods: the replicas that run even without a StatefulSet (deleted
// with --cascade=orphan, its Pods are adopted by the next one, which
// deletes those above its replicas).
func (c *Controller) runningPods(kvs *v1alpha1.KeyValueStore) int32 {
	pods, err := componentObjects[*corev1.Pod](c.pods, kvs, ComponentData)
	if err != nil {
		return 0
	}
	n := int32(0)
	for _, p := range pods {
		suffix, ok := strings.CutPrefix(p.Name, kvs.Name+"-")
		if i, err := strconv.ParseInt(suffix, 10, 32); ok && err == nil {
			n = max(n, int32(i)+1)
		}
	}
	return n
}
