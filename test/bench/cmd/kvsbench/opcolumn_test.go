package main

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOperatorDoneNeedsFinalizerAndStatus(t *testing.T) {
	o := newCR("ns", "x", "s")
	if operatorDone(o) {
		t.Error("a fresh custom resource counts as reconciled")
	}
	o.SetFinalizers(append(o.GetFinalizers(), operatorFinalizer))
	if operatorDone(o) {
		t.Error("reconciled without a status")
	}
	if err := unstructured.SetNestedField(o.Object, "Pending", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if !operatorDone(o) {
		t.Error("finalizer and phase, yet not reconciled")
	}
}

func TestOperatorColumnIsSettledAndCharged(t *testing.T) {
	b := &bench{}
	aop := &opTarget{crTarget: newCRTarget(colAop, "ns", nil), b: b}
	if !needsSettle(aop) || needsSettle(newCRTarget(colA, "ns", nil)) {
		t.Error("A+op must wait for its operator; A has nothing to wait for")
	}
	if got := serverProcs(colAop); !slices.Equal(got, []string{pEtcdKube, pKubeAPI, pOperator}) {
		t.Errorf("A+op's CPU is charged to %v", got)
	}
	// The operator's CPU counts only when it ran through the whole window.
	at := time.Now()
	a := cpuSnap{at: at, pids: map[string]int{pOperator: 7}, secs: map[string]float64{pOperator: 1}}
	z := cpuSnap{at: at.Add(time.Second), pids: map[string]int{pOperator: 7}, secs: map[string]float64{pOperator: 3}}
	for _, p := range measuredProcs {
		a.pids[p], z.pids[p] = 1, 1
	}
	d, err := diffCPU(a, z, nil)
	if err != nil || d.Net[pOperator] != 2 {
		t.Errorf("operator CPU %v (%v), want 2", d.Net[pOperator], err)
	}
	z.pids[pOperator] = 8
	if d, _ := diffCPU(a, z, nil); func() bool { _, ok := d.Net[pOperator]; return ok }() {
		t.Error("a restarted operator is charged")
	}
}
