// Package workload drives KeyValueStore requests through the aggregator at a
// steady rate from concurrent clients, with watches open, and records every
// request and event in a history.Recorder for the checks.
//
// Every store it creates has spec.paused: true and one replica: the
// controller reports their status (so it still writes them) but creates no
// StatefulSet or Pods, so the workload loads kvstore-apiserver and its etcd
// rather than kwok and kube-controller-manager. A store's value is the tag
// of spec.image, unique per write.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/faults/history"
)

// imagePrefix is spec.image without its tag; the tag is the value.
const imagePrefix = "registry.example.com/faults/store:"

// Config shapes a workload run.
type Config struct {
	// Rest reaches kube-apiserver (the aggregator) as the admin.
	Rest *rest.Config
	// Namespace holds the run's stores; it must exist.
	Namespace string
	// Clients issue requests concurrently, each one at a time.
	Clients int
	// RatePerClient is each client's requests per second.
	RatePerClient float64
	// Objects is how many live stores the clients share (and contend on).
	Objects int
	// Watchers keep a watch on the namespace open and resume it.
	Watchers int
	// RequestTimeout bounds each request; past it the outcome is Unknown.
	RequestTimeout time.Duration
	// WatchTimeout is the server-side timeout of each watch request, so
	// that watches are resumed regularly, not only after faults.
	WatchTimeout time.Duration
}

// Value returns the value a store holds: its image tag.
func Value(kvs *v1alpha1.KeyValueStore) string {
	return strings.TrimPrefix(kvs.Spec.Image, imagePrefix)
}

// Run is one workload run.
type Run struct {
	cfg    Config
	kvs    versioned.Interface
	watchc versioned.Interface
	rec    history.Recorder

	mu      sync.Mutex
	live    []string        // stores that may exist and are not being deleted
	touched map[string]bool // every store a request named
	nextObj int
}

// New prepares a run; Start starts it.
func New(cfg Config) (*Run, error) {
	rc := rest.CopyConfig(cfg.Rest)
	rc.QPS, rc.Burst = 1000, 1000
	rc.Timeout = cfg.RequestTimeout
	kvs, err := versioned.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kvstore client: %w", err)
	}
	wc := rest.CopyConfig(cfg.Rest)
	wc.QPS, wc.Burst = 1000, 1000
	watchc, err := versioned.NewForConfig(wc)
	if err != nil {
		return nil, fmt.Errorf("kvstore watch client: %w", err)
	}
	return &Run{cfg: cfg, kvs: kvs, watchc: watchc, touched: map[string]bool{}}, nil
}

// Start runs the clients and watchers until ctx ends; the returned wait
// function blocks until all of them have returned.
func (r *Run) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for w := range r.cfg.Watchers {
		wg.Go(func() { r.watch(ctx, 1000+w) })
	}
	for c := range r.cfg.Clients {
		wg.Go(func() { r.client(ctx, c+1) })
	}
	return wg.Wait
}

// History returns what was recorded so far.
func (r *Run) History() history.History { return r.rec.History() }

// Finish reads every store the run touched until each read has a definite
// answer (or ctx ends), as the final state for the checks. Call it after
// the workload stopped and the faults healed.
func (r *Run) Finish(ctx context.Context) error {
	r.mu.Lock()
	names := make([]string, 0, len(r.touched))
	for n := range r.touched {
		names = append(names, n)
	}
	r.mu.Unlock()
	for _, n := range names {
		for {
			op := r.get(ctx, history.FinalClient, n)
			if op.Outcome != history.Unknown {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("final read of %s: %s", n, op.Reason)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// known is what a client last saw of a store.
type known struct {
	obj *v1alpha1.KeyValueStore
}

func (r *Run) client(ctx context.Context, id int) {
	rnd := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	seen := map[string]known{}
	seq := 0
	interval := time.Duration(float64(time.Second) / r.cfg.RatePerClient)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		seq++
		value := fmt.Sprintf("c%d-%d", id, seq)
		name, nlive := r.pick(rnd)
		p := rnd.IntN(100)
		switch {
		case name == "" || (nlive < r.cfg.Objects && p < 20):
			name = r.newName()
			if op := r.create(ctx, id, name, value); op.Outcome == history.OK {
				seen[name] = known{op.obj}
			}
		case p < 55:
			k, ok := seen[name]
			if !ok {
				op := r.get(ctx, id, name)
				if op.Outcome != history.OK || op.obj == nil {
					continue
				}
				k = known{op.obj}
			}
			op := r.update(ctx, id, k.obj, value)
			if op.obj != nil {
				seen[name] = known{op.obj}
			} else {
				delete(seen, name) // stale or unknown: read it again next time
			}
		case p < 70:
			k, ok := seen[name]
			if !ok {
				op := r.get(ctx, id, name)
				if op.Outcome != history.OK || op.obj == nil {
					continue
				}
				k = known{op.obj}
			}
			op := r.updateStatus(ctx, id, k.obj, value)
			if op.obj != nil {
				seen[name] = known{op.obj}
			} else {
				delete(seen, name)
			}
		case p < 95:
			if op := r.get(ctx, id, name); op.obj != nil {
				seen[name] = known{op.obj}
			}
		default:
			r.retire(name)
			r.delete(ctx, id, name)
			delete(seen, name)
		}
	}
}

// pick returns a random live store and how many there are.
func (r *Run) pick(rnd *rand.Rand) (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.live) == 0 {
		return "", 0
	}
	return r.live[rnd.IntN(len(r.live))], len(r.live)
}

// newName reserves the name of a new store: names are never reused, so a
// store that comes back after its delete is always a violation.
func (r *Run) newName() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextObj++
	name := fmt.Sprintf("kv-%04d", r.nextObj)
	r.live = append(r.live, name)
	r.touched[name] = true
	return name
}

// retire takes a store out of the live set before its delete.
func (r *Run) retire(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, n := range r.live {
		if n == name {
			r.live = append(r.live[:i], r.live[i+1:]...)
			return
		}
	}
}

// result is a recorded request plus the object the server returned.
type result struct {
	history.Op
	obj *v1alpha1.KeyValueStore
}

func (r *Run) do(ctx context.Context, op history.Op, call func(ctx context.Context) (*v1alpha1.KeyValueStore, error)) result {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	op.Start = time.Now()
	obj, err := call(ctx)
	op.End = time.Now()
	op.Outcome, op.Reason = classify(err, op.Object)
	if op.Outcome == history.OK && obj != nil {
		op.RV = obj.ResourceVersion
		if op.Kind == history.Get || op.Kind == history.Delete {
			op.Found, op.ReadValue, op.Terminating = true, Value(obj), obj.DeletionTimestamp != nil
		}
	} else {
		obj = nil
	}
	r.rec.Record(op)
	return result{op, obj}
}

func (r *Run) create(ctx context.Context, client int, name, value string) result {
	kvs := &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.cfg.Namespace},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To[int32](1),
			Image:    imagePrefix + value,
			Paused:   true,
		},
	}
	return r.do(ctx, history.Op{Client: client, Kind: history.Create, Object: name, Value: value}, func(ctx context.Context) (*v1alpha1.KeyValueStore, error) {
		return r.kvs.KvstoreV1alpha1().KeyValueStores(r.cfg.Namespace).Create(ctx, kvs, metav1.CreateOptions{})
	})
}

func (r *Run) update(ctx context.Context, client int, old *v1alpha1.KeyValueStore, value string) result {
	next := old.DeepCopy()
	next.Spec.Image = imagePrefix + value
	op := history.Op{Client: client, Kind: history.Update, Object: old.Name, PreconditionRV: old.ResourceVersion, ExpectValue: Value(old), Value: value}
	return r.do(ctx, op, func(ctx context.Context) (*v1alpha1.KeyValueStore, error) {
		return r.kvs.KvstoreV1alpha1().KeyValueStores(r.cfg.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	})
}

// updateStatus sets a condition of the workload's own type, with a message
// unique per write, so that a successful write always changes the object.
// The controller may drop it on its next status write; that is fine: the
// checks only need the write and its resourceVersion precondition.
func (r *Run) updateStatus(ctx context.Context, client int, old *v1alpha1.KeyValueStore, value string) result {
	next := old.DeepCopy()
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{
		Type: "FaultsWorkload", Status: metav1.ConditionTrue, Reason: "Written", Message: value, ObservedGeneration: old.Generation,
	})
	op := history.Op{Client: client, Kind: history.UpdateStatus, Object: old.Name, PreconditionRV: old.ResourceVersion, ExpectValue: Value(old)}
	return r.do(ctx, op, func(ctx context.Context) (*v1alpha1.KeyValueStore, error) {
		return r.kvs.KvstoreV1alpha1().KeyValueStores(r.cfg.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	})
}

func (r *Run) get(ctx context.Context, client int, name string) result {
	res := r.do(ctx, history.Op{Client: client, Kind: history.Get, Object: name}, func(ctx context.Context) (*v1alpha1.KeyValueStore, error) {
		return r.kvs.KvstoreV1alpha1().KeyValueStores(r.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	})
	return res
}

// delete goes through the REST client: the typed Delete drops the object
// the server returns (the store, terminating, with its new resourceVersion).
func (r *Run) delete(ctx context.Context, client int, name string) result {
	return r.do(ctx, history.Op{Client: client, Kind: history.Delete, Object: name}, func(ctx context.Context) (*v1alpha1.KeyValueStore, error) {
		out := &v1alpha1.KeyValueStore{}
		err := r.kvs.KvstoreV1alpha1().RESTClient().Delete().Namespace(r.cfg.Namespace).Resource("keyvaluestores").Name(name).
			Body(&metav1.DeleteOptions{}).Do(ctx).Into(out)
		if err != nil {
			return nil, err
		}
		return out, nil
	})
}

// classify turns a request's error into its outcome. Only a refusal that
// names the store proves that nothing happened; a 404 or 409 without the
// store's name (the aggregator before discovery is back) is Unknown, as are
// timeouts, 5xx, 429 and transport errors other than a refused connection.
func classify(err error, name string) (history.Outcome, string) {
	if err == nil {
		return history.OK, ""
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Nothing listened: the request never left this machine's client.
		return history.Failed, "ConnectionRefused"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		named := s.Details != nil && s.Details.Name == name && s.Details.Kind == "keyvaluestores"
		switch {
		case named && apierrors.IsConflict(err):
			return history.Failed, history.ReasonConflict
		case named && apierrors.IsAlreadyExists(err):
			return history.Failed, history.ReasonAlreadyExists
		case named && apierrors.IsNotFound(err):
			return history.Failed, history.ReasonNotFound
		}
	}
	return history.Unknown, err.Error()
}

// watch keeps one watch on the namespace: it lists, watches from the
// list's resourceVersion, resumes from the last event's resourceVersion
// when a watch ends, and relists after 410 Gone.
func (r *Run) watch(ctx context.Context, id int) {
	client := r.watchc.KvstoreV1alpha1().KeyValueStores(r.cfg.Namespace)
	from, relist := "", false
	for ctx.Err() == nil {
		if from == "" {
			lctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
			list, err := client.List(lctx, metav1.ListOptions{})
			cancel()
			if err != nil {
				sleep(ctx, 200*time.Millisecond)
				continue
			}
			from = list.ResourceVersion
		}
		timeout := int64(r.cfg.WatchTimeout / time.Second)
		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: from, TimeoutSeconds: &timeout})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				from, relist = "", true
			}
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		seg := r.rec.StartSegment(id, from, relist)
		relist = false
		reason := r.drain(ctx, id, seg, w, &from)
		w.Stop()
		r.rec.EndSegment(id, seg, reason)
		if reason == "gone" {
			from, relist = "", true
		}
	}
}

// WatchFrom records one watch from rv (as watcher id) for d and says how
// it went: "410 Gone" or how many events it delivered. The checks then
// verify that what it delivered has no gap.
func (r *Run) WatchFrom(ctx context.Context, id int, rv string, d time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	w, err := r.watchc.KvstoreV1alpha1().KeyValueStores(r.cfg.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return "410 Gone"
		}
		return "error: " + err.Error()
	}
	defer w.Stop()
	seg := r.rec.StartSegment(id, rv, false)
	from := rv
	reason := r.drain(ctx, id, seg, w, &from)
	r.rec.EndSegment(id, seg, reason)
	if reason == "gone" {
		return "410 Gone"
	}
	n := 0
	for _, e := range r.rec.History().Events {
		if e.Watcher == id {
			n++
		}
	}
	return fmt.Sprintf("served, %d events, ending %s", n, reason)
}

// drain records w's events until it ends, advancing *from.
func (r *Run) drain(ctx context.Context, id, seg int, w watch.Interface, from *string) string {
	for {
		select {
		case <-ctx.Done():
			return "stopped"
		case e, ok := <-w.ResultChan():
			if !ok {
				return "closed"
			}
			if e.Type == watch.Error {
				if s, ok := e.Object.(*metav1.Status); ok && (s.Code == 410 || s.Reason == metav1.StatusReasonExpired || s.Reason == metav1.StatusReasonGone) {
					return "gone"
				}
				return fmt.Sprintf("error: %v", e.Object)
			}
			kvs, ok := e.Object.(*v1alpha1.KeyValueStore)
			if !ok {
				continue
			}
			r.rec.Event(history.Event{
				Watcher: id, Segment: seg, Type: string(e.Type), Object: kvs.Name, RV: kvs.ResourceVersion,
				Value: Value(kvs), Terminating: kvs.DeletionTimestamp != nil, Time: time.Now(),
			})
			*from = kvs.ResourceVersion
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
