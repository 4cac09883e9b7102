package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// The controller phase: N live stores (not paused) of R replicas each, from
// the first create to every store Ready, on kwok Nodes. It measures the whole
// system the way a user meets it (our controller, kube-controller-manager's
// StatefulSet and volume controllers, the scheduler, kwok), and the
// controller's own reconcile rate from its metrics.

const (
	// ctrlNodePrefix names the fake Nodes the phase adds when the stack's are
	// too few; they are removed at the end.
	ctrlNodePrefix = "kvsbench-node-"
	podsPerNode    = 110
	ctrlCreateConc = 16
	metricReconc   = "kvstore_controller_reconcile_total"
)

// ctrlProcs are the processes whose CPU and memory the phase reports; the
// operator's only while it runs.
var ctrlProcs = []string{pEtcdKube, pEtcdKVS, pKubeAPI, pKVSAPI, pOperator, pKCM, pScheduler, "kwok", pClient}

// controllerResult is what one system did in the phase (the median of the
// repetitions), reported side by side with the other system's.
type controllerResult struct {
	System        string `json:"system"`
	Repetitions   int    `json:"repetitions"`
	Stores        int    `json:"stores"`
	Replicas      int    `json:"replicas"`
	ProxyReplicas int    `json:"proxy_replicas"`
	Nodes         int    `json:"nodes"`
	// Create → all Ready.
	CreateSeconds float64            `json:"create_s"`
	ReadySeconds  map[string]float64 `json:"ready_s"` // "50%", "90%", "100%"
	Reconciles    float64            `json:"reconciles"`
	// ReconcileErrors are the reconciles that returned an error (retried
	// with backoff: conflicts, refusals).
	ReconcileErrors float64            `json:"reconcile_errors"`
	CPUSeconds      map[string]float64 `json:"cpu_s"`
	// Memory is each process's RSS once every store is Ready, in MiB.
	MemoryMiB map[string]float64 `json:"rss_mib"`
	// Requests per store during create → Ready: served by kube-apiserver
	// (every client) and by kvstore-apiserver, by verb; sent by the
	// controller's process, by method.
	KubeRequests       map[string]float64 `json:"kube_apiserver_requests_per_store"`
	KVSRequests        map[string]float64 `json:"kvstore_apiserver_requests_per_store"`
	ControllerRequests map[string]float64 `json:"controller_requests_per_store"`
	// ControllerTimes say where the controller's time went during create →
	// Ready (see controllerTimes): its waits in client-go's rate limiters,
	// in total and per request, and its work queue's wait and work per
	// item (a reconcile), in seconds.
	ControllerTimes map[string]float64 `json:"controller_times_s,omitempty"`
	// What kube's own components did for the stores during create → Ready:
	// the scheduler's attempts per store by result, and per
	// kube-controller-manager work queue the items added per store and the
	// seconds its workers spent on them (all workers together).
	SchedulerAttempts map[string]float64 `json:"scheduler_attempts_per_store,omitempty"`
	KCMQueueAdds      map[string]float64 `json:"kcm_queue_adds_per_store,omitempty"`
	KCMWorkSeconds    map[string]float64 `json:"kcm_queue_work_s,omitempty"`
	TimedOut          bool               `json:"timed_out"`
	ReadyAtEnd        int                `json:"ready_at_end"`
	// Deleting Deleted stores until they are gone with their final backups done.
	Deleted          int                `json:"deleted"`
	DeleteSeconds    float64            `json:"delete_s"`
	DeleteReconciles float64            `json:"delete_reconciles"`
	DeleteCPUSeconds map[string]float64 `json:"delete_cpu_s"`
	BackupsDone      int                `json:"final_backups_done"`
	DeleteTimedOut   bool               `json:"delete_timed_out"`
	ClientSettings   string             `json:"client_settings"`
	// ReadyCurve is the number of stores Ready at every poll of one
	// repetition, from the first create until all are Ready (inner polls of
	// an unchanged count left out); ReadyCurves, on the median result only,
	// are every repetition's, in the order they ran.
	ReadyCurve  []readyPoint   `json:"ready_curve,omitempty"`
	ReadyCurves [][]readyPoint `json:"ready_curves,omitempty"`
	// Rep and Position say when one repetition's run happened: its
	// repetition, and 1 if the system ran first in it; Probe is the
	// machine's speed just before it (nil on the median result).
	Rep      int           `json:"rep,omitempty"`
	Position int           `json:"position,omitempty"`
	Probe    *machineProbe `json:"machine_probe,omitempty"`
	// runs are the repetitions a median result was taken over (nil on a
	// repetition's own): a total over processes is the median of their
	// totals, not the sum of each process's median.
	runs []*controllerResult
}

// liveKVS is a store both controllers fully reconcile: a data tier, one
// proxy replica behind it, and a backup spec so that its teardown takes a
// final backup. Claims are retained (the API's default).
func liveKVS(ns, name string, replicas int32) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{labelSet: "ctrl"}},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To(replicas),
			Image:    "registry.example.com/platform/kvstore/redis:7.2.4",
			Port:     6379,
			Storage:  v1alpha1.StorageSpec{VolumeSize: resource.MustParse("1Gi")},
			Proxy:    &v1alpha1.ProxySpec{Replicas: ptr.To[int32](ctrlProxyReplicas), Image: "registry.example.com/platform/kvstore/envoy:v1.31.0"},
			Backup:   &v1alpha1.BackupSpec{Image: "registry.example.com/platform/kvstore/backup:1.0", Command: []string{"/backup"}},
			PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1alpha1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

const ctrlProxyReplicas = 1

func isStoreReady(k *v1alpha1.KeyValueStore) bool {
	return k.Status.Phase == v1alpha1.PhaseReady && k.Status.ObservedGeneration == k.Generation &&
		k.Status.ReadyReplicas == ptr.Deref(k.Spec.Replicas, 1)
}

// controllerPhases runs the controller phase --controller-reps times for
// each system, in an order drawn per repetition, each run in a fresh
// namespace, and keeps the median of every figure.
func (b *bench) controllerPhases(ctx context.Context) error {
	if err := b.awaitGCDiscovery(ctx); err != nil {
		return err
	}
	runs := b.ctrlRuns
	for rep := 1; rep <= b.cfg.ctrlReps; rep++ {
		order := append([]system(nil), b.systems...)
		b.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var names []string
		for _, s := range order {
			names = append(names, s.name())
		}
		b.mu.Lock()
		b.meta.Orders = append(b.meta.Orders, fmt.Sprintf("controller rep %d: %s", rep, strings.Join(names, ", ")))
		b.mu.Unlock()
		for i, s := range order {
			res, err := b.controllerRun(ctx, s, rep, lastRun(rep, b.cfg.ctrlReps, i, len(order)))
			if res != nil {
				res.Rep, res.Position = rep, i+1
				runs[s.name()] = append(runs[s.name()], res)
				b.ctrl[s.name()] = medianResult(runs[s.name()])
			}
			if err != nil {
				return fmt.Errorf("controller phase, repetition %d, %s: %w", rep, s.name(), err)
			}
			b.checkpoint(fmt.Sprintf("the controller phase's repetition %d of %d for %s", rep, b.cfg.ctrlReps, s.name()))
		}
	}
	return nil
}

// resetStack starts the stack again on empty etcds, then sets up again what
// the tool set up at its start (the bench CRD, its namespaces, the
// operator's credentials) and waits, as at the start, for the garbage
// collector to discover both APIs.
func (b *bench) resetStack(ctx context.Context) error {
	b.logf("controller: --fresh-stack: resetting the stack (hack/local-up.sh reset)")
	if err := b.stack.Reset(ctx, b.log); err != nil {
		return err
	}
	clear(b.ctrlUsed) // their namespaces went with the reset
	if err := b.applyCRD(ctx, b.crd); err != nil {
		return err
	}
	b.crdServedAt = time.Now()
	if err := b.prepareNamespace(ctx); err != nil {
		return err
	}
	if b.operator != nil {
		if err := b.operator.credentials(ctx, b.stack); err != nil {
			return err
		}
	}
	return b.awaitGCDiscovery(ctx)
}

// lastRun says whether run i of n in repetition rep of reps is the phase's
// last, the only one whose namespace stays until the cleanup.
func lastRun(rep, reps, i, n int) bool { return rep == reps && i == n-1 }

// gcDiscoveryPeriod is how often kube-controller-manager's garbage collector
// rediscovers the served resources (its resync period, 30 s, plus margin).
const gcDiscoveryPeriod = 35 * time.Second

// awaitGCDiscovery waits until the garbage collector has had time to
// discover the bench CRD (the tool creates it at the start) and kvstore.io
// (the stack may have just registered it). Until it has, the collector
// records every owner of a new dependent as unknown and later reads each
// one back through the API (one GET per dependent: 5 per store), so the
// system measured first would pay a cost the second does not.
func (b *bench) awaitGCDiscovery(ctx context.Context) error {
	wait := time.Until(b.crdServedAt.Add(gcDiscoveryPeriod))
	if wait <= 0 {
		return nil
	}
	b.logf("controller: waiting %s for the garbage collector to discover both APIs", wait.Round(time.Second))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// medianResult is the median of each figure over runs (the worst for
// readiness counts and time-outs).
func medianResult(runs []*controllerResult) *controllerResult {
	m := *runs[0]
	m.Repetitions = len(runs)
	one := func(get func(*controllerResult) float64) float64 {
		var v []float64
		for _, r := range runs {
			v = append(v, get(r))
		}
		return median(v)
	}
	keyed := func(get func(*controllerResult) map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k := range get(runs[0]) {
			var v []float64
			for _, r := range runs {
				if x, ok := get(r)[k]; ok {
					v = append(v, x)
				}
			}
			if len(v) == len(runs) {
				out[k] = median(v)
			}
		}
		return out
	}
	m.CreateSeconds = one(func(r *controllerResult) float64 { return r.CreateSeconds })
	m.Reconciles = one(func(r *controllerResult) float64 { return r.Reconciles })
	m.ReconcileErrors = one(func(r *controllerResult) float64 { return r.ReconcileErrors })
	m.DeleteSeconds = one(func(r *controllerResult) float64 { return r.DeleteSeconds })
	m.DeleteReconciles = one(func(r *controllerResult) float64 { return r.DeleteReconciles })
	m.ReadySeconds = keyed(func(r *controllerResult) map[string]float64 { return r.ReadySeconds })
	m.CPUSeconds = keyed(func(r *controllerResult) map[string]float64 { return r.CPUSeconds })
	m.DeleteCPUSeconds = keyed(func(r *controllerResult) map[string]float64 { return r.DeleteCPUSeconds })
	m.MemoryMiB = keyed(func(r *controllerResult) map[string]float64 { return r.MemoryMiB })
	m.KubeRequests = keyed(func(r *controllerResult) map[string]float64 { return r.KubeRequests })
	m.KVSRequests = keyed(func(r *controllerResult) map[string]float64 { return r.KVSRequests })
	m.ControllerRequests = keyed(func(r *controllerResult) map[string]float64 { return r.ControllerRequests })
	m.ControllerTimes = keyed(func(r *controllerResult) map[string]float64 { return r.ControllerTimes })
	// kube's counters: a key a run read no change of counts as 0 there
	// (perStore leaves zeros out); a run that could not read them is left out.
	counted := func(get func(*controllerResult) map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, k := range keysOf(runs, get) {
			var v []float64
			for _, r := range runs {
				if get(r) != nil {
					v = append(v, get(r)[k])
				}
			}
			out[k] = median(v)
		}
		return out
	}
	m.SchedulerAttempts = counted(func(r *controllerResult) map[string]float64 { return r.SchedulerAttempts })
	m.KCMQueueAdds = counted(func(r *controllerResult) map[string]float64 { return r.KCMQueueAdds })
	m.KCMWorkSeconds = counted(func(r *controllerResult) map[string]float64 { return r.KCMWorkSeconds })
	m.ReadyCurve, m.Rep, m.Position, m.Probe = nil, 0, 0, nil
	m.runs = runs
	for _, r := range runs {
		m.ReadyCurves = append(m.ReadyCurves, r.ReadyCurve)
	}
	for _, r := range runs {
		m.TimedOut = m.TimedOut || r.TimedOut
		m.DeleteTimedOut = m.DeleteTimedOut || r.DeleteTimedOut
		m.ReadyAtEnd = min(m.ReadyAtEnd, r.ReadyAtEnd)
		m.BackupsDone = min(m.BackupsDone, r.BackupsDone)
	}
	return &m
}

// phaseSnap is what the phase reads before and after a window.
type phaseSnap struct {
	at         time.Time
	cpu        map[string]float64
	controller controllerReading
	kube, kvs  map[string]float64 // served, by verb
	// kube's components (nil when their /metrics could not be read)
	schedAttempts    map[string]float64 // by result
	kcmAdds, kcmWork map[string]float64 // by work queue
}

func (b *bench) snap(ctx context.Context, s system) (phaseSnap, error) {
	p := phaseSnap{at: time.Now()}
	var err error
	if p.cpu, err = b.procs.cpuOf(ctrlProcs); err != nil {
		return p, err
	}
	if p.controller, err = s.controller(ctx); err != nil {
		return p, fmt.Errorf("controller /metrics: %w", err)
	}
	if p.kube, err = b.served(ctx, pKubeAPI); err != nil {
		return p, err
	}
	p.kvs, err = b.served(ctx, pKVSAPI)
	return p, err
}

// snapKubeComponents reads the scheduler's and kube-controller-manager's
// work counters into p. They explain kube's CPU, not the result, so a failed
// read is reported as a problem and leaves them out.
func (b *bench) snapKubeComponents(ctx context.Context, p *phaseSnap) {
	sched, err := b.raw[pScheduler].metrics(ctx)
	if err != nil {
		b.problem("controller phase: kube-scheduler /metrics: %v", err)
		return
	}
	kcm, err := b.raw[pKCM].metrics(ctx)
	if err != nil {
		b.problem("controller phase: kube-controller-manager /metrics: %v", err)
		return
	}
	p.schedAttempts = sched.Sum("scheduler_schedule_attempts_total", "result")
	p.kcmAdds = kcm.Sum("workqueue_adds_total", "name")
	p.kcmWork = kcm.Sum("workqueue_work_duration_seconds_sum", "name")
}

// served sums an API server's apiserver_request_total by verb.
func (b *bench) served(ctx context.Context, proc string) (map[string]float64, error) {
	metrics, err := b.raw[proc].metrics(ctx)
	if err != nil {
		return nil, err
	}
	return metrics.Sum("apiserver_request_total", "verb"), nil
}

// perStore is after − before for each key, divided by n; zeros left out.
func perStore(before, after map[string]float64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d / float64(max(n, 1))
		}
	}
	return out
}

// Keys of controllerResult.ControllerTimes.
const (
	ctLimiterTotal      = "rate_limiter_total"
	ctLimiterPerRequest = "rate_limiter_per_request"
	ctQueuePerItem      = "queue_per_item"
	ctWorkPerItem       = "work_per_item"
	ctWorkTotal         = "work_total"
)

// controllerTimes turns two readings of timesOf into the window's totals
// and means; a mean over no items is left out.
func controllerTimes(before, after map[string]float64) map[string]float64 {
	d := func(k string) float64 { return after[k] - before[k] }
	out := map[string]float64{ctLimiterTotal: d(timeLimiter), ctWorkTotal: d(timeWork)}
	mean := func(key, sum, count string) {
		if n := d(count); n > 0 {
			out[key] = d(sum) / n
		}
	}
	mean(ctLimiterPerRequest, timeLimiter, timeLimiterCount)
	mean(ctQueuePerItem, timeQueue, timeQueueCount)
	mean(ctWorkPerItem, timeWork, timeWorkCount)
	return out
}

func cpuDiff(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, p := range ctrlProcs {
		if before[p] >= 0 && after[p] >= 0 {
			out[p] = after[p] - before[p]
		}
	}
	return out
}

// controllerRun is one repetition of the phase for one system: N live
// stores created → all Ready, then M deleted → gone with their final
// backups done, then the namespace removed unless this is the phase's last
// run.
func (b *bench) controllerRun(ctx context.Context, s system, rep int, last bool) (*controllerResult, error) {
	n, r := b.cfg.ctrlStores, b.cfg.ctrlReplicas
	ns := s.namespace()
	res := &controllerResult{System: s.name(), Stores: n, Replicas: r, ProxyReplicas: ctrlProxyReplicas, ReadySeconds: map[string]float64{}}
	b.logf("controller: repetition %d of %d: %s: %d stores of %d replicas (+%d proxy) in %s", rep, b.cfg.ctrlReps, s.name(), n, r, ctrlProxyReplicas, ns)
	if b.cfg.freshStack {
		if err := b.resetStack(ctx); err != nil {
			return nil, err
		}
	}
	b.ctrlUsed[ns] = s

	if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	nodes, err := b.ensureNodes(ctx, n*(r+ctrlProxyReplicas)+b.cfg.ctrlDeletes)
	if err != nil {
		return nil, err
	}
	res.Nodes = nodes
	res.ClientSettings = s.settings()
	// The stack is quiet here: the previous run's namespace is gone and
	// this system's controller has not started.
	if res.Probe, err = probeMachine(b.cfg.out); err != nil {
		return nil, fmt.Errorf("machine probe: %w", err)
	}
	b.logf("controller: %s: machine probe: CPU work %.0f ms, fsync p50 %.2f ms, p99 %.2f ms", s.name(), res.Probe.CPUWorkMs, res.Probe.FsyncP50Ms, res.Probe.FsyncP99Ms)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err := s.stop(context.WithoutCancel(ctx)); err != nil {
			b.problem("controller phase, %s: %v", s.name(), err)
		}
	}()

	before, err := b.snap(ctx, s)
	if err != nil {
		return nil, err
	}
	b.snapKubeComponents(ctx, &before)
	start := time.Now()
	cr := runOps(ctx, n, ctrlCreateConc, perCall, func(ctx context.Context, i int) error {
		err := s.create(ctx, fmt.Sprintf("s-%05d", i), liveKVS(ns, fmt.Sprintf("s-%05d", i), int32(r)))
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if cr.errs > 0 {
		return nil, fmt.Errorf("create stores: %d failed, first: %w", cr.errs, cr.firstErr)
	}
	res.CreateSeconds = time.Since(start).Seconds()
	b.logf("controller: %s: created %d stores in %.1f s; waiting for all Ready (timeout %s)", s.name(), n, res.CreateSeconds, b.cfg.ctrlTimeout)

	marks := []struct {
		key  string
		frac float64
	}{{"50%", 0.5}, {"90%", 0.9}, {"100%", 1}}
	deadline := start.Add(b.cfg.ctrlTimeout)
	lastLog := time.Now()
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	tracker := trackStores(trackCtx, s)
	for {
		ready, trackErr := tracker.readyCount()
		el := time.Since(start).Seconds()
		res.ReadyCurve = appendReady(res.ReadyCurve, el, ready)
		for _, m := range marks {
			if _, ok := res.ReadySeconds[m.key]; !ok && float64(ready) >= m.frac*float64(n) {
				res.ReadySeconds[m.key] = el
			}
		}
		res.ReadyAtEnd = ready
		if ready == n {
			break
		}
		if time.Now().After(deadline) {
			res.TimedOut = true
			b.problem("controller phase, %s: only %d of %d stores Ready after %s (last error following them: %v)", s.name(), ready, n, b.cfg.ctrlTimeout, trackErr)
			break
		}
		if time.Since(lastLog) > 30*time.Second {
			b.logf("controller: %s: %d of %d stores Ready after %.0f s", s.name(), ready, n, el)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	after, err := b.snap(ctx, s)
	if err != nil {
		return nil, err
	}
	b.snapKubeComponents(ctx, &after)
	res.CPUSeconds = cpuDiff(before.cpu, after.cpu)
	res.Reconciles, res.ReconcileErrors = total(after.controller.reconciles)-total(before.controller.reconciles), after.controller.reconciles["error"]-before.controller.reconciles["error"]
	res.KubeRequests = perStore(before.kube, after.kube, n)
	res.KVSRequests = perStore(before.kvs, after.kvs, n)
	res.ControllerRequests = perStore(before.controller.requests, after.controller.requests, n)
	res.ControllerTimes = controllerTimes(before.controller.times, after.controller.times)
	if before.kcmWork != nil && after.kcmWork != nil {
		res.SchedulerAttempts = perStore(before.schedAttempts, after.schedAttempts, n)
		res.KCMQueueAdds = perStore(before.kcmAdds, after.kcmAdds, n)
		res.KCMWorkSeconds = perStore(before.kcmWork, after.kcmWork, 1)
	}
	res.MemoryMiB = map[string]float64{}
	for _, p := range ctrlProcs {
		if pid, err := b.procs.pid(p); err == nil {
			if rss, err := rssBytes(pid); err == nil {
				res.MemoryMiB[p] = float64(rss) / (1 << 20)
			}
		}
	}
	b.logf("controller: %s: %d of %d Ready in %.1f s; %.0f reconciles", s.name(), res.ReadyAtEnd, n, after.at.Sub(start).Seconds(), res.Reconciles)
	if !res.TimedOut {
		if err := b.deleteRun(ctx, s, res); err != nil {
			return res, err
		}
	}
	if last || b.cfg.freshStack {
		// With --fresh-stack the next run's reset removes everything. The
		// last run's namespace goes at the cleanup (b.ctrlUsed; the
		// operator's stores are released there by the tool). Every other
		// run's goes now: the next system must start on the same empty
		// cluster, not beside this one's Pods, claims and stores.
		return res, nil
	}
	b.logf("controller: %s: removing namespace %s", s.name(), ns)
	if err := b.deleteNamespace(ctx, ns); err != nil {
		return res, err
	}
	delete(b.ctrlUsed, ns)
	return res, nil
}

// deleteRun deletes the first --controller-deletes stores at concurrency 16
// and waits until they are gone and their final backups completed.
func (b *bench) deleteRun(ctx context.Context, s system, res *controllerResult) error {
	m := min(b.cfg.ctrlDeletes, res.Stores)
	res.Deleted = m
	if m == 0 {
		return nil
	}
	names := map[string]bool{}
	for i := 0; i < m; i++ {
		names[fmt.Sprintf("s-%05d", i)] = true
	}
	before, err := b.snap(ctx, s)
	if err != nil {
		return err
	}
	start := time.Now()
	dr := runOps(ctx, m, ctrlCreateConc, perCall, func(ctx context.Context, i int) error {
		return s.remove(ctx, fmt.Sprintf("s-%05d", i))
	})
	if dr.errs > 0 {
		return fmt.Errorf("delete stores: %d failed, first: %w", dr.errs, dr.firstErr)
	}
	deadline := start.Add(b.cfg.ctrlTimeout)
	lastLog := time.Now()
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	tracker := trackStores(trackCtx, s)
	for {
		left, trackErr := tracker.present(names)
		done, err := s.finalBackupsDone(ctx, names)
		if err != nil {
			return err
		}
		res.BackupsDone = done
		if left == 0 && done >= m {
			break
		}
		if time.Now().After(deadline) {
			res.DeleteTimedOut = true
			b.problem("controller phase, %s: %d of %d deleted stores still there and %d final backups done after %s (last error following them: %v)", s.name(), left, m, done, b.cfg.ctrlTimeout, trackErr)
			break
		}
		if time.Since(lastLog) > 30*time.Second {
			b.logf("controller: %s: %d of %d deleted stores left, %d final backups done", s.name(), left, m, done)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	res.DeleteSeconds = time.Since(start).Seconds()
	after, err := b.snap(ctx, s)
	if err != nil {
		return err
	}
	res.DeleteCPUSeconds = cpuDiff(before.cpu, after.cpu)
	res.DeleteReconciles = total(after.controller.reconciles) - total(before.controller.reconciles)
	b.logf("controller: %s: %d stores deleted, gone with %d final backups in %.1f s", s.name(), m, res.BackupsDone, res.DeleteSeconds)
	return nil
}

// ensureNodes adds fake kwok Nodes until the cluster has room for pods
// more Pods than it already runs, and waits for them to be Ready.
func (b *bench) ensureNodes(ctx context.Context, pods int) (int, error) {
	nodes, err := b.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	all, err := b.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	room := len(nodes.Items)*podsPerNode - len(all.Items)
	var added []string
	for i := 1; room < pods+podsPerNode/2; i++ {
		name := fmt.Sprintf("%s%d", ctrlNodePrefix, i)
		if _, err := b.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			continue
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse(fmt.Sprint(podsPerNode))},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse(fmt.Sprint(podsPerNode))},
			},
		}
		if _, err := b.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("create node %s: %w", name, err)
		}
		added = append(added, name)
		room += podsPerNode
	}
	if len(added) > 0 {
		b.logf("controller: added %d fake Nodes (%s…)", len(added), added[0])
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range added {
		for {
			n, err := b.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && nodeReady(n) {
				break
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("node %s not Ready after 2m", name)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return len(nodes.Items) + len(added), nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// removeBenchNodes deletes the Nodes ensureNodes added; the Pods left on them
// go with the namespace.
func (b *bench) removeBenchNodes(ctx context.Context) error {
	nodes, err := b.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, ctrlNodePrefix) {
			if err := b.kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// clientSettings states the client rate limits in play, from the processes'
// command lines (defaults when a flag is absent).
func clientSettings(p procs) string {
	var parts []string
	for _, s := range []struct{ proc, def string }{
		{"kvstore-apiserver", "kvstore-apiserver controller --kube-api-qps=50 --kube-api-burst=100 --concurrent-keyvaluestore-syncs=5 (defaults)"},
		{"kube-controller-manager", "kube-controller-manager --kube-api-qps=20 --kube-api-burst=30 (defaults)"},
		{pScheduler, "kube-scheduler QPS 50, burst 100 (defaults)"},
	} {
		if flags := cmdlineFlags(p, s.proc, "--kube-api-qps", "--kube-api-burst", "--concurrent-keyvaluestore-syncs", "--concurrent-statefulset-syncs"); flags != "" {
			parts = append(parts, s.proc+" "+flags)
		} else {
			parts = append(parts, s.def)
		}
	}
	return strings.Join(parts, "; ")
}

// cmdlineFlags returns the given flags as a process of the local stack was
// started with ("" if none), read from /proc.
func cmdlineFlags(p procs, proc string, names ...string) string {
	args := p.args(proc)
	var out []string
	for i, a := range args {
		for _, n := range names {
			switch {
			case strings.HasPrefix(a, n+"="):
				out = append(out, a)
			case a == n && i+1 < len(args):
				out = append(out, a+"="+args[i+1])
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (b *bench) controllerMarkdown() string {
	var results []*controllerResult
	for _, s := range b.systems {
		if r := b.ctrl[s.name()]; r != nil {
			results = append(results, r)
		}
	}
	if len(results) == 0 {
		return ""
	}
	c := results[0]
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### Controller phase: %d stores of %d replicas and %d proxy replica(s), created → all Ready; then %d deleted → gone with final backups done\n\n",
		c.Stores, c.Replicas, c.ProxyReplicas, c.Deleted)
	fmt.Fprintf(&sb, "The same stores on both systems, created at concurrency %d by this tool (kvstore-apiserver: protobuf through the aggregator; the CRD: JSON), on kwok Nodes, each system in a fresh namespace%s; a store counts as Ready when its status says phase Ready for its current generation with every data replica ready. "+
		"Readiness is followed with one LIST and then a watch on both sides (counted every second); until 2026-12-01 it was polled with a LIST of every store each second, which cost the CRD side more (see docs/benchmarks.md). Median of %d repetition(s) (their range beside it when there were several), the systems' order drawn per repetition (see Column order above); a ratio marked \"ranges overlap\" is a difference the repetitions do not show (each system's range reaches into the other's: one system alone has varied as much from run to run). CPU counts every process over the window; memory is RSS once every store is Ready. Requests are per store: served by each API server from every client (kube-controller-manager, scheduler, kwok and this tool included), and sent by the controller's process.\n\n",
		ctrlCreateConc, freshStackNote(b.cfg.freshStack), c.Repetitions)
	for _, r := range results {
		fmt.Fprintf(&sb, "- %s: %s\n", r.System, r.ClientSettings)
	}
	sb.WriteString("\n| metric |")
	for _, r := range results {
		sb.WriteString(" " + r.System + " |")
	}
	if len(results) == 2 {
		fmt.Fprintf(&sb, " %s / %s |", results[0].System, results[1].System)
	}
	sb.WriteString("\n|---|")
	for range results {
		sb.WriteString("--:|")
	}
	if len(results) == 2 {
		sb.WriteString("--:|")
	}
	sb.WriteString("\n")
	line := func(label, unit string, get func(*controllerResult) (float64, bool)) {
		var vals []float64
		var spans []string
		var ranges [][2]float64 // each system's min and max over its runs (when it has several)
		any := false
		for _, r := range results {
			v, ok := get(r)
			if !ok {
				v = math.NaN()
			} else {
				any = true
			}
			vals = append(vals, v)
			// The range of the repetitions, beside the median.
			lo, hi, n := math.Inf(1), math.Inf(-1), 0
			for _, run := range b.ctrlRuns[r.System] {
				if x, ok := get(run); ok {
					lo, hi, n = min(lo, x), max(hi, x), n+1
				}
			}
			span := ""
			if n > 1 {
				span = fmt.Sprintf(" (%s–%s)", format(lo, unit), format(hi, unit))
				ranges = append(ranges, [2]float64{lo, hi})
			}
			spans = append(spans, span)
		}
		if !any {
			return
		}
		fmt.Fprintf(&sb, "| %s |", label)
		for i, v := range vals {
			cell := format(v, unit)
			if unit != "" && !math.IsNaN(v) {
				cell += " " + unit
			}
			sb.WriteString(" " + cell + spans[i] + " |")
		}
		if len(vals) == 2 {
			if vals[1] != 0 && !math.IsNaN(vals[0]) && !math.IsNaN(vals[1]) {
				fmt.Fprintf(&sb, " %.2f%s |", vals[0]/vals[1], overlapNote(ranges))
			} else {
				sb.WriteString(" – |")
			}
		}
		sb.WriteString("\n")
	}
	val := func(f func(*controllerResult) float64) func(*controllerResult) (float64, bool) {
		return func(r *controllerResult) (float64, bool) { return f(r), true }
	}
	key := func(f func(*controllerResult) map[string]float64, k string) func(*controllerResult) (float64, bool) {
		return func(r *controllerResult) (float64, bool) { v, ok := f(r)[k]; return v, ok }
	}
	line("creates done", "s", val(func(r *controllerResult) float64 { return r.CreateSeconds }))
	for _, k := range []string{"50%", "90%", "100%"} {
		line(k+" of the stores Ready", "s", key(func(r *controllerResult) map[string]float64 { return r.ReadySeconds }, k))
	}
	line("stores Ready at the end", "", val(func(r *controllerResult) float64 { return float64(r.ReadyAtEnd) }))
	line("reconciles per store", "", val(func(r *controllerResult) float64 { return r.Reconciles / float64(max(r.Stores, 1)) }))
	line("of which errors (retried)", "", val(func(r *controllerResult) float64 { return r.ReconcileErrors / float64(max(r.Stores, 1)) }))
	kubeRequests := func(r *controllerResult) map[string]float64 { return r.KubeRequests }
	kvsRequests := func(r *controllerResult) map[string]float64 { return r.KVSRequests }
	controllerRequests := func(r *controllerResult) map[string]float64 { return r.ControllerRequests }
	for _, v := range keysOf(results, kubeRequests, kvsRequests) {
		if v == "WATCH" || v == "CONNECT" {
			continue
		}
		line("kube-apiserver "+v+" requests per store (all clients)", "", key(kubeRequests, v))
		line("kvstore-apiserver "+v+" requests per store (all clients)", "", key(kvsRequests, v))
	}
	for _, m := range keysOf(results, controllerRequests) {
		line("controller's "+m+" requests per store", "", key(controllerRequests, m))
	}
	waits := func(r *controllerResult) map[string]float64 { return r.ControllerTimes }
	ms := func(k string) func(*controllerResult) (float64, bool) {
		return func(r *controllerResult) (float64, bool) { v, ok := r.ControllerTimes[k]; return v * 1000, ok }
	}
	line("controller's waits in client-go's rate limiters, all requests", "s", key(waits, ctLimiterTotal))
	line("controller's rate-limiter wait per request (mean)", "ms", ms(ctLimiterPerRequest))
	line("controller's work-queue wait per reconcile (mean)", "ms", ms(ctQueuePerItem))
	line("controller's workers busy per reconcile (mean)", "ms", ms(ctWorkPerItem))
	line("controller's workers busy, all reconciles", "s", key(waits, ctWorkTotal))
	allOf := func(f func(*controllerResult) map[string]float64) func(*controllerResult) (float64, bool) {
		return func(r *controllerResult) (float64, bool) {
			if len(r.runs) == 0 {
				return total(f(r)), len(f(r)) > 0
			}
			var totals []float64
			for _, run := range r.runs {
				if len(f(run)) > 0 {
					totals = append(totals, total(f(run)))
				}
			}
			return median(totals), len(totals) == len(r.runs)
		}
	}
	schedulerAttempts := func(r *controllerResult) map[string]float64 { return r.SchedulerAttempts }
	for _, k := range keysOf(results, schedulerAttempts) {
		line("scheduler attempts per store, "+k, "", key(schedulerAttempts, k))
	}
	for _, q := range busiestQueues(results, kcmQueuesShown) {
		line("kube-controller-manager queue "+q+": items added per store", "", key(func(r *controllerResult) map[string]float64 { return r.KCMQueueAdds }, q))
		line("kube-controller-manager queue "+q+": workers' time", "s", key(func(r *controllerResult) map[string]float64 { return r.KCMWorkSeconds }, q))
	}
	line("CPU, all processes, create → all Ready", "s", allOf(func(r *controllerResult) map[string]float64 { return r.CPUSeconds }))
	for _, p := range ctrlProcs {
		line("CPU "+p, "s", key(func(r *controllerResult) map[string]float64 { return r.CPUSeconds }, p))
	}
	line("RSS, all processes, all Ready", "MiB", allOf(func(r *controllerResult) map[string]float64 { return r.MemoryMiB }))
	for _, p := range ctrlProcs {
		line("RSS "+p, "MiB", key(func(r *controllerResult) map[string]float64 { return r.MemoryMiB }, p))
	}
	line("deleted stores gone, final backups done", "s", val(func(r *controllerResult) float64 { return r.DeleteSeconds }))
	line("final backups completed", "", val(func(r *controllerResult) float64 { return float64(r.BackupsDone) }))
	line("reconciles per deleted store", "", val(func(r *controllerResult) float64 { return r.DeleteReconciles / float64(max(r.Deleted, 1)) }))
	line("CPU, all processes, deletion", "s", allOf(func(r *controllerResult) map[string]float64 { return r.DeleteCPUSeconds }))
	sb.WriteString(b.repetitionsMarkdown())
	for _, r := range results {
		if r.TimedOut || r.DeleteTimedOut {
			fmt.Fprintf(&sb, "\n%s timed out (Ready: %v, deletion: %v): its figures are incomplete.\n", r.System, r.TimedOut, r.DeleteTimedOut)
		}
	}
	return sb.String()
}

// overlapNote marks a ratio whose two systems' ranges over their
// repetitions overlap: the repetitions do not show that difference (one
// system alone has varied from run to run as much as the two differ).
func overlapNote(ranges [][2]float64) string {
	if len(ranges) != 2 || ranges[0][0] > ranges[1][1] || ranges[1][0] > ranges[0][1] {
		return ""
	}
	return " (ranges overlap)"
}

// repetitionsMarkdown lists every run of the phase in the order it ran,
// with the machine's speed just before it, so that an order effect can be
// told from drift of the machine.
func (b *bench) repetitionsMarkdown() string {
	runs := b.runsInOrder()
	if len(runs) < 2 || runs[0].Rep == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("\nEach run in the order it ran. The machine probe is taken on the quiet stack just before the run: the fastest of 3 timings of a fixed single-threaded SHA-256 workload (4 passes over 64 MiB), and 100 writes of 4 KiB each followed by fsync in the output directory's filesystem.\n\n")
	sb.WriteString("| repetition | position | system | probe: CPU work | probe: fsync p50 / p99 | all Ready | CPU, all processes | deletion |\n|--:|--:|---|--:|--:|--:|--:|--:|\n")
	for _, r := range runs {
		cpuCell, syncCell := "–", "–"
		if r.Probe != nil {
			cpuCell = fmt.Sprintf("%.0f ms", r.Probe.CPUWorkMs)
			syncCell = fmt.Sprintf("%s / %s ms", format(r.Probe.FsyncP50Ms, "ms"), format(r.Probe.FsyncP99Ms, "ms"))
		}
		ready := "–"
		if v, ok := r.ReadySeconds["100%"]; ok {
			ready = format(v, "s") + " s"
		}
		fmt.Fprintf(&sb, "| %d | %d | %s | %s | %s | %s | %s s | %s s |\n", r.Rep, r.Position, r.System, cpuCell, syncCell,
			ready, format(total(r.CPUSeconds), "s"), format(r.DeleteSeconds, "s"))
	}
	// Where each run's CPU went, so that a run slower for its position can be
	// told from one slower for its system.
	procs := keysOf(runs, func(r *controllerResult) map[string]float64 { return r.CPUSeconds })
	sb.WriteString("\nCPU seconds per process, create → all Ready, and the scheduler's attempts per store that found a Pod unschedulable, each run in the order it ran:\n\n| repetition | position | system | unschedulable per store | " + strings.Join(procs, " | ") + " |\n|--:|--:|---|--:|" + strings.Repeat("--:|", len(procs)) + "\n")
	for _, r := range runs {
		unschedulable := "–"
		if v, ok := r.SchedulerAttempts["unschedulable"]; ok {
			unschedulable = format(v, "")
		}
		fmt.Fprintf(&sb, "| %d | %d | %s | %s |", r.Rep, r.Position, r.System, unschedulable)
		for _, p := range procs {
			fmt.Fprintf(&sb, " %s |", format(r.CPUSeconds[p], "s"))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// runsInOrder is every run of the controller phase in the order it ran.
func (b *bench) runsInOrder() []*controllerResult {
	var runs []*controllerResult
	for _, rs := range b.ctrlRuns {
		runs = append(runs, rs...)
	}
	slices.SortFunc(runs, func(x, y *controllerResult) int {
		return cmp.Or(cmp.Compare(x.Rep, y.Rep), cmp.Compare(x.Position, y.Position))
	})
	return runs
}

// keysOf is every key the maps that gets return hold in any result, sorted.
func keysOf(results []*controllerResult, gets ...func(*controllerResult) map[string]float64) []string {
	keys := map[string]bool{}
	for _, r := range results {
		for _, get := range gets {
			for k := range get(r) {
				keys[k] = true
			}
		}
	}
	return sortedKeys(keys)
}

// freshStackNote is what the report says of --fresh-stack.
func freshStackNote(fresh bool) string {
	if fresh {
		return " on a stack reset to empty etcds before each run (--fresh-stack: neither system inherits the other's state)"
	}
	return " of the same stack, one after the other (the second inherits the state the first left in kube's etcd and processes)"
}

// kcmQueuesShown is how many of kube-controller-manager's work queues the
// report lists: the busiest by their workers' time.
const kcmQueuesShown = 6

// busiestQueues are the n work queues whose workers spent the most time in
// any of the results, busiest first.
func busiestQueues(results []*controllerResult, n int) []string {
	most := map[string]float64{}
	for _, r := range results {
		for q, s := range r.KCMWorkSeconds {
			most[q] = max(most[q], s)
		}
	}
	queues := slices.Collect(maps.Keys(most))
	slices.SortFunc(queues, func(a, b string) int {
		if c := cmp.Compare(most[b], most[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return queues[:min(n, len(queues))]
}

// total sums a map's values.
func total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
