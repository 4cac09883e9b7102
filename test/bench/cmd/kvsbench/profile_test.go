package main

import (
	"slices"
	"testing"
)

// The profile phase draws its order among the columns it profiles only, so
// that the report's order line does not list columns it skipped.
func TestProfiledKeepsTheColumnsWithAPath(t *testing.T) {
	var ts []target
	for _, col := range columns {
		ts = append(ts, newCRTarget(col, "ns", nil))
	}
	var got []string
	for _, t := range profiled(ts) {
		got = append(got, t.ID())
	}
	want := []string{colA, colBJ, colBP, colS}
	if !slices.Equal(got, want) {
		t.Errorf("profiled columns = %v, want %v", got, want)
	}
	if len(ts) != len(columns) {
		t.Errorf("profiled changed its argument: %d columns left of %d", len(ts), len(columns))
	}
}
