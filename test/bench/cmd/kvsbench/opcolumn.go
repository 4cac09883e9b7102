package main

// The A+op column: the CRD measured exactly like A, with the
// controller-runtime operator of test/bench/operator running, so that each
// side's API latencies and CPU per create include its own controller (B's
// always include kvstore-apiserver's embedded one).
//
// What the operator does with the bench's paused custom resources (its
// Reconcile and observe): at the first reconcile it adds its finalizer
// (bench.kvstore.io/teardown: one update), creates no workloads (spec.paused),
// and writes status once (phase Pending, condition Progressing=False reason
// Paused, observedGeneration); a new store's first phase sends no Event
// (since 87fa966, as kvstore-apiserver's). Two writes of the object per
// create, where kvstore-apiserver's controller makes one status write (its
// finalizer is added by the server's strategy in the create itself). Every
// later update of the object is one more reconcile (controller-runtime's
// default For() has no predicate) that writes nothing when the status is
// unchanged. A DELETE starts its teardown, which finds no workloads, takes
// no final backup (the bench stores have no backup spec) and removes its
// finalizer (one more update); the bench's own kvstore.io/teardown finalizer
// keeps the object until the cleanup patches it away, as for A.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// colAop is the CRD with the operator running.
const colAop = "A+op"

// opTarget is the CRD column with the operator running while it is measured:
// begin starts the operator (and waits until it leads), end stops it by PID.
// Nothing else runs it in the ops and watch phases, so A stays a CRD with no
// controller.
type opTarget struct {
	*crTarget
	b *bench
}

var _ target = &opTarget{}

// addOperatorColumn makes the A+op target, with a connection of its own.
func (b *bench) addOperatorColumn(kubeCfg *rest.Config) (*opTarget, error) {
	dyn, err := dynamic.NewForConfig(b.wire(colAop, kubeCfg, false))
	if err != nil {
		return nil, err
	}
	return &opTarget{crTarget: newCRTarget(colAop, b.cfg.namespace, dyn.Resource(crGVR).Namespace(b.cfg.namespace)), b: b}, nil
}

// wantsOperatorColumn says whether a phase of this run measures A+op.
func (c config) wantsOperatorColumn() bool {
	return c.columns[colAop] && (c.phases["ops"] || c.phases["watch"])
}

// begin starts the operator for the column and waits until its caches are
// synced, so that nothing timed pays for its start: its controller has
// reconciled something (it reconciles only after its caches sync, and the
// quiesce namespace always holds one custom resource), then b.cfg.idle more.
func (t *opTarget) begin(ctx context.Context) error {
	op := t.b.operator
	if op == nil {
		return fmt.Errorf("%s: the operator is not prepared", colAop)
	}
	if err := op.start(ctx); err != nil {
		return fmt.Errorf("%s: %w", colAop, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := op.controller(ctx)
		if err == nil && total(r.reconciles) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the operator reconciled nothing within 2 minutes of its start (last error: %v)", colAop, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(t.b.cfg.idle):
	}
	return nil
}

// end stops the operator (SIGTERM by PID; it releases its Lease).
func (t *opTarget) end(ctx context.Context) error {
	if t.b.operator == nil {
		return nil
	}
	return t.b.operator.stop(ctx)
}

// settle waits until the operator has reconciled every custom resource of
// set: its finalizer added and its status written (phase Pending for a paused
// store), the counterpart of kvstore-apiserver's settle. It lists once and
// then follows a watch: a CRD has no field selector on status.phase, and
// listing every object of the set over and over would cost kube-apiserver
// more CPU than the operator's writes it waits for (the phase's CPU window
// includes the wait).
func (t *opTarget) settle(ctx context.Context, set string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: labelSet + "=" + set}
	pending := map[string]bool{}
	objects := 0
	defer func() { t.logOperatorWork(context.WithoutCancel(ctx), set, objects) }()
	for {
		l, err := t.b.crClient.List(ctx, sel)
		if err != nil {
			return fmt.Errorf("%s: list set %s: %w (%d not reconciled by the operator)", colAop, set, err, len(pending))
		}
		clear(pending)
		objects = len(l.Items)
		for i := range l.Items {
			if !operatorDone(&l.Items[i]) {
				pending[l.Items[i].GetName()] = true
			}
		}
		if len(pending) == 0 {
			return nil
		}
		opts := sel
		opts.ResourceVersion = l.GetResourceVersion()
		w, err := t.b.crClient.Watch(ctx, opts)
		if err != nil {
			return fmt.Errorf("%s: watch set %s: %w (%d not reconciled by the operator)", colAop, set, err, len(pending))
		}
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Error {
				break // relist
			}
			if ev.Type == watch.Deleted || operatorDone(o) {
				delete(pending, o.GetName())
			}
			if len(pending) == 0 {
				break
			}
		}
		w.Stop()
		if len(pending) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: the operator has not reconciled %d custom resources of set %s after 10 minutes", colAop, len(pending), set)
		}
	}
}

// operatorFinalizer is the operator's (benchv1alpha1.TeardownFinalizer, not
// imported: the operator is a module of its own).
const operatorFinalizer = "bench.kvstore.io/teardown"

// operatorDone says the operator has reconciled o: its finalizer is on it
// and its status carries a phase.
func operatorDone(o *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
	if phase == "" {
		return false
	}
	for _, f := range o.GetFinalizers() {
		if f == operatorFinalizer {
			return true
		}
	}
	return false
}

// needsSettle says whether a column's creates cause controller writes that
// the phase waits for before it reads or updates the objects.
func needsSettle(t target) bool {
	_, op := t.(*opTarget)
	return isKVS(t) || op
}

// settleColumn waits for the column's controller, if it has one.
func (b *bench) settleColumn(ctx context.Context, t target, set, minVersion string) error {
	switch t := t.(type) {
	case *kvsTarget:
		return b.settle(ctx, set, minVersion)
	case *opTarget:
		return t.settle(ctx, set)
	}
	return nil
}

// beginColumn and endColumn start and stop what a column needs running
// while it is measured (the operator, for A+op).
func (b *bench) beginColumn(ctx context.Context, t target) error {
	if op, ok := t.(*opTarget); ok {
		return op.begin(ctx)
	}
	return nil
}

func (b *bench) endColumn(ctx context.Context, t target) error {
	if op, ok := t.(*opTarget); ok {
		return op.end(ctx)
	}
	return nil
}

// prepareOperatorColumn gives the operator its identity when A+op is
// measured and the controller phase has not done it already.
func (b *bench) prepareOperatorColumn(ctx context.Context, stack *framework.Stack) error {
	if !b.cfg.wantsOperatorColumn() || b.operator != nil {
		return nil
	}
	b.operator = &operatorSystem{b: b, bin: b.cfg.operatorBin}
	return b.operator.credentials(ctx, stack)
}

// cleanupOperatorColumn stops the operator if a failed column left it
// running, and removes its identity if the controller phase will not.
func (b *bench) cleanupOperatorColumn(ctx context.Context) {
	if b.operator == nil {
		return
	}
	if err := b.operator.stop(ctx); err != nil {
		b.logf("cleanup: operator: %v", err)
	}
	if len(b.systems) == 0 {
		if err := b.operator.removeCredentials(ctx); err != nil {
			b.logf("cleanup: operator credentials: %v", err)
		}
	}
}

// operatorChecks judge the targets that compare each side with its
// controller running: B (our controller always runs) against A+op.
func (b *bench) operatorChecks(mk func(float64, func(float64) bool, string) side, atLeast, atMost func(float64) func(float64) bool) []check {
	v := b.value
	a, bp, bj := v("cpu c16 creates total", colAop), v("cpu c16 creates total", colBP), v("cpu c16 creates total", colBJ)
	cs := []check{{Target: "CPU per 1000 creates with each side's controller: etcds + kube-apiserver + kvstore-apiserver vs etcd + kube-apiserver + the operator (c=16 run)", Want: "≤ CRD + operator's",
		Best: mk(bp/a, atMost(1), fmt.Sprintf("B proto %.2f vs A+op %.2f CPU s = %.2f×", bp, a, bp/a)),
		Like: mk(bj/a, atMost(1), fmt.Sprintf("B json %.2f vs A+op %.2f CPU s = %.2f×", bj, a, bj/a)),
	}}
	a, bp, bj = v("create c16 rate", colAop), v("create c16 rate", colBP), v("create c16 rate", colBJ)
	cs = append(cs, check{Target: "create rate at concurrency 16 through the aggregator, each side's controller running", Want: "≥ CRD + operator's", Higher: true,
		Best: mk(bp/a, atLeast(1), fmt.Sprintf("B proto %s vs A+op %s ops/s = %.2f×", format(bp, "ops/s"), format(a, "ops/s"), bp/a)),
		Like: mk(bj/a, atLeast(1), fmt.Sprintf("B json %s vs A+op %s ops/s = %.2f×", format(bj, "ops/s"), format(a, "ops/s"), bj/a)),
	})
	return cs
}

// logOperatorWork logs what the operator has done so far per object of set
// (it was started for the column, so its counters hold little else).
func (t *opTarget) logOperatorWork(ctx context.Context, set string, n int) {
	op := t.b.operator
	if op == nil || n == 0 {
		return
	}
	r, err := op.controller(ctx)
	if err != nil {
		return
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(r.requests)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", m, r.requests[m]/float64(n)))
	}
	t.b.logf("%s: set %s: since its start the operator made %.2f reconciles (%.2f errors) and sent %s requests per object", colAop, set,
		total(r.reconciles)/float64(n), r.reconciles["error"]/float64(n), strings.Join(parts, ", "))
}
