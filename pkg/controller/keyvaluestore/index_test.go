package keyvaluestore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// The index answers exactly what the label selector it replaces listed.
func TestComponentObjectsMatchTheSelector(t *testing.T) {
	kvs := newStore()
	other := newStore(func(k *v1alpha1.KeyValueStore) { k.Name = "s-data" })
	pod := func(ns, name string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{componentIndex: componentKeys})
	for _, p := range []*corev1.Pod{
		pod("ns", "s-0", labelsFor(kvs, ComponentData)),
		pod("ns", "s-1", labelsFor(kvs, ComponentData)),
		pod("ns", "s-proxy-x", labelsFor(kvs, ComponentProxy)),
		pod("ns", "s-data-0", labelsFor(other, ComponentData)),
		pod("other", "s-0", labelsFor(kvs, ComponentData)),
		pod("ns", "bare", nil),
		pod("ns", "instance-only", map[string]string{LabelInstance: kvs.Name}),
	} {
		require.NoError(t, idx.Add(p))
	}
	names := func(pods []*corev1.Pod) []string {
		out := []string{}
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	for _, component := range []string{ComponentData, ComponentProxy, ComponentBootstrap} {
		got, err := componentObjects[*corev1.Pod](idx, kvs, component)
		require.NoError(t, err)
		var want []*corev1.Pod
		sel := labels.SelectorFromSet(selectorLabels(kvs, component))
		for _, o := range idx.List() {
			if p := o.(*corev1.Pod); p.Namespace == kvs.Namespace && sel.Matches(labels.Set(p.Labels)) {
				want = append(want, p)
			}
		}
		assert.ElementsMatch(t, names(want), names(got), component)
	}
}
