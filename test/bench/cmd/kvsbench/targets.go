package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	kvsclient "github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/typed/kvstore/v1alpha1"
)

// target is one way of storing a KeyValueStore: the CRD, kvstore-apiserver
// through the aggregator or directly, or raw etcd. Objects are addressed by
// name; a target remembers the last version of each object it wrote or read,
// so updates carry a resourceVersion (as they must for custom resources).
type target interface {
	// ID is the short column name, e.g. "B proto".
	ID() string
	// Create writes a new object in the batch set and returns its version.
	Create(ctx context.Context, name, set string) (string, error)
	Get(ctx context.Context, name string) error
	// Update changes an annotation only (no spec change, so no generation
	// bump and no controller status write) and returns the new version.
	Update(ctx context.Context, name string) (string, error)
	Delete(ctx context.Context, name string) error
	// Watch streams modifications after version from to fn until ctx ends.
	// It returns once the watch is open.
	Watch(ctx context.Context, from string, fn func(version string, at time.Time)) error
	// Conflicts counts updates retried after a 409 (a concurrent writer).
	Conflicts() int64
}

// ---- kvstore-apiserver through the generated clientset -------------------

type kvsTarget struct {
	id        string
	ns        string
	client    kvsclient.KeyValueStoreInterface
	mu        sync.Mutex
	objs      map[string]*v1alpha1.KeyValueStore
	rev       atomic.Int64
	conflicts atomic.Int64
}

func newKVSTarget(id, ns string, client kvsclient.KeyValueStoreInterface) *kvsTarget {
	return &kvsTarget{id: id, ns: ns, client: client, objs: map[string]*v1alpha1.KeyValueStore{}}
}

func (t *kvsTarget) ID() string         { return t.id }
func (t *kvsTarget) Conflicts() int64   { return t.conflicts.Load() }
func (t *kvsTarget) forget(name string) { t.mu.Lock(); delete(t.objs, name); t.mu.Unlock() }

// forgetSet drops what the target remembers of a cleaned-up batch.
func (t *kvsTarget) forgetSet(set string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.objs {
		if strings.HasPrefix(name, set+"-") {
			delete(t.objs, name)
		}
	}
}

func (t *kvsTarget) remember(o *v1alpha1.KeyValueStore) {
	t.mu.Lock()
	t.objs[o.Name] = o
	t.mu.Unlock()
}

func (t *kvsTarget) Create(ctx context.Context, name, set string) (string, error) {
	out, err := t.client.Create(ctx, newKVS(t.ns, name, set), metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	t.remember(out)
	return out.ResourceVersion, nil
}

func (t *kvsTarget) Get(ctx context.Context, name string) error {
	out, err := t.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	t.remember(out)
	return nil
}

func (t *kvsTarget) Update(ctx context.Context, name string) (string, error) {
	t.mu.Lock()
	cur := t.objs[name]
	t.mu.Unlock()
	if cur == nil {
		return "", fmt.Errorf("update %s: never created or read", name)
	}
	for attempt := 0; ; attempt++ {
		o := cur.DeepCopy()
		o.Annotations[annRev] = fmt.Sprintf("%08d", t.rev.Add(1)%100000000)
		out, err := t.client.Update(ctx, o, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 5 {
			t.conflicts.Add(1)
			if cur, err = t.client.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", err
		}
		t.remember(out)
		return out.ResourceVersion, nil
	}
}

func (t *kvsTarget) Delete(ctx context.Context, name string) error {
	err := t.client.Delete(ctx, name, metav1.DeleteOptions{})
	t.forget(name)
	return err
}

func (t *kvsTarget) Watch(ctx context.Context, from string, fn func(string, time.Time)) error {
	w, err := t.client.Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			at := time.Now()
			if o, ok := ev.Object.(*v1alpha1.KeyValueStore); ok && ev.Type == watch.Modified {
				fn(o.ResourceVersion, at)
			}
		}
	}()
	return nil
}

// ---- the CRD through the dynamic client ------------------------------------

type crTarget struct {
	id        string
	ns        string
	client    dynamic.ResourceInterface
	mu        sync.Mutex
	objs      map[string]*unstructured.Unstructured
	rev       atomic.Int64
	conflicts atomic.Int64
}

func newCRTarget(id, ns string, client dynamic.ResourceInterface) *crTarget {
	return &crTarget{id: id, ns: ns, client: client, objs: map[string]*unstructured.Unstructured{}}
}

func (t *crTarget) ID() string       { return t.id }
func (t *crTarget) Conflicts() int64 { return t.conflicts.Load() }

// forgetSet drops what the target remembers of a cleaned-up batch.
func (t *crTarget) forgetSet(set string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.objs {
		if strings.HasPrefix(name, set+"-") {
			delete(t.objs, name)
		}
	}
}

func (t *crTarget) remember(o *unstructured.Unstructured) {
	t.mu.Lock()
	t.objs[o.GetName()] = o
	t.mu.Unlock()
}

func (t *crTarget) Create(ctx context.Context, name, set string) (string, error) {
	out, err := t.client.Create(ctx, newCR(t.ns, name, set), metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	t.remember(out)
	return out.GetResourceVersion(), nil
}

func (t *crTarget) Get(ctx context.Context, name string) error {
	out, err := t.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	t.remember(out)
	return nil
}

func (t *crTarget) Update(ctx context.Context, name string) (string, error) {
	t.mu.Lock()
	cur := t.objs[name]
	t.mu.Unlock()
	if cur == nil {
		return "", fmt.Errorf("update %s: never created or read", name)
	}
	for attempt := 0; ; attempt++ {
		o := cur.DeepCopy()
		ann := o.GetAnnotations()
		ann[annRev] = fmt.Sprintf("%08d", t.rev.Add(1)%100000000)
		o.SetAnnotations(ann)
		out, err := t.client.Update(ctx, o, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 5 {
			t.conflicts.Add(1)
			if cur, err = t.client.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", err
		}
		t.remember(out)
		return out.GetResourceVersion(), nil
	}
}

// UpdateStatus writes status to a custom resource, as an operator would: the
// CRD side of the scale phase emulates the one status write kvstore-apiserver's
// controller makes for every paused store.
func (t *crTarget) UpdateStatus(ctx context.Context, name string, status map[string]interface{}) error {
	t.mu.Lock()
	cur := t.objs[name]
	t.mu.Unlock()
	if cur == nil {
		return fmt.Errorf("update status %s: never created or read", name)
	}
	o := cur.DeepCopy()
	o.Object["status"] = status
	out, err := t.client.UpdateStatus(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	t.remember(out)
	return nil
}

func (t *crTarget) Delete(ctx context.Context, name string) error {
	err := t.client.Delete(ctx, name, metav1.DeleteOptions{})
	t.mu.Lock()
	delete(t.objs, name)
	t.mu.Unlock()
	return err
}

func (t *crTarget) Watch(ctx context.Context, from string, fn func(string, time.Time)) error {
	w, err := t.client.Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			at := time.Now()
			if o, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Modified {
				fn(o.GetResourceVersion(), at)
			}
		}
	}()
	return nil
}

// ---- raw etcd ---------------------------------------------------------------

// etcdTarget puts the bytes kvstore-apiserver stores for one bench store
// (protobuf) under its own prefix of kvstore's etcd. Plain puts: no
// create-if-absent transaction and no resourceVersion precondition, which
// kvstore-apiserver's storage layer does add.
type etcdTarget struct {
	id     string
	cli    *clientv3.Client
	prefix string
	value  []byte
}

func (t *etcdTarget) ID() string       { return t.id }
func (t *etcdTarget) Conflicts() int64 { return 0 }

func (t *etcdTarget) Create(ctx context.Context, name, _ string) (string, error) {
	resp, err := t.cli.Put(ctx, t.prefix+name, string(t.value))
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(resp.Header.Revision, 10), nil
}

func (t *etcdTarget) Get(ctx context.Context, name string) error {
	resp, err := t.cli.Get(ctx, t.prefix+name)
	if err == nil && len(resp.Kvs) != 1 {
		err = fmt.Errorf("etcd get %s: %d keys", t.prefix+name, len(resp.Kvs))
	}
	return err
}

func (t *etcdTarget) Update(ctx context.Context, name string) (string, error) {
	return t.Create(ctx, name, "")
}

func (t *etcdTarget) Delete(ctx context.Context, name string) error {
	_, err := t.cli.Delete(ctx, t.prefix+name)
	return err
}

func (t *etcdTarget) Watch(ctx context.Context, from string, fn func(string, time.Time)) error {
	rev, err := strconv.ParseInt(from, 10, 64)
	if err != nil {
		return err
	}
	wch := t.cli.Watch(clientv3.WithRequireLeader(ctx), t.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithCreatedNotify())
	first, ok := <-wch
	if !ok || first.Err() != nil || !first.Created {
		return fmt.Errorf("etcd watch did not start: %v", first.Err())
	}
	go func() {
		for resp := range wch {
			at := time.Now()
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypePut {
					fn(strconv.FormatInt(ev.Kv.ModRevision, 10), at)
				}
			}
		}
	}()
	return nil
}
