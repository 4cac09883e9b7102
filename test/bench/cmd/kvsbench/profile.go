package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The profile phase answers "what is a request made of" on each path: for
// every column it sends creates, then GETs of what it created, at
// concurrency 16 for a fixed time while it takes a CPU profile of every API
// server on the column's path, and records CPU milliseconds per request of
// each of them. The profiles are kept (profiles/<column>-<op>-<process>.pprof
// in the output directory) for `go tool pprof`; docs/benchmarks.md reads
// them.

// pathProcs are the API servers a column's requests pass through, for the
// columns the phase profiles. B′ is left out: kvstore-apiserver's share of a
// request is the same with or without the hop, and kube-apiserver's share
// of B is the hop's own.
var pathProcs = map[string][]string{
	colA:  {pKubeAPI},
	colBJ: {pKubeAPI, pKVSAPI},
	colBP: {pKubeAPI, pKVSAPI},
	colS:  {pKubeAPI, pSample},
}

// profiled are the columns of ts the phase profiles (those pathProcs
// names), so that the report's order line lists only them.
func profiled(ts []target) []target {
	return slices.DeleteFunc(slices.Clone(ts), func(t target) bool { return len(pathProcs[t.ID()]) == 0 })
}

// profileOp is one operation the phase profiles: what a worker calls, given
// the column's target, the batch set and the call's index; seen records the
// versions it writes.
type profileOp struct {
	name string
	call func(ctx context.Context, t target, set string, i int, seen *maxVersion) error
}

var profileOps = []profileOp{
	{"create", func(ctx context.Context, t target, set string, i int, seen *maxVersion) error {
		v, err := t.Create(ctx, objName(set, i), set)
		seen.see(v)
		return err
	}},
	// GETs cycle over the objects the creates left (at least one exists:
	// the phase stops if none was created).
	{"get", func(ctx context.Context, t target, set string, i int, _ *maxVersion) error {
		return t.Get(ctx, objName(set, i))
	}},
}

// profileWindow is how long each operation runs; the profile covers all of
// it but the first and last second.
func (b *bench) profileWindow() time.Duration {
	if b.cfg.quick {
		return 4 * time.Second
	}
	return 20 * time.Second
}

func (b *bench) profilePhase(ctx context.Context) error {
	dir := filepath.Join(b.cfg.out, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range b.order("profile", 1, profiled(b.targets)) {
		procs := pathProcs[t.ID()]
		set := "p" + strings.ToLower(colSlug(t.ID()))
		_ = t.Get(ctx, "warm-up")
		created := 0
		for _, op := range profileOps {
			b.logf("profile: %s: %s at concurrency 16 for %s", t.ID(), op.name, b.profileWindow())
			var written maxVersion
			n, err := b.profileOne(ctx, t, op, set, created, procs, dir, &written)
			if err != nil {
				return err
			}
			if op.name != "create" {
				continue
			}
			if created = n; created == 0 {
				return fmt.Errorf("profile: %s: no object created", t.ID())
			}
			// Our controller writes each new store's status (at its client's
			// QPS, so for a while after the creates): the GETs are profiled
			// once it is done, as the ops phase times them.
			if isKVS(t) {
				if err := b.settle(ctx, set, written.String()); err != nil {
					return err
				}
			}
		}
		if err := b.cleanup(ctx, t, set); err != nil {
			return err
		}
	}
	return nil
}

// profileOne runs op for the window while profiling procs, and records the
// rate and each process's CPU per request. It returns how many calls
// succeeded. Calls of get cycle over the first created objects.
func (b *bench) profileOne(ctx context.Context, t target, op profileOp, set string, created int, procs []string, dir string, seen *maxVersion) (int, error) {
	window := b.profileWindow()
	seconds := int((window - 2*time.Second) / time.Second)
	var wg sync.WaitGroup
	profiles := make([][]byte, len(procs))
	errs := make([]error, len(procs))
	for i, p := range procs {
		raw := b.raw[p]
		if raw == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			r, err := raw.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), "", false)
			profiles[i], errs[i] = r.body, err
		}()
	}
	before, err := b.procs.cpuOf(procs)
	if err != nil {
		return 0, err
	}
	calls := runFor(ctx, window, 16, func(ctx context.Context, i int) error {
		if created > 0 {
			i %= created
		}
		return op.call(ctx, t, set, i, seen)
	})
	after, err := b.procs.cpuOf(procs)
	if err != nil {
		return 0, err
	}
	wg.Wait()
	if calls.errs > 0 {
		b.problem("profile %s %s: %d calls failed, first: %v", t.ID(), op.name, calls.errs, calls.firstErr)
	}
	if len(calls.lat) == 0 {
		return 0, nil
	}
	metric := "profile " + op.name + " c16"
	b.figs.add(metric+" rate", t.ID(), "ops/s", calls.opsPerSec())
	for i, p := range procs {
		b.figs.add(metric+" cpu ms/request "+p, t.ID(), "ms", 1000*(after[p]-before[p])/float64(len(calls.lat)))
		if errs[i] != nil {
			b.problem("profile %s %s: %s: %v", t.ID(), op.name, p, errs[i])
			continue
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.pprof", colSlug(t.ID()), op.name, p))
		if err := os.WriteFile(name, profiles[i], 0o644); err != nil {
			b.problem("profile %s: %v", name, err)
		}
	}
	return len(calls.lat), nil
}

// profileRows are the profile phase's figures: rate, and CPU per request of
// each server on the path.
func (b *bench) profileRows() []row {
	var rows []row
	for _, op := range profileOps {
		metric := "profile " + op.name + " c16"
		rows = append(rows, row{op.name + " rate", metric + " rate", "ops/s", false})
		for _, p := range profiledServers() {
			rows = append(rows, row{op.name + ": CPU per request, " + p, metric + " cpu ms/request " + p, "ms", true})
		}
	}
	return rows
}

// profiledServers are the processes pathProcs names, each once.
func profiledServers() []string {
	var out []string
	for _, col := range columns {
		for _, p := range pathProcs[col] {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

const profileIntro = "Each column in turn (order drawn at random): creates for the window at concurrency 16, then GETs of the created objects for the window, while every API server on the column's path is CPU-profiled (profiles/*.pprof beside this report; `go tool pprof -top` reads them). CPU per request is the process's CPU time over the window divided by the requests served; kvstore-apiserver's controller writes each new store's status at its client's rate limit (50/s), so during the create window it serves some of those writes too (the rest come after it; GETs start once all are done). One run, not repeated.\n\n"
