package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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

// ctrlProcs are the processes whose CPU the phase reports.
var ctrlProcs = []string{pEtcdKube, pEtcdKVS, pKubeAPI, pKVSAPI, pKCM, "kube-scheduler", "kwok", pClient}

// controllerResult is what the phase measured, reported as its own section.
type controllerResult struct {
	Repetitions     int                `json:"repetitions"`
	Stores          int                `json:"stores"`
	Replicas        int                `json:"replicas"`
	Nodes           int                `json:"nodes"`
	CreateSeconds   float64            `json:"create_s"`
	ReadySeconds    map[string]float64 `json:"ready_s"` // "50%", "90%", "100%"
	Reconciles      float64            `json:"reconciles"`
	ReconcileErrors float64            `json:"reconcile_errors"`
	ReconcileRate   float64            `json:"reconciles_per_s"`
	CPUSeconds      map[string]float64 `json:"cpu_s"`
	ClientSettings  string             `json:"client_settings"`
	TimedOut        bool               `json:"timed_out"`
	ReadyAtEnd      int                `json:"ready_at_end"`
	// KubeRequests are the requests kube-apiserver served during the phase,
	// by verb, from every client (APPLY are the controller's alone here).
	KubeRequests map[string]float64 `json:"kube_requests"`
}

func (b *bench) ctrlNamespace() string { return b.cfg.namespace + "-ctrl" }

// liveKVS is a store the controller fully reconciles: no proxy tier (its
// Deployment would only wait for the data tier), no backup.
func liveKVS(ns, name string, replicas int32) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{labelSet: "ctrl"}},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To(replicas),
			Image:    "registry.example.com/platform/kvstore/redis:7.2.4",
			Storage:  v1alpha1.StorageSpec{VolumeSize: resource.MustParse("1Gi")},
		},
	}
}

func isStoreReady(k *v1alpha1.KeyValueStore) bool {
	return k.Status.Phase == v1alpha1.PhaseReady && k.Status.ObservedGeneration == k.Generation &&
		k.Status.ReadyReplicas == ptr.Deref(k.Spec.Replicas, 1)
}

// controllerPhases runs the controller phase --controller-reps times, each
// in a fresh namespace (the previous one deleted and gone first), and keeps
// the median of every figure.
func (b *bench) controllerPhases(ctx context.Context) error {
	var runs []*controllerResult
	for rep := 1; rep <= b.cfg.ctrlReps; rep++ {
		if rep > 1 {
			b.logf("controller: deleting the namespace of repetition %d before the next", rep-1)
			if err := b.deleteNamespace(ctx, b.ctrlNamespace()); err != nil {
				return err
			}
		}
		res, err := b.controllerPhase(ctx, rep)
		if res != nil {
			runs = append(runs, res)
			b.ctrl = medianResult(runs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// medianResult is the median of each figure over runs (the worst for
// readiness counts and time-outs).
func medianResult(runs []*controllerResult) *controllerResult {
	m := *runs[0]
	m.Repetitions = len(runs)
	med := func(get func(*controllerResult) (float64, bool)) (float64, bool) {
		var v []float64
		for _, r := range runs {
			if x, ok := get(r); ok {
				v = append(v, x)
			}
		}
		if len(v) < len(runs) {
			return 0, false
		}
		return median(v), true
	}
	one := func(get func(*controllerResult) float64) float64 {
		v, _ := med(func(r *controllerResult) (float64, bool) { return get(r), true })
		return v
	}
	keyed := func(get func(*controllerResult) map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k := range get(runs[0]) {
			if v, ok := med(func(r *controllerResult) (float64, bool) { x, ok := get(r)[k]; return x, ok }); ok {
				out[k] = v
			}
		}
		return out
	}
	m.CreateSeconds = one(func(r *controllerResult) float64 { return r.CreateSeconds })
	m.Reconciles = one(func(r *controllerResult) float64 { return r.Reconciles })
	m.ReconcileErrors = one(func(r *controllerResult) float64 { return r.ReconcileErrors })
	m.ReconcileRate = one(func(r *controllerResult) float64 { return r.ReconcileRate })
	m.ReadySeconds = keyed(func(r *controllerResult) map[string]float64 { return r.ReadySeconds })
	m.CPUSeconds = keyed(func(r *controllerResult) map[string]float64 { return r.CPUSeconds })
	m.KubeRequests = keyed(func(r *controllerResult) map[string]float64 { return r.KubeRequests })
	for _, r := range runs {
		m.TimedOut = m.TimedOut || r.TimedOut
		m.ReadyAtEnd = min(m.ReadyAtEnd, r.ReadyAtEnd)
	}
	return &m
}

func (b *bench) controllerPhase(ctx context.Context, rep int) (*controllerResult, error) {
	n, r := b.cfg.ctrlStores, b.cfg.ctrlReplicas
	ns := b.ctrlNamespace()
	res := &controllerResult{Stores: n, Replicas: r, ReadySeconds: map[string]float64{}}
	if b.ctrl == nil {
		b.ctrl = res // so that teardown cleans up even if this repetition fails
	}
	b.logf("controller: repetition %d of %d: %d stores of %d replicas in %s", rep, b.cfg.ctrlReps, n, r, ns)

	if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	nodes, err := b.ensureNodes(ctx, n*r)
	if err != nil {
		return nil, err
	}
	res.Nodes = nodes
	res.ClientSettings = clientSettings(b.procs)

	before, err := b.counters(ctx)
	if err != nil {
		return nil, err
	}
	cpu0, err := b.procs.cpuOf(ctrlProcs)
	if err != nil {
		return nil, err
	}
	client := b.kvsViaKube.KvstoreV1alpha1().KeyValueStores(ns)
	start := time.Now()

	// Create at concurrency 16 through the aggregator, as a user's tool would.
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, ctrlCreateConc)
	for w := 0; w < ctrlCreateConc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if _, err := client.Create(ctx, liveKVS(ns, fmt.Sprintf("s-%05d", i), int32(r)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("create stores: %w", err)
	}
	res.CreateSeconds = time.Since(start).Seconds()
	b.logf("controller: created %d stores in %.1f s; waiting for all Ready (timeout %s)", n, res.CreateSeconds, b.cfg.ctrlTimeout)

	marks := []struct {
		key  string
		frac float64
	}{{"50%", 0.5}, {"90%", 0.9}, {"100%", 1}}
	deadline := start.Add(b.cfg.ctrlTimeout)
	lastLog := time.Now()
	for {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		ready := 0
		for i := range list.Items {
			if isStoreReady(&list.Items[i]) {
				ready++
			}
		}
		el := time.Since(start).Seconds()
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
			b.problem("controller phase: only %d of %d stores Ready after %s", ready, n, b.cfg.ctrlTimeout)
			break
		}
		if time.Since(lastLog) > 30*time.Second {
			b.logf("controller: %d of %d stores Ready after %.0f s", ready, n, el)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	elapsed := time.Since(start).Seconds()
	cpu1, err := b.procs.cpuOf(ctrlProcs)
	if err != nil {
		return nil, err
	}
	res.CPUSeconds = map[string]float64{}
	for _, p := range ctrlProcs {
		if cpu0[p] >= 0 && cpu1[p] >= 0 {
			res.CPUSeconds[p] = cpu1[p] - cpu0[p]
		}
	}
	after, err := b.counters(ctx)
	if err != nil {
		return nil, err
	}
	res.KubeRequests = map[string]float64{}
	for verb, v := range after.requests {
		if d := v - before.requests[verb]; d > 0 {
			res.KubeRequests[verb] = d
		}
	}
	res.Reconciles = after.reconciles["success"] + after.reconciles["error"] - before.reconciles["success"] - before.reconciles["error"]
	res.ReconcileErrors = after.reconciles["error"] - before.reconciles["error"]
	res.ReconcileRate = res.Reconciles / elapsed
	b.logf("controller: %d of %d Ready in %.1f s; %.0f reconciles (%.1f/s)", res.ReadyAtEnd, n, elapsed, res.Reconciles, res.ReconcileRate)
	return res, nil
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

// phaseCounters are the counters the phase reports as differences.
type phaseCounters struct {
	reconciles map[string]float64 // the controller's, by result
	requests   map[string]float64 // kube-apiserver's, by verb
}

func (b *bench) counters(ctx context.Context) (phaseCounters, error) {
	var c phaseCounters
	var err error
	if c.reconciles, err = b.reconciles(ctx); err != nil {
		return c, err
	}
	c.requests, err = b.kubeRequests(ctx)
	return c, err
}

// reconciles reads the controller's reconcile counters by result.
func (b *bench) reconciles(ctx context.Context) (map[string]float64, error) {
	body, err := b.raw[pKVSAPI].metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, result := range []string{"success", "error"} {
		v, err := metricValue(body, fmt.Sprintf(`%s{result="%s"}`, metricReconc, result))
		if err == nil {
			out[result] = v
		}
	}
	return out, nil
}

// kubeRequests sums kube-apiserver's apiserver_request_total by verb.
func (b *bench) kubeRequests(ctx context.Context) (map[string]float64, error) {
	body, err := b.raw[pKubeAPI].metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		_, labels, _ := strings.Cut(line, "{")
		labels, value, _ := strings.Cut(labels, "} ")
		var verb string
		for _, kv := range strings.Split(labels, ",") {
			if v, ok := strings.CutPrefix(kv, `verb="`); ok {
				verb = strings.TrimSuffix(v, `"`)
			}
		}
		var f float64
		if _, err := fmt.Sscan(value, &f); err == nil && verb != "" {
			out[verb] += f
		}
	}
	return out, nil
}

// clientSettings states the client rate limits in play, from the processes'
// command lines (defaults when a flag is absent).
func clientSettings(p procs) string {
	var parts []string
	for _, s := range []struct{ proc, def string }{
		{"kvstore-apiserver", "kvstore-apiserver controller --kube-api-qps=50 --kube-api-burst=100 --concurrent-keyvaluestore-syncs=5 (defaults)"},
		{"kube-controller-manager", "kube-controller-manager --kube-api-qps=20 --kube-api-burst=30 (defaults)"},
		{"kube-scheduler", "kube-scheduler QPS 50, burst 100 (defaults)"},
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
	pid, err := p.pid(proc)
	if err != nil {
		return ""
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
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
	c := b.ctrl
	if c == nil {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### Controller scale: %d stores of %d replicas (%d Pods on %d kwok Nodes), from the first create to all Ready\n\n", c.Stores, c.Replicas, c.Stores*c.Replicas, c.Nodes)
	fmt.Fprintf(&sb, "Median of %d repetitions, each in a fresh namespace. ", c.Repetitions)
	fmt.Fprintf(&sb, "Created through the aggregator at concurrency %d; a store counts as Ready when its status says phase Ready for its current generation with every replica ready. Client limits: %s.\n\n", ctrlCreateConc, c.ClientSettings)
	sb.WriteString("| metric | value |\n|---|--:|\n")
	fmt.Fprintf(&sb, "| creates done | %.1f s |\n", c.CreateSeconds)
	for _, k := range []string{"50%", "90%", "100%"} {
		if v, ok := c.ReadySeconds[k]; ok {
			fmt.Fprintf(&sb, "| %s of the stores Ready | %.1f s |\n", k, v)
		} else {
			fmt.Fprintf(&sb, "| %s of the stores Ready | not reached (%d Ready at the end) |\n", k, c.ReadyAtEnd)
		}
	}
	fmt.Fprintf(&sb, "| reconciles (errors) | %.0f (%.0f) |\n", c.Reconciles, c.ReconcileErrors)
	fmt.Fprintf(&sb, "| reconcile rate | %.1f /s |\n", c.ReconcileRate)
	fmt.Fprintf(&sb, "| reconciles per store | %.1f |\n", c.Reconciles/float64(max(c.Stores, 1)))
	verbs := make([]string, 0, len(c.KubeRequests))
	for v := range c.KubeRequests {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	for _, v := range verbs {
		if v == "WATCH" || v == "CONNECT" {
			continue
		}
		fmt.Fprintf(&sb, "| kube-apiserver %s requests (all clients) | %.0f |\n", v, c.KubeRequests[v])
	}
	for _, p := range ctrlProcs {
		if v, ok := c.CPUSeconds[p]; ok {
			fmt.Fprintf(&sb, "| CPU %s | %.1f s |\n", p, v)
		}
	}
	return sb.String()
}
