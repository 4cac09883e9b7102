package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// storeTracker follows a system's stores with one LIST and then a watch (a
// new LIST when the watch ends), so that waiting for the stores costs each
// system one event per change. Polling with a LIST of every store each
// second did not cost both sides alike: for the CRD it is kube-apiserver
// encoding and this tool decoding 1000 unstructured JSON objects a second
// (kvsbench used 147 s of CPU against 25 s in the first 1000-store run),
// on the machine both systems share.
type storeTracker struct {
	mu     sync.Mutex
	ready  map[string]bool // name → Ready, for every store present
	listed bool            // ready holds a LIST's state (before: nothing known)
	err    error           // the last LIST or watch error, until a LIST succeeds
}

// trackStores starts following s's stores until ctx ends.
func trackStores(ctx context.Context, s system) *storeTracker {
	t := &storeTracker{ready: map[string]bool{}}
	go t.follow(ctx, s)
	return t
}

func (t *storeTracker) follow(ctx context.Context, s system) {
	for ctx.Err() == nil {
		if err := t.relistAndWatch(ctx, s); err != nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// relistAndWatch replaces the state with a LIST, then applies the watch's
// events until it ends; a watch error event ends it too (the next LIST
// starts afresh).
func (t *storeTracker) relistAndWatch(ctx context.Context, s system) error {
	list, rv, err := s.stores(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	clear(t.ready)
	for i := range list {
		t.ready[list[i].Name] = isStoreReady(&list[i])
	}
	t.listed, t.err = true, nil
	t.mu.Unlock()
	w, err := s.watchStores(ctx, rv)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error: // e.g. the resourceVersion is too old: relist
			return nil
		case watch.Bookmark:
			continue
		}
		k, err := s.decode(ev.Object)
		if err != nil {
			return err
		}
		t.observe(ev.Type, k)
	}
	return nil
}

func (t *storeTracker) observe(typ watch.EventType, k *v1alpha1.KeyValueStore) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if typ == watch.Deleted {
		delete(t.ready, k.Name)
		return
	}
	t.ready[k.Name] = isStoreReady(k)
}

// readyCount is how many stores are Ready; err is the last failure to
// LIST or watch while the state may be stale.
func (t *storeTracker) readyCount() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.ready {
		if r {
			n++
		}
	}
	return n, t.err
}

// present is how many of the named stores still exist (all of them until
// the first LIST has answered).
func (t *storeTracker) present(names map[string]bool) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.listed {
		return len(names), t.err
	}
	n := 0
	for name := range t.ready {
		if names[name] {
			n++
		}
	}
	return n, t.err
}
