package main

import (
	"maps"
	"slices"
	"testing"
)

// Only the very last run of the controller phase may leave its namespace
// for the cleanup: in the last repetition the first system's stores, Pods
// and claims used to stay while the second system ran beside them.
func TestOnlyTheLastRunKeepsItsNamespace(t *testing.T) {
	const reps, systems = 3, 2
	kept := 0
	for rep := 1; rep <= reps; rep++ {
		for i := 0; i < systems; i++ {
			if lastRun(rep, reps, i, systems) {
				kept++
				if rep != reps || i != systems-1 {
					t.Errorf("run %d of repetition %d keeps its namespace", i, rep)
				}
			}
		}
	}
	if kept != 1 {
		t.Errorf("%d runs keep their namespace, want 1", kept)
	}
}

func TestBusiestQueues(t *testing.T) {
	results := []*controllerResult{
		{KCMWorkSeconds: map[string]float64{"statefulset": 5, "claims": 1, "volumes": 2}},
		{KCMWorkSeconds: map[string]float64{"statefulset": 3, "claims": 7, "endpoint": 2}},
	}
	if got, want := busiestQueues(results, 3), []string{"claims", "statefulset", "endpoint"}; !slices.Equal(got, want) {
		t.Errorf("busiestQueues = %v, want %v (by the most any result spent, ties by name)", got, want)
	}
	if got := busiestQueues(results, 10); len(got) != 4 {
		t.Errorf("busiestQueues(10) = %v, want all 4 queues", got)
	}
	if got := busiestQueues([]*controllerResult{{}}, 3); len(got) != 0 {
		t.Errorf("busiestQueues without kube-controller-manager's figures = %v, want none", got)
	}
}

// kube's counters: a key one run saw no change of counts as 0 there, and a
// run that could not read the counters is left out of their median.
func TestMedianOfKubeCounters(t *testing.T) {
	runs := []*controllerResult{
		{SchedulerAttempts: map[string]float64{"scheduled": 2}},
		{SchedulerAttempts: map[string]float64{"scheduled": 4, "unschedulable": 6}},
		{},
	}
	got := medianResult(runs).SchedulerAttempts
	want := map[string]float64{"scheduled": 3, "unschedulable": 3}
	if !maps.Equal(got, want) {
		t.Errorf("median of the scheduler's attempts = %v, want %v", got, want)
	}
}
