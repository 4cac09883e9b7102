package main

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// figure is one measured quantity: a value per repetition and their median.
type figure struct {
	Unit   string    `json:"unit"`
	Reps   []float64 `json:"reps"`
	Median float64   `json:"median"`
}

// figures holds every figure keyed by metric and column.
type figures struct {
	mu sync.Mutex
	m  map[string]map[string]*figure // metric → column → figure
}

func newFigures() *figures { return &figures{m: map[string]map[string]*figure{}} }

func (f *figures) add(metric, column, unit string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cols := f.m[metric]
	if cols == nil {
		cols = map[string]*figure{}
		f.m[metric] = cols
	}
	fig := cols[column]
	if fig == nil {
		fig = &figure{Unit: unit}
		cols[column] = fig
	}
	fig.Reps = append(fig.Reps, v)
	fig.Median = median(fig.Reps)
}

// get returns the median of a figure, if it was measured.
func (f *figures) get(metric, column string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fig := f.m[metric][column]
	if fig == nil || len(fig.Reps) == 0 {
		return 0, false
	}
	return fig.Median, true
}

// span returns the smallest and largest repetition of a figure and how many
// there were.
func (f *figures) span(metric, column string) (lo, hi float64, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fig := f.m[metric][column]
	if fig == nil || len(fig.Reps) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	lo, hi = fig.Reps[0], fig.Reps[0]
	for _, v := range fig.Reps {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi, len(fig.Reps)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank percentile of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	i = min(max(i, 0), len(sorted)-1)
	return ms(sorted[i])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// opRun is the outcome of n calls of one operation by conc workers.
type opRun struct {
	lat      []time.Duration // sorted, successful calls only
	wall     time.Duration
	errs     int
	firstErr error
}

func (r opRun) opsPerSec() float64 { return float64(len(r.lat)) / r.wall.Seconds() }

// runOps calls fn for i in [0,n) from conc goroutines, each call bounded by
// perCall, and times every call.
func runOps(ctx context.Context, n, conc int, perCall time.Duration, fn func(ctx context.Context, i int) error) opRun {
	return runCalls(ctx, conc, perCall, n, func(i int) bool { return i < n }, fn)
}

// runFor calls fn with increasing i from conc goroutines until d has
// passed; calls in flight then finish (they are not cancelled, so none
// fails for being cut off).
func runFor(ctx context.Context, d time.Duration, conc int, fn func(ctx context.Context, i int) error) opRun {
	stop := time.Now().Add(d)
	return runCalls(ctx, conc, perCall, 0, func(int) bool { return time.Now().Before(stop) }, fn)
}

// runCalls calls fn with increasing i from conc goroutines while more(i)
// holds, each call bounded by perCall, and times every call. expected is
// how many calls are likely in all (0: unknown); each worker's latencies
// are preallocated for its share.
func runCalls(ctx context.Context, conc int, perCall time.Duration, expected int, more func(i int) bool, fn func(ctx context.Context, i int) error) opRun {
	var (
		next     atomic.Int64
		r        opRun
		wg       sync.WaitGroup
		perWork  = make([][]time.Duration, conc)
		failures = make([]error, conc)
		errCount = make([]int, conc)
	)
	start := time.Now()
	for w := range conc {
		perWork[w] = make([]time.Duration, 0, expected/conc+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if !more(i) || ctx.Err() != nil {
					break
				}
				cctx, cancel := context.WithTimeout(ctx, perCall)
				t0 := time.Now()
				err := fn(cctx, i)
				d := time.Since(t0)
				cancel()
				if err != nil {
					errCount[w]++
					if failures[w] == nil {
						failures[w] = err
					}
					continue
				}
				perWork[w] = append(perWork[w], d)
			}
		}()
	}
	wg.Wait()
	r.wall = time.Since(start)
	for w := range perWork {
		r.lat = append(r.lat, perWork[w]...)
		r.errs += errCount[w]
		if r.firstErr == nil {
			r.firstErr = failures[w]
		}
	}
	sortDurations(r.lat)
	return r
}
