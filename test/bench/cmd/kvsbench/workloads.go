package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	kvsscheme "github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/scheme"
)

const (
	perCall        = 60 * time.Second
	cleanupWorkers = 16
	// watchers wait this long for each event before counting it missing.
	eventTimeout = 10 * time.Second
)

func objName(set string, i int) string { return fmt.Sprintf("%s-%06d", set, i) }

// maxVersion keeps the highest numeric resourceVersion seen.
type maxVersion struct{ v atomic.Int64 }

func (m *maxVersion) see(s string) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return
	}
	for {
		cur := m.v.Load()
		if n <= cur || m.v.CompareAndSwap(cur, n) {
			return
		}
	}
}

func (m *maxVersion) String() string { return strconv.FormatInt(m.v.Load(), 10) }

func isKVS(t target) bool { _, ok := t.(*kvsTarget); return ok }

// ---- create / get / update / delete -----------------------------------------

// opsPhase runs create, get, update and delete of n objects at concurrency
// conc against every target, one target after the other.
func (b *bench) opsPhase(ctx context.Context, rep, conc int, idle map[string]float64) error {
	n := b.cfg.opsC1
	if conc > 1 {
		n = b.cfg.opsC16
	}
	for _, t := range b.order(fmt.Sprintf("ops c%d", conc), rep, b.targets) {
		set := fmt.Sprintf("o%dr%d%s", conc, rep, strings.ToLower(colSlug(t.ID())))
		if err := b.beginColumn(ctx, t); err != nil {
			return err
		}
		b.logf("rep %d: %s: create/get/update/delete of %d objects at concurrency %d", rep, t.ID(), n, conc)
		suffix := fmt.Sprintf(" c%d", conc)
		// One untimed request first, so no timed one pays for a connection.
		_ = t.Get(ctx, "warm-up")

		var created maxVersion
		before, err := b.procs.cpu()
		if err != nil {
			return err
		}
		r := runOps(ctx, n, conc, perCall, func(ctx context.Context, i int) error {
			v, err := t.Create(ctx, objName(set, i), set)
			created.see(v)
			return err
		})
		b.recordOps("create"+suffix, t.ID(), r)
		if needsSettle(t) {
			if err := b.settleColumn(ctx, t, set, created.String()); err != nil {
				return err
			}
		}
		after, err := b.procs.cpu()
		if err != nil {
			return err
		}
		if conc > 1 {
			if d, err := diffCPU(before, after, idle); err != nil {
				b.problem("%s create c%d CPU: %v", t.ID(), conc, err)
			} else {
				b.recordCPU("c16 creates", t.ID(), d, len(r.lat))
			}
		}

		b.recordOps("get"+suffix, t.ID(), runOps(ctx, n, conc, perCall, func(ctx context.Context, i int) error {
			return t.Get(ctx, objName(set, i))
		}))
		b.recordOps("update"+suffix, t.ID(), runOps(ctx, n, conc, perCall, func(ctx context.Context, i int) error {
			_, err := t.Update(ctx, objName(set, i))
			return err
		}))
		b.recordOps("delete"+suffix, t.ID(), runOps(ctx, n, conc, perCall, func(ctx context.Context, i int) error {
			return t.Delete(ctx, objName(set, i))
		}))
		if err := b.cleanup(ctx, t, set); err != nil {
			return err
		}
		if err := b.endColumn(ctx, t); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (b *bench) recordOps(op, col string, r opRun) {
	if r.errs > 0 {
		b.problem("%s %s: %d of %d calls failed, first: %v", col, op, r.errs, r.errs+len(r.lat), r.firstErr)
	}
	if len(r.lat) == 0 {
		return
	}
	b.figs.add(op+" p50", col, "ms", percentile(r.lat, 50))
	b.figs.add(op+" p99", col, "ms", percentile(r.lat, 99))
	b.figs.add(op+" rate", col, "ops/s", r.opsPerSec())
}

// recordCPU stores CPU seconds per 1000 writes of one window, per process and
// as the total of the servers the column's path uses.
func (b *bench) recordCPU(window, col string, d cpuDelta, writes int) {
	if writes == 0 {
		return
	}
	per := 1000 / float64(writes)
	for p, net := range d.Net {
		b.figs.add("cpu "+window+" "+p, col, "CPU s/1000", net*per)
	}
	total := 0.0
	for _, p := range serverProcs(col) {
		total += d.Net[p]
	}
	b.figs.add("cpu "+window+" total", col, "CPU s/1000", total*per)
	b.figs.add("cpu "+window+" window", col, "s", d.Window)
}

// serverProcs are the processes a column's requests go through: the CRD
// needs etcd and kube-apiserver; kvstore-apiserver adds its own etcd and
// itself (kube-apiserver and its etcd are counted for B′ as well, as the
// issue's target does); raw etcd is one process.
func serverProcs(col string) []string {
	switch {
	case col == colA:
		return []string{pEtcdKube, pKubeAPI}
	case col == colAop:
		return []string{pEtcdKube, pKubeAPI, pOperator}
	case col == colE:
		return []string{pEtcdKVS}
	case col == colS || col == colDS:
		// sample-apiserver stores in kvstore's etcd, under its own prefix;
		// directly (S′) as through the hop, like B′.
		return []string{pEtcdKube, pEtcdKVS, pKubeAPI, pSample}
	default:
		return []string{pEtcdKube, pEtcdKVS, pKubeAPI, pKVSAPI}
	}
}

// settle waits until kvstore-apiserver's controller has written the status of
// every store of set (a paused store gets one status write, phase Pending),
// reading the watch cache at least as new as the last create.
func (b *bench) settle(ctx context.Context, set, minVersion string) error {
	if b.kvsControllerOff {
		return nil
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		l, err := b.kvsDirect.List(ctx, metav1.ListOptions{
			LabelSelector:        labelSet + "=" + set,
			FieldSelector:        "status.phase=",
			ResourceVersion:      minVersion,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		})
		if err == nil && len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the controller has not written status of set %s after 10 minutes (last: %v)", set, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ---- cleanup ------------------------------------------------------------------

// cleanup deletes every object of set from t's store and waits until they
// are gone. Stores are deleted and their finalizer left to the controller
// (a paused store's teardown is two status/metadata writes), with a fallback
// that removes it when the controller makes no progress; custom resources
// have nobody to release the finalizer, so the benchmark removes it.
func (b *bench) cleanup(ctx context.Context, t target, set string) error {
	switch t := t.(type) {
	case *kvsTarget:
		t.forgetSet(set)
		return b.cleanupKVS(ctx, set)
	case *crTarget:
		t.forgetSet(set)
		return b.cleanupCR(ctx, set)
	case *sampleTarget:
		t.forgetSet(set)
		return b.cleanupSample(ctx, set)
	case *opTarget:
		t.forgetSet(set)
		return b.cleanupCR(ctx, set)
	case *etcdTarget:
		_, err := b.etcdKVS.Delete(ctx, b.e.prefix+set+"-", clientv3.WithPrefix())
		return err
	}
	return nil
}

var removeFinalizers = []byte(`{"metadata":{"finalizers":null}}`)

func (b *bench) cleanupKVS(ctx context.Context, set string) error {
	opts := metav1.ListOptions{}
	if set != "" {
		opts.LabelSelector = labelSet + "=" + set
	}
	l, err := b.kvsDirect.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list stores to clean up: %w", err)
	}
	var live []string
	for _, o := range l.Items {
		if o.DeletionTimestamp == nil {
			live = append(live, o.Name)
		}
	}
	runOps(ctx, len(live), cleanupWorkers, perCall, func(ctx context.Context, i int) error {
		err := b.kvsDirect.Delete(ctx, live[i], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if b.kvsControllerOff {
		// Nothing will release the finalizer: remove it at once, as for
		// custom resources, rather than after the fallback's 30 s.
		b.removeKVSFinalizers(ctx, l.Items)
	}
	keyPrefix := b.kvsKeyPrefix + set
	defer b.touch()
	return b.waitGone(ctx, "stores of "+orAll(set), func() (int64, error) { return countKeys(ctx, b.etcdKVS, keyPrefix) },
		func() {
			l, err := b.kvsDirect.List(ctx, opts)
			if err != nil {
				return
			}
			b.problem("the controller released no finalizer of %s for 30s; removed %d finalizers by patch", orAll(set), len(l.Items))
			b.removeKVSFinalizers(ctx, l.Items)
		})
}

// removeKVSFinalizers patches the finalizers off stores (gone ones are fine).
func (b *bench) removeKVSFinalizers(ctx context.Context, items []v1alpha1.KeyValueStore) {
	runOps(ctx, len(items), cleanupWorkers, perCall, func(ctx context.Context, i int) error {
		_, err := b.kvsDirect.Patch(ctx, items[i].Name, types.MergePatchType, removeFinalizers, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func (b *bench) cleanupCR(ctx context.Context, set string) error {
	opts := metav1.ListOptions{}
	if set != "" {
		opts.LabelSelector = labelSet + "=" + set
	}
	l, err := b.crClient.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list custom resources to clean up: %w", err)
	}
	items := l.Items
	runOps(ctx, len(items), cleanupWorkers, perCall, func(ctx context.Context, i int) error {
		name := items[i].GetName()
		if items[i].GetDeletionTimestamp() == nil {
			if err := b.crClient.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		_, err := b.crClient.Patch(ctx, name, types.MergePatchType, removeFinalizers, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	keyPrefix := b.crKeyPrefix + set
	defer b.touch()
	return b.waitGone(ctx, "custom resources of "+orAll(set), func() (int64, error) { return countKeys(ctx, b.etcdKube, keyPrefix) }, nil)
}

func orAll(set string) string {
	if set == "" {
		return "every set"
	}
	return "set " + set
}

// waitGone polls count until it is zero; if it stops falling for 30s it calls
// unstick once.
func (b *bench) waitGone(ctx context.Context, what string, count func() (int64, error), unstick func()) error {
	deadline := time.Now().Add(15 * time.Minute)
	last, lastChange := int64(-1), time.Now()
	for {
		n, err := count()
		if err == nil && n == 0 {
			return nil
		}
		if n != last {
			last, lastChange = n, time.Now()
		}
		if unstick != nil && time.Since(lastChange) > 30*time.Second {
			unstick()
			unstick = nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s still exist after 15 minutes (%v)", n, what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func countKeys(ctx context.Context, cli *clientv3.Client, prefix string) (int64, error) {
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// ---- watch delivery -----------------------------------------------------------

// collector gathers, per written version, when each watcher received it.
type collector struct {
	mu       sync.Mutex
	watchers int
	arrivals map[string][]time.Time
	waiting  map[string]chan struct{}
}

func newCollector(watchers int) *collector {
	return &collector{watchers: watchers, arrivals: map[string][]time.Time{}, waiting: map[string]chan struct{}{}}
}

func (c *collector) event(version string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arrivals[version] = append(c.arrivals[version], at)
	if len(c.arrivals[version]) == c.watchers {
		if ch, ok := c.waiting[version]; ok {
			close(ch)
			delete(c.waiting, version)
		}
	}
}

// wait returns once every watcher has received version, or false after timeout.
func (c *collector) wait(ctx context.Context, version string, timeout time.Duration) bool {
	c.mu.Lock()
	if len(c.arrivals[version]) >= c.watchers {
		c.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	c.waiting[version] = ch
	c.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	case <-time.After(timeout):
	}
	c.mu.Lock()
	delete(c.waiting, version)
	c.mu.Unlock()
	return false
}

func (c *collector) times(version string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.arrivals[version]...)
}

// watchPhase measures, per target and number of watchers, the time from a
// write's acknowledgement to its event at each watcher. Writes are updates of
// an annotation (no controller reaction), one at a time: the next starts once
// every watcher has the previous one, so this is latency, not throughput.
func (b *bench) watchPhase(ctx context.Context, rep int) error {
	const objects = 4
	for _, t := range b.order("watch", rep, b.targets) {
		set := fmt.Sprintf("wr%d%s", rep, strings.ToLower(colSlug(t.ID())))
		if err := b.beginColumn(ctx, t); err != nil {
			return err
		}
		var created maxVersion
		for i := 0; i < objects; i++ {
			v, err := t.Create(ctx, objName(set, i), set)
			if err != nil {
				return fmt.Errorf("%s: create watch objects: %w", t.ID(), err)
			}
			created.see(v)
		}
		if needsSettle(t) {
			if err := b.settleColumn(ctx, t, set, created.String()); err != nil {
				return err
			}
			for i := 0; i < objects; i++ {
				if err := t.Get(ctx, objName(set, i)); err != nil {
					return err
				}
			}
		}
		for _, nw := range b.cfg.watchers {
			b.logf("rep %d: %s: watch delivery to %d watchers, %d writes", rep, t.ID(), nw, b.cfg.watchWrites)
			if err := b.measureWatch(ctx, t, set, objects, nw); err != nil {
				return fmt.Errorf("%s: watch with %d watchers: %w", t.ID(), nw, err)
			}
		}
		if err := b.cleanup(ctx, t, set); err != nil {
			return err
		}
		if err := b.endColumn(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) measureWatch(ctx context.Context, t target, set string, objects, nw int) error {
	// The watchers start after this write, so they see only what follows.
	from, err := t.Update(ctx, objName(set, 0))
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := newCollector(nw)
	for i := 0; i < nw; i++ {
		if err := t.Watch(wctx, from, c.event); err != nil {
			return fmt.Errorf("open watch %d: %w", i, err)
		}
	}
	// Warm-up: every watch delivers one event before anything is timed.
	v, err := t.Update(ctx, objName(set, 1%objects))
	if err != nil {
		return err
	}
	if !c.wait(ctx, v, 60*time.Second) {
		return fmt.Errorf("the warm-up event reached %d of %d watchers within 60s", len(c.times(v)), nw)
	}

	// The latency is from the moment the write is sent to the event at each
	// watcher: both ends are this process's clock, and nothing is clamped.
	// (Measured from the acknowledgement instead, an event may arrive first,
	// and a server whose acknowledgement comes later would look faster.)
	// The ack→event difference is kept, unclamped, to show that overlap.
	var fromAck, fromSend []time.Duration
	early, missing := 0, 0
	for i := 0; i < b.cfg.watchWrites; i++ {
		sent := time.Now()
		v, err := t.Update(ctx, objName(set, i%objects))
		if err != nil {
			return err
		}
		ack := time.Now()
		if !c.wait(ctx, v, eventTimeout) {
			missing += nw - len(c.times(v))
		}
		for _, at := range c.times(v) {
			if at.Before(ack) {
				early++
			}
			fromAck = append(fromAck, at.Sub(ack))
			fromSend = append(fromSend, at.Sub(sent))
		}
	}
	if missing > 0 {
		b.problem("%s watch with %d watchers: %d events did not arrive within %s", t.ID(), nw, missing, eventTimeout)
	}
	sortDurations(fromAck)
	sortDurations(fromSend)
	metric := fmt.Sprintf("watch %d", nw)
	b.figs.add(metric+" p50", t.ID(), "ms", percentile(fromSend, 50))
	b.figs.add(metric+" p99", t.ID(), "ms", percentile(fromSend, 99))
	b.figs.add(metric+" max", t.ID(), "ms", percentile(fromSend, 100))
	b.figs.add(metric+" from-ack p50", t.ID(), "ms", percentile(fromAck, 50))
	b.figs.add(metric+" before-ack share", t.ID(), "%", 100*float64(early)/float64(max(1, len(fromAck))))
	return nil
}

// ---- scale: LIST, memory, CPU per 1000 creates --------------------------------

// listVariant is one way to LIST every store of the namespace.
type listVariant struct {
	col   string
	raw   *rawClient // nil for etcd
	path  string
	proto bool
	gzip  bool
}

// scalePhase fills the namespace with stores, then custom resources, then
// raw etcd keys, up to each list size in turn, LISTing at each size; it
// measures CPU per 1000 objects on the way, and the memory growth of both API
// servers from empty to the largest size in a steady state (see quiesce).
// It returns the idle CPU rates measured while waiting for the first quiesce.
func (b *bench) scalePhase(ctx context.Context, rep int) (map[string]float64, error) {
	sizes := b.cfg.listSizes
	total := sizes[len(sizes)-1]
	set := fmt.Sprintf("sr%d", rep)
	type fillSpec struct {
		t      target
		set    string
		settle func(context.Context, *maxVersion) error
	}
	fills := []fillSpec{
		// kvstore-apiserver through the aggregator, protobuf (the clientset's wire format).
		{b.bp, set + "b", func(ctx context.Context, created *maxVersion) error { return b.settle(ctx, set+"b", created.String()) }},
		// The CRD, with one status write per object as an operator would make.
		{b.a, set + "a", nil},
		// Raw etcd.
		{b.e, set + "e", nil},
	}
	if b.peerRunning() {
		// The peer: Flunders have no status, and nothing writes one.
		fills = append(fills, fillSpec{b.s, set + "s", nil})
	}
	// Each size's fills run in an order drawn per repetition (recorded).
	b.rng.Shuffle(len(fills), func(i, j int) { fills[i], fills[j] = fills[j], fills[i] })
	var ids []string
	for _, f := range fills {
		ids = append(ids, f.t.ID())
	}
	b.mu.Lock()
	b.meta.Orders = append(b.meta.Orders, fmt.Sprintf("scale rep %d: %s", rep, strings.Join(ids, ", ")))
	b.mu.Unlock()

	idle, before, err := b.quiesce(ctx, rep, true, "before")
	if err != nil {
		return nil, err
	}
	// Memory grows from the servers as the first repetition found them. Once
	// a repetition has deleted its objects neither server goes back to that:
	// the watch cache keeps its last events (up to 100k, deleted objects and
	// their snapshots included) until newer events overwrite them, and it only
	// shrinks that history when it is full. Readings with the objects present
	// are stable from one repetition to the next (the history is bounded), so
	// later repetitions measure from the first baseline; their own "before"
	// would count the previous repetition's history as the empty server.
	if b.memBaseline == nil {
		b.memBaseline = &before
	}
	before = *b.memBaseline
	cpu := map[string]cpuDelta{}
	cpuBad := map[string]bool{}
	done := 0
	for _, size := range sizes {
		for _, f := range fills {
			d, err := b.fill(ctx, rep, f.t, f.set, done, size, idle, f.settle)
			if err != nil {
				return nil, err
			}
			if d.Raw == nil {
				cpuBad[f.t.ID()] = true
			}
			if c, ok := cpu[f.t.ID()]; ok {
				d = c.add(d)
			}
			cpu[f.t.ID()] = d
			if size < total { // the largest size is LISTed below, after all fills
				if err := b.listAt(ctx, f.t.ID(), size); err != nil {
					return nil, err
				}
			}
		}
		done = size
	}
	for _, f := range fills {
		if d := cpu[f.t.ID()]; !cpuBad[f.t.ID()] {
			b.recordCPU("scale creates", f.t.ID(), d, total)
		}
		if err := b.listAt(ctx, f.t.ID(), total); err != nil {
			return nil, err
		}
	}
	_, after, err := b.quiesce(ctx, rep, false, "after")
	if err != nil {
		return nil, err
	}
	// kvstore-apiserver's growth is the stores' (column B proto);
	// kube-apiserver's the custom resources' (column A): it only proxied the
	// stores, and their garbage is gone after the forced GC.
	for p, col := range map[string]string{pKVSAPI: colBP, pKubeAPI: colA} {
		b.figs.add("mem RSS before", col, "MiB", float64(before.RSS[p])/(1<<20))
		b.figs.add("mem RSS after", col, "MiB", float64(after.RSS[p])/(1<<20))
		b.figs.add("mem RSS growth", col, "MiB", float64(after.RSS[p]-before.RSS[p])/(1<<20))
		b.figs.add("mem heap before", col, "MiB", float64(before.Heap[p])/(1<<20))
		b.figs.add("mem heap after", col, "MiB", float64(after.Heap[p])/(1<<20))
		b.figs.add("mem unscavenged at reading", col, "MiB", float64(max(before.Unscavenged[p], after.Unscavenged[p]))/(1<<20))
		// RSS less the free heap the runtime still held: what RSS tends to.
		b.figs.add("mem RSS growth less unreturned", col, "MiB",
			float64((after.RSS[p]-after.Unscavenged[p])-(before.RSS[p]-before.Unscavenged[p]))/(1<<20))
		b.figs.add("mem heap growth", col, "MiB", float64(after.Heap[p]-before.Heap[p])/(1<<20))
		b.figs.add("mem heap growth per object", col, "KiB", float64(after.Heap[p]-before.Heap[p])/1024/float64(total))
	}

	b.logf("rep %d: removing %d stores, %d custom resources and %d etcd keys", rep, total, total, total)
	var wg sync.WaitGroup
	errs := make([]error, len(fills))
	for i, f := range fills {
		wg.Add(1)
		go func(i int, t target, set string) {
			defer wg.Done()
			start := time.Now()
			errs[i] = b.cleanup(ctx, t, set)
			b.logf("rep %d: %s: removed %d objects in %s", rep, t.ID(), total, time.Since(start).Round(time.Second))
		}(i, f.t, f.set)
	}
	wg.Wait()
	return idle, errors.Join(errs...)
}

// quiesce brings both API servers to a steady state before a memory reading.
// A watch cache keeps the events of the last 75 s (and snapshots of its
// store for them) and only shrinks that history when new events arrive, so
// right after a burst of writes its memory says more about the burst than
// about the objects. quiesce waits until 80 s have passed since the last
// write to either resource, writes a trickle of updates to one object of each
// (in a namespace of its own), forces a GC and gives the Go scavenger time to
// return freed memory before reading RSS (see memory). The first call also measures idle
// CPU over the wait. With --quick it only forces a GC.
func (b *bench) quiesce(ctx context.Context, rep int, measureIdle bool, label string) (map[string]float64, memSnap, error) {
	// The heap profiles that come with the forced GCs are kept for analysis.
	save := func(proc string, profile []byte) {
		name := filepath.Join(b.cfg.out, fmt.Sprintf("heap-%s-r%d-%s.pb.gz", proc, rep, label))
		if err := os.MkdirAll(b.cfg.out, 0o755); err != nil {
			b.problem("keep heap profile: %v", err)
			return
		}
		if err := os.WriteFile(name, profile, 0o644); err != nil {
			b.problem("keep heap profile: %v", err)
		}
	}
	var idle map[string]float64
	if !b.cfg.steadyMemory {
		var err error
		if measureIdle {
			if idle, err = b.procs.idleRates(ctx, b.cfg.idle); err != nil {
				return nil, memSnap{}, err
			}
		}
		m, err := b.procs.memory(ctx, b.raw, b.cfg.memSettle, nil)
		return idle, m, err
	}
	wait := time.Until(b.lastWrite().Add(historyWindow))
	b.logf("rep %d: waiting %s for the watch caches' history to age, then %d updates to shrink it", rep, wait.Round(time.Second), trickleWrites)
	if measureIdle {
		var err error
		if idle, err = b.procs.idleRates(ctx, max(wait, b.cfg.idle)); err != nil {
			return nil, memSnap{}, err
		}
	} else {
		select {
		case <-ctx.Done():
			return nil, memSnap{}, ctx.Err()
		case <-time.After(wait):
		}
	}
	for i := 0; i < trickleWrites; i++ {
		if _, err := b.memKVS.Update(ctx, memObject); err != nil {
			return nil, memSnap{}, fmt.Errorf("trickle update of a store: %w", err)
		}
		if _, err := b.memCR.Update(ctx, memObject); err != nil {
			return nil, memSnap{}, fmt.Errorf("trickle update of a custom resource: %w", err)
		}
	}
	m, err := b.procs.memory(ctx, b.raw, b.cfg.memSettle, save)
	return idle, m, err
}

const (
	// historyWindow is the watch cache's event history (DefaultEventFreshDuration, 75 s) plus a margin.
	historyWindow = 80 * time.Second
	// trickleWrites each halve the history's capacity if it is full of events
	// older than 75 s (it never shrinks otherwise, so a fill's events can stay
	// until later writes overwrite them: part of holding the objects).
	trickleWrites = 16
	memObject     = "mem-000000"
)

// fill creates objects [from, to) of set at concurrency 16 and returns the
// CPU they cost, including the settle (the controller's status writes) or,
// for custom resources, one status write each.
func (b *bench) fill(ctx context.Context, rep int, t target, set string, from, to int, idle map[string]float64, settle func(context.Context, *maxVersion) error) (cpuDelta, error) {
	col := t.ID()
	b.logf("rep %d: %s: creating objects %d..%d at concurrency 16", rep, col, from, to-1)
	var created maxVersion
	before, err := b.procs.cpu()
	if err != nil {
		return cpuDelta{}, err
	}
	r := runOps(ctx, to-from, 16, perCall, func(ctx context.Context, i int) error {
		v, err := t.Create(ctx, objName(set, from+i), set)
		created.see(v)
		return err
	})
	if r.errs > 0 {
		return cpuDelta{}, fmt.Errorf("%s: %d creates failed, first: %w", col, r.errs, r.firstErr)
	}
	// The largest fill is the sustained create run: thousands of creates at
	// concurrency 16 (with the controller's status writes running alongside
	// for stores), not a burst of a few hundred.
	if to == b.cfg.listSizes[len(b.cfg.listSizes)-1] {
		b.recordOps("sustained create", col, r)
	}
	if settle != nil {
		if err := settle(ctx, &created); err != nil {
			return cpuDelta{}, err
		}
	}
	if cr, ok := t.(*crTarget); ok {
		// Emulate the operator: one status write per custom resource, the
		// same status kvstore-apiserver's controller writes for a paused store.
		r := runOps(ctx, to-from, 16, perCall, func(ctx context.Context, i int) error {
			return cr.UpdateStatus(ctx, objName(set, from+i), b.crStatus)
		})
		if r.errs > 0 {
			return cpuDelta{}, fmt.Errorf("%s: %d status writes failed, first: %w", col, r.errs, r.firstErr)
		}
	}
	after, err := b.procs.cpu()
	if err != nil {
		return cpuDelta{}, err
	}
	if col != colE {
		b.touch()
	}
	d, err := diffCPU(before, after, idle)
	if err != nil {
		b.problem("%s scale CPU: %v", col, err)
		return cpuDelta{}, nil
	}
	return d, nil
}

// listAt LISTs the namespace with every variant of the column's kind of
// object, expecting exactly size objects.
func (b *bench) listAt(ctx context.Context, kind string, size int) error {
	for _, v := range b.lists {
		if kindOf(v.col) != kindOf(kind) {
			continue
		}
		enc := "identity"
		if v.gzip {
			enc = "gzip"
		}
		metric := fmt.Sprintf("LIST %d %s", size, enc)
		var took []time.Duration
		var wire int64
		for i := 0; i <= b.cfg.listRepeat; i++ { // the first is a warm-up
			d, n, items, err := b.listOnce(ctx, v, i == 0)
			if err != nil {
				return fmt.Errorf("%s %s: %w", v.col, metric, err)
			}
			if i == 0 {
				if items != size {
					return fmt.Errorf("%s %s returned %d objects, want %d", v.col, metric, items, size)
				}
				continue
			}
			took, wire = append(took, d), n
		}
		sortDurations(took)
		b.figs.add(metric+" latency", v.col, "ms", percentile(took, 50))
		b.figs.add(metric+" wire", v.col, "KiB", float64(wire)/1024)
	}
	return nil
}

func kindOf(col string) string {
	switch {
	case col == colA:
		return "cr"
	case col == colE:
		return "etcd"
	case col == colS || col == colDS:
		return "flunder"
	default:
		return "kvs"
	}
}

// listOnce returns how long the LIST took to its last byte, the bytes on the
// wire and, when verify is set, how many objects it held.
func (b *bench) listOnce(ctx context.Context, v listVariant, verify bool) (time.Duration, int64, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if v.raw == nil {
		start := time.Now()
		resp, err := b.etcdKVS.Get(ctx, b.e.prefix, clientv3.WithPrefix())
		if err != nil {
			return 0, 0, 0, err
		}
		took := time.Since(start)
		var n int64
		for _, kv := range resp.Kvs {
			n += int64(len(kv.Key) + len(kv.Value))
		}
		return took, n, len(resp.Kvs), nil
	}
	accept := "application/json"
	if v.proto {
		accept = "application/vnd.kubernetes.protobuf"
	}
	resp, err := v.raw.get(ctx, v.path, accept, v.gzip)
	if err != nil {
		return 0, 0, 0, err
	}
	if !verify {
		return resp.took, int64(len(resp.body)), 0, nil
	}
	b.contentTypes.LoadOrStore(v.col+" LIST", resp.contentType)
	body := resp.body
	if resp.gzipped {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return 0, 0, 0, err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return 0, 0, 0, err
		}
	}
	var items int
	if v.proto {
		obj, _, err := kvsscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("decode protobuf list (%s): %w", resp.contentType, err)
		}
		l, ok := obj.(*v1alpha1.KeyValueStoreList)
		if !ok {
			return 0, 0, 0, fmt.Errorf("decoded a %T", obj)
		}
		items = len(l.Items)
	} else {
		var l struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			return 0, 0, 0, fmt.Errorf("decode JSON list (%s): %w", resp.contentType, err)
		}
		items = len(l.Items)
	}
	return resp.took, int64(len(resp.body)), items, nil
}
