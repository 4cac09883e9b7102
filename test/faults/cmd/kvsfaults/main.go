// Command kvsfaults runs the fault-injection scenarios on the local stack
// (hack/local-up.sh) while a checked workload runs, and writes a JSON and a
// Markdown report. It reuses a running stack, or brings one up and tears it
// down afterwards; scenarios that need a stack of their own (a three-member
// etcd) run only in the latter case. Hold /tmp/kvs-stack.lock while it runs
// on a shared machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kvstore-io/kvstore-apiserver/test/faults/scenario"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

func main() {
	var (
		short     = flag.Bool("short", false, "shorter workload phases (the version make test runs)")
		only      = flag.String("scenarios", "", "comma-separated scenario names (default: all): "+names())
		out       = flag.String("out", filepath.Join(framework.RepoRoot(), "_output", "faults"), "directory for faults.json, faults.md and the histories")
		knownFlag = flag.String("known-findings", "", "comma-separated scenarios whose findings are documented as found, fix pending: reported, but they do not fail the run")
	)
	flag.Parse()
	// Absolute: the stack's kubeconfigs name certificate files by path, and
	// kubectl resolves relative ones against the kubeconfig's directory.
	if abs, err := filepath.Abs(*out); err == nil {
		*out = abs
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	reports, err := run(ctx, *short, split(*only), split(*knownFlag), *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvsfaults:", err)
	}
	if werr := scenario.WriteReports(*out, reports, time.Since(start)); werr != nil {
		fmt.Fprintln(os.Stderr, "kvsfaults: writing reports:", werr)
		os.Exit(1)
	}
	fmt.Print(scenario.Markdown(reports, time.Since(start)))
	fmt.Printf("\nreports: %s, %s\n", filepath.Join(*out, "faults.json"), filepath.Join(*out, "faults.md"))
	failed := err != nil
	for _, r := range reports {
		failed = failed || !r.Passed
	}
	if failed {
		os.Exit(1)
	}
}

func names() string {
	var n []string
	for _, s := range scenario.All() {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func run(ctx context.Context, short bool, only, known []string, out string) ([]*scenario.Report, error) {
	var shared, own []scenario.Scenario
	for _, s := range scenario.All() {
		if len(only) > 0 && !slices.Contains(only, s.Name) {
			continue
		}
		if s.Own {
			own = append(own, s)
		} else {
			shared = append(shared, s)
		}
	}
	for _, n := range only {
		if !strings.Contains(","+names()+",", ","+n+",") {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", n, names())
		}
	}
	var reports []*scenario.Report
	mark := func(r *scenario.Report) {
		if slices.Contains(known, r.Name) && len(r.Findings) > 0 {
			r.Known = true
			r.Passed = r.Error == "" && len(r.Violations) == 0 && r.WritesLost == 0 && r.Linearizability != "Illegal"
		}
		reports = append(reports, r)
	}

	stack, err := framework.EnsureStack(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	owned := stack.Owned()
	if len(shared) > 0 {
		env, err := scenario.NewEnv(stack, os.Stderr, short)
		if err != nil {
			stack.Stop(context.Background(), os.Stderr)
			return nil, err
		}
		startedB := !env.Alive(scenario.B.Name)
		if err := env.EnsureReplicaB(ctx); err != nil {
			stack.Stop(context.Background(), os.Stderr)
			return nil, err
		}
		for _, s := range shared {
			if ctx.Err() != nil {
				break
			}
			mark(s.Run(ctx, env, out))
		}
		if startedB && !owned {
			// Leave a reused stack as it was found.
			_ = env.LocalUp(context.Background(), "stop-kvstore", scenario.B.Name)
		}
	}
	stack.Stop(context.Background(), os.Stderr)

	for _, s := range own {
		if !owned {
			reports = append(reports, &scenario.Report{Name: s.Name, Title: s.Title, Skipped: "needs a stack of its own; a running stack was reused", Passed: true})
			continue
		}
		if ctx.Err() != nil {
			break
		}
		r, err := ownStack(ctx, s, short, out)
		if err != nil {
			return reports, err
		}
		mark(r)
	}
	return reports, ctx.Err()
}

// ownStack runs s on a fresh three-member-etcd stack under out.
func ownStack(ctx context.Context, s scenario.Scenario, short bool, out string) (*scenario.Report, error) {
	dir := filepath.Join(out, "local-"+s.Name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	os.Setenv("KVSTORE_LOCAL_DIR", dir)
	os.Setenv("KVSTORE_ETCD_MEMBERS", "3")
	defer os.Unsetenv("KVSTORE_LOCAL_DIR")
	defer os.Unsetenv("KVSTORE_ETCD_MEMBERS")
	stack, err := framework.EnsureStack(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	defer stack.Stop(context.Background(), os.Stderr)
	env, err := scenario.NewEnv(stack, os.Stderr, short)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, env, out), nil
}
