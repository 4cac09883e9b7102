package keyvaluestore

import (
	"context"
	"fmt"

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

// replicasToRun is how many data replicas the StatefulSet may run. A
// scale-up stops before the first new ordinal whose claim was kept from
// another store of the same name (it carries that store's UID): the
// StatefulSet would give the new replica that claim, and with it data of
// another lineage. Taken over are the store's own claims (kept by an
// earlier scale-down), claims made by hand (without the label, as at
// creation), and claims of the earlier store whose data the store was
// recreated on (the label its first claim carries). held names the claim
// that stops it; nil when the spec's replicas can run.
func (c *Controller) replicasToRun(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) (int32, *objectInTheWayError, error) {
	want := ptr.Deref(kvs.Spec.Replicas, 1)
	if sts == nil {
		return want, nil, nil // created: the bootstrap judges the claims it is given (keptClaims)
	}
	running := ptr.Deref(sts.Spec.Replicas, 1)
	if want <= running {
		return want, nil, nil
	}
	lineage, err := c.lineage(ctx, kvs, sts)
	if err != nil {
		return 0, nil, err
	}
	for i := running; i < want; i++ {
		pvc, err := c.liveClaim(ctx, kvs, i)
		if err != nil {
			return 0, nil, err
		}
		if pvc == nil {
			continue
		}
		if uid := pvc.Labels[LabelStoreUID]; uid != "" && !lineage[uid] {
			return i, &objectInTheWayError{kind: "PersistentVolumeClaim", namespace: kvs.Namespace, name: pvc.Name,
				holder: fmt.Sprintf("it holds the data of an earlier store of this name, uid %s", uid),
				advice: fmt.Sprintf("the scale-up stops before Pod %s-%d, which would start on that data: "+
					"delete the claim if its data is not wanted, or set spec.replicas to %d or fewer", kvs.Name, i, i)}, nil
		}
	}
	return want, nil, nil
}

// lineage are the store UIDs whose claims hold the store's data: its own,
// its claim template's (an adopted StatefulSet keeps the UID of the store
// that created it), and that of its first replica's claim (a store
// recreated on an earlier store's kept claims runs on that store's data).
func (c *Controller) lineage(ctx context.Context, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) (map[string]bool, error) {
	uids := map[string]bool{string(kvs.UID): true}
	if uid, ok := claimTemplateUID(sts); ok {
		uids[uid] = true
	}
	first, err := c.liveClaim(ctx, kvs, 0)
	if err != nil {
		return nil, err
	}
	if first != nil && first.Labels[LabelStoreUID] != "" {
		uids[first.Labels[LabelStoreUID]] = true
	}
	return uids, nil
}
