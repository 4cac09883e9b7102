package main

import "testing"

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
