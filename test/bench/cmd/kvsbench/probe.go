package main

import (
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// machineProbe is how fast the machine itself was just before a run of the
// controller phase, on a quiet stack: a fixed single-threaded CPU workload,
// and small synced writes (what etcd waits for on every commit). Both are
// shared by every process of the stack, so if the system measured second is
// slower because the machine is, these move with it.
type machineProbe struct {
	// CPUWorkMs is the fastest of probeCPURounds runs of a fixed SHA-256
	// workload (probeCPUPasses over probeCPUBytes; the fastest, because the
	// others may have shared a core).
	CPUWorkMs float64 `json:"cpu_work_ms"`
	// FsyncP50Ms and FsyncP99Ms are the latency of a 4 KiB write followed by
	// fsync, probeSyncs times, in the output directory's filesystem.
	FsyncP50Ms float64 `json:"fsync_p50_ms"`
	FsyncP99Ms float64 `json:"fsync_p99_ms"`
}

const (
	probeCPURounds = 3
	probeCPUBytes  = 64 << 20
	probeCPUPasses = 4
	probeSyncs     = 100
)

// probeMachine measures a machineProbe, writing its scratch file in dir.
func probeMachine(dir string) (*machineProbe, error) {
	syncs, err := probeFsync(dir, probeSyncs)
	if err != nil {
		return nil, err
	}
	return &machineProbe{
		CPUWorkMs:  ms(probeCPU(probeCPURounds, probeCPUPasses, probeCPUBytes)),
		FsyncP50Ms: percentile(syncs, 50),
		FsyncP99Ms: percentile(syncs, 99),
	}, nil
}

// probeCPU is the fastest of rounds timings of hashing n bytes passes times.
func probeCPU(rounds, passes, n int) time.Duration {
	buf := make([]byte, n)
	best := time.Duration(math.MaxInt64)
	for range rounds {
		start := time.Now()
		for range passes {
			_ = sha256.Sum256(buf)
		}
		best = min(best, time.Since(start))
	}
	return best
}

// probeFsync times n (4 KiB write + fsync) in a scratch file in dir,
// sorted.
func probeFsync(dir string, n int) ([]time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "kvsbench-probe-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	var took []time.Duration
	for range n {
		start := time.Now()
		if _, err := f.Write(page); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("sync %s: %w", filepath.Base(f.Name()), err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took, nil
}
