package main

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// sampleTarget is the S column: Flunders of sample-apiserver through
// kube-apiserver's aggregator (S′: directly), with the dynamic client
// (JSON: sample-apiserver v0.37.2 has no protobuf for its types).
// Everything but Create is the custom resources' code, over another
// resource.
type sampleTarget struct{ *crTarget }

func newSampleTarget(id, ns string, client dynamic.ResourceInterface) *sampleTarget {
	return &sampleTarget{newCRTarget(id, ns, client)}
}

func (t *sampleTarget) Create(ctx context.Context, name, set string) (string, error) {
	out, err := t.client.Create(ctx, newFlunder(t.ns, name, set), metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	t.remember(out)
	return out.GetResourceVersion(), nil
}

// flunderPadLen brings a Flunder's create request to the JSON size of the
// CRD's (newCR), so that S and A send and store the same amount of JSON.
var flunderPadLen = func() int {
	return max(0, jsonSize(newCR("ns", "name-000000", "set").Object)-jsonSize(baseFlunder("ns", "name-000000", "set").Object))
}()

// baseFlunder is a Flunder with the bench objects' labels and annotations,
// an empty spec (no reference: nothing for its admission plugin to look up)
// and the same finalizer as the custom resources, so that DELETE only marks
// it, as in the A and B columns.
func baseFlunder(namespace, name, set string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": flunderGVR.GroupVersion().String(),
		"kind":       "Flunder",
		"metadata": map[string]interface{}{
			"name":      name,
			"namespace": namespace,
			"labels": map[string]interface{}{
				"app.kubernetes.io/name":    "kvsbench",
				"app.kubernetes.io/part-of": "kvstore-bench",
				"tier":                      "cache",
				labelSet:                    set,
			},
			"annotations": map[string]interface{}{annRev: "00000000", annPad: ""},
			"finalizers":  []interface{}{v1alpha1.TeardownFinalizer},
		},
		"spec": map[string]interface{}{},
	}}
}

// newFlunder is a bench Flunder as large as a bench custom resource.
func newFlunder(namespace, name, set string) *unstructured.Unstructured {
	u := baseFlunder(namespace, name, set)
	ann := u.GetAnnotations()
	ann[annPad] = strings.Repeat("x", flunderPadLen)
	u.SetAnnotations(ann)
	return u
}

// cleanupSample deletes the Flunders of set ("" for all), removes their
// finalizer (nobody else does) and waits until they are gone from etcd.
func (b *bench) cleanupSample(ctx context.Context, set string) error {
	c := b.s.client
	opts := metav1.ListOptions{}
	if set != "" {
		opts.LabelSelector = labelSet + "=" + set
	}
	l, err := c.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list Flunders to clean up: %w", err)
	}
	items := l.Items
	runOps(ctx, len(items), cleanupWorkers, perCall, func(ctx context.Context, i int) error {
		name := items[i].GetName()
		if items[i].GetDeletionTimestamp() == nil {
			if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		_, err := c.Patch(ctx, name, types.MergePatchType, removeFinalizers, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if b.sample.keyPrefix == "" {
		return nil // the probe's own cleanup runs before the prefix is known
	}
	keyPrefix := b.sample.keyPrefix + set
	defer b.touch()
	return b.waitGone(ctx, "Flunders of "+orAll(set), func() (int64, error) { return countKeys(ctx, b.etcdKVS, keyPrefix) }, nil)
}

// peerNote is the report's paragraph on the S column.
func (b *bench) peerNote() string {
	if b.sample == nil {
		return ""
	}
	p := b.sample
	return fmt.Sprintf("\n**S** (the peer): k8s.io/sample-apiserver %s (Flunders of wardle.example.com/v1alpha1) through the same kube-apiserver aggregator, JSON through the dynamic client "+
		"(it has no protobuf for its types), started by the benchmark on 127.0.0.1:%d against kvstore-apiserver's etcd under its own prefix %s, with delegated authentication and authorization like kvstore-apiserver. "+
		"A Flunder is padded to the CRD object's request size (%d B of JSON; %d B as JSON with managedFields, %d B stored as %s) and carries the same finalizer, so DELETE only marks it. "+
		"What S isolates: the aggregation hop plus a generic API server with a trivial strategy (no defaulting or validation to speak of, no status, no controller and so no status write after each create, no field-selector index); "+
		"what it does not: our own registry, validation and controller. B json / S json is therefore kvstore-apiserver's cost beyond an aggregated server's own, like for like; S json / A is what the hop costs a server that does next to nothing. "+
		"**S′** is the same sample-apiserver directly on 127.0.0.1:%d with the admin's certificate (as B′ is for kvstore-apiserver): S′ / E is what a k8s.io/apiserver server with a trivial strategy reaches against raw etcd on this machine, and S json against S′ json is the hop's own cost for it.\n",
		sampleVersion, samplePort, sampleEtcdPrefix, p.requestJSON, p.objectJSON, p.storedBytes, p.storedFormat, samplePort)
}

// sampleVersion is the sample-apiserver hack/tools pins (hack/lib/versions.sh).
const sampleVersion = "v0.37.2"
