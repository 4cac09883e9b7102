package main

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// fakeStores is a system whose stores are a fixed LIST followed by the
// events the test sends; only what the tracker calls is implemented.
type fakeStores struct {
	system
	list    []v1alpha1.KeyValueStore
	watcher *watch.FakeWatcher
	lists   int
}

func (f *fakeStores) stores(context.Context) ([]v1alpha1.KeyValueStore, string, error) {
	f.lists++
	return f.list, "7", nil
}

func (f *fakeStores) watchStores(_ context.Context, rv string) (watch.Interface, error) {
	if rv != "7" {
		panic("the watch must start at the LIST's resourceVersion, not " + rv)
	}
	return f.watcher, nil
}

func (f *fakeStores) decode(o k8sruntime.Object) (*v1alpha1.KeyValueStore, error) {
	return o.(*v1alpha1.KeyValueStore), nil
}

// trackedStore is the fixture: a store of generation 1, Ready or not.
func trackedStore(name string, ready bool) *v1alpha1.KeyValueStore {
	k := &v1alpha1.KeyValueStore{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	k.Spec.Replicas = ptr.To[int32](1)
	if ready {
		k.Status.Phase = v1alpha1.PhaseReady
		k.Status.ObservedGeneration = 1
		k.Status.ReadyReplicas = 1
	}
	return k
}

func TestStoreTrackerFollowsEventsAfterOneList(t *testing.T) {
	f := &fakeStores{list: []v1alpha1.KeyValueStore{*trackedStore("a", true), *trackedStore("b", false)}, watcher: watch.NewFake()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := trackStores(ctx, f)
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	eventually("one store Ready after the LIST", func() bool { n, _ := tr.readyCount(); return n == 1 })
	f.watcher.Modify(trackedStore("b", true))
	eventually("both Ready after b's event", func() bool { n, _ := tr.readyCount(); return n == 2 })
	f.watcher.Delete(trackedStore("a", true))
	eventually("a gone", func() bool { n, _ := tr.present(map[string]bool{"a": true, "b": true}); return n == 1 })
	if f.lists != 1 {
		t.Errorf("%d LISTs, want 1: waiting must not poll", f.lists)
	}
}

func TestStoreTrackerCountsEveryNamedStoreUntilListed(t *testing.T) {
	tr := &storeTracker{ready: map[string]bool{}}
	if n, _ := tr.present(map[string]bool{"a": true, "b": true}); n != 2 {
		t.Errorf("present before any LIST = %d, want 2 (nothing known is not gone)", n)
	}
}
