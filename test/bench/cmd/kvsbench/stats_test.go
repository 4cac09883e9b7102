package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestRunOpsCallsEachIndexOnce: n calls, each index once across the
// workers, failures counted apart from the timed calls.
func TestRunOpsCallsEachIndexOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	boom := errors.New("boom")
	r := runOps(context.Background(), 50, 4, time.Second, func(_ context.Context, i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		if i%10 == 0 {
			return boom
		}
		return nil
	})
	if len(seen) != 50 {
		t.Fatalf("%d distinct indexes called, want 50", len(seen))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("index %d called %d times", i, n)
		}
	}
	if len(r.lat) != 45 || r.errs != 5 || !errors.Is(r.firstErr, boom) {
		t.Errorf("got %d timed calls, %d errors (first %v); want 45, 5, boom", len(r.lat), r.errs, r.firstErr)
	}
}

// TestRunForStopsAfterItsWindow: no call starts after the window (with
// slack for a loaded machine between the check and the call), and every
// call that started is counted.
func TestRunForStopsAfterItsWindow(t *testing.T) {
	start := time.Now()
	var mu sync.Mutex
	var late, calls int
	r := runFor(context.Background(), 50*time.Millisecond, 3, func(context.Context, int) error {
		mu.Lock()
		calls++
		if time.Since(start) > 550*time.Millisecond {
			late++
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return nil
	})
	if late != 0 {
		t.Errorf("%d calls started after the window", late)
	}
	if calls == 0 || len(r.lat) != calls {
		t.Errorf("%d calls, %d timed", calls, len(r.lat))
	}
}
