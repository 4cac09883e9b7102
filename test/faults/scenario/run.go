package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/faults/history"
	"github.com/kvstore-io/kvstore-apiserver/test/faults/workload"
)

// Shape is the workload and the pacing of a scenario.
type Shape struct {
	Clients       int
	RatePerClient float64
	Objects       int
	Watchers      int
	WatchTimeout  time.Duration
	// Warmup runs before the fault, Cooldown after the fault has healed.
	Warmup, Cooldown time.Duration
}

// DefaultShape is the workload of make test-faults; -short halves it.
func (e *Env) DefaultShape() Shape {
	if e.Short {
		return Shape{Clients: 4, RatePerClient: 4, Objects: 12, Watchers: 2, WatchTimeout: 10 * time.Second, Warmup: 3 * time.Second, Cooldown: 3 * time.Second}
	}
	return Shape{Clients: 6, RatePerClient: 5, Objects: 20, Watchers: 2, WatchTimeout: 15 * time.Second, Warmup: 5 * time.Second, Cooldown: 8 * time.Second}
}

// Fault is the body of a scenario: it injects the fault while the workload
// runs, waits for recovery and fills in the report's figures and facts.
// It returns when the fault has healed.
type Fault func(ctx context.Context, s *Session) error

// Session is one scenario run in progress.
type Session struct {
	*Env
	Report    *Report
	Namespace string
	Workload  *workload.Run
	// OutDir receives the history file.
	OutDir string
}

// Run runs fault under a workload of shape and checks the history.
func (e *Env) Run(ctx context.Context, name, title, outDir string, shape Shape, fault Fault) *Report {
	rep := &Report{Name: name, Title: title, Short: e.Short, Start: time.Now().UTC()}
	defer func() {
		rep.Seconds = time.Since(rep.Start).Round(time.Second).Seconds()
		rep.finish()
		e.logf("%s: requests=%d ok=%d failed=%d unknown=%d lost=%d linearizable=%s violations=%d findings=%d error=%q",
			name, rep.Counts.Attempted, rep.Counts.OK, rep.Counts.Failed, rep.Counts.Unknown, rep.WritesLost, rep.Linearizability, len(rep.Violations), len(rep.Findings), rep.Error)
	}()
	e.logf("=== %s: %s", name, title)
	ns := fmt.Sprintf("faults-%s-%d", name, time.Now().Unix())
	rep.Namespace = ns
	if err := e.waitAPI(ctx, 2*time.Minute); err != nil {
		rep.Error = fmt.Sprintf("before the scenario: %v", err)
		return rep
	}
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		rep.Error = fmt.Sprintf("namespace: %v", err)
		return rep
	}
	cfg := workload.Config{
		Rest: e.Rest, Namespace: ns, Clients: shape.Clients, RatePerClient: shape.RatePerClient, Objects: shape.Objects,
		Watchers: shape.Watchers, RequestTimeout: 10 * time.Second, WatchTimeout: shape.WatchTimeout,
	}
	rep.Workload = fmt.Sprintf("%d clients x %.0f req/s, %d live stores (paused, 1 replica), %d watchers (server timeout %s), request timeout %s",
		cfg.Clients, cfg.RatePerClient, cfg.Objects, cfg.Watchers, cfg.WatchTimeout, cfg.RequestTimeout)
	run, err := workload.New(cfg)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	s := &Session{Env: e, Report: rep, Namespace: ns, Workload: run, OutDir: outDir}
	wctx, stop := context.WithCancel(ctx)
	wait := run.Start(wctx)
	sleepCtx(ctx, shape.Warmup)
	faultErr := fault(ctx, s)
	sleepCtx(ctx, shape.Cooldown)
	stop()
	wait()
	if faultErr != nil {
		rep.Error = faultErr.Error()
	}
	// The final reads need the API back, whatever the fault did.
	if err := e.waitAPI(ctx, 2*time.Minute); err != nil && rep.Error == "" {
		rep.Error = fmt.Sprintf("after the scenario: %v", err)
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	if err := run.Finish(fctx); err != nil && rep.Error == "" {
		rep.Error = err.Error()
	}
	cancel()
	h := run.History()
	res := history.Check(h, 60*time.Second)
	rep.Counts, rep.WritesLost, rep.Linearizability, rep.Objects = res.Counts, res.LostWrites, res.Linearizability, res.Objects
	rep.Violations = res.Violations
	if outDir != "" {
		path := filepath.Join(outDir, name+".history.json")
		if err := os.MkdirAll(outDir, 0o755); err == nil && h.Save(path) == nil {
			rep.History = path
		}
	}
	// The namespace goes in the background: its stores' teardown is the
	// controller's business, not the scenario's.
	_ = e.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	return rep
}

// waitAPI waits until a list of stores through the aggregator succeeds.
func (e *Env) waitAPI(ctx context.Context, timeout time.Duration) error {
	var last error
	if Until(ctx, timeout, func() bool {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, last = e.KVS.KvstoreV1alpha1().KeyValueStores("default").List(c, metav1.ListOptions{Limit: 1})
		return last == nil
	}) < 0 {
		return fmt.Errorf("kvstore.io not served within %s: %v", timeout, last)
	}
	return nil
}

// FirstWriteAfter is how long after t the first acknowledged write (that
// started at or after t) returned: when the workload could write again.
func (s *Session) FirstWriteAfter(t time.Time) time.Duration {
	best := time.Duration(-1)
	for _, op := range s.Workload.History().Ops {
		if op.Kind == history.Get || op.Outcome != history.OK || op.Start.Before(t) {
			continue
		}
		if d := op.End.Sub(t); best < 0 || d < best {
			best = d
		}
	}
	return best
}

// WaitFirstWrite waits until a write that started after t succeeds.
func (s *Session) WaitFirstWrite(ctx context.Context, t time.Time, timeout time.Duration) time.Duration {
	if Until(ctx, timeout, func() bool { return s.FirstWriteAfter(t) >= 0 }) < 0 {
		return -1
	}
	return s.FirstWriteAfter(t)
}

// ProbeStore creates a store the controller must run (not paused, one
// replica) through kvs, and returns how long after t it became Ready: the
// controller reconciles again.
func (s *Session) ProbeStore(ctx context.Context, kvs versioned.Interface, name string, t time.Time, timeout time.Duration) time.Duration {
	store := &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		Spec:       v1alpha1.KeyValueStoreSpec{Replicas: ptr.To[int32](1), Image: "registry.example.com/faults/probe:1"},
	}
	if kvs == nil {
		kvs = s.KVS
	}
	created := false
	ready := Until(ctx, timeout, func() bool {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if !created {
			_, err := kvs.KvstoreV1alpha1().KeyValueStores(s.Namespace).Create(c, store, metav1.CreateOptions{})
			created = err == nil
			return false
		}
		got, err := kvs.KvstoreV1alpha1().KeyValueStores(s.Namespace).Get(c, name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1alpha1.PhaseReady
	})
	if ready < 0 {
		s.logf("probe store %s/%s not Ready within %s", s.Namespace, name, timeout)
		return -1
	}
	return time.Since(t)
}

// EnsureReplicaB starts the second replica if it does not run.
func (e *Env) EnsureReplicaB(ctx context.Context) error {
	if e.Alive(B.Name) {
		return nil
	}
	e.logf("starting replica %s on :%d", B.Name, B.Port)
	return e.LocalUp(ctx, "start-kvstore", B.Name, fmt.Sprint(B.Port))
}

// EnsureReplicas restarts whichever of the stack's kvstore replicas is not
// running (as a supervisor would), and reports which it restarted.
func (e *Env) EnsureReplicas(ctx context.Context, replicas ...Replica) ([]string, error) {
	var restarted []string
	for _, r := range replicas {
		if e.Alive(r.Name) {
			continue
		}
		if err := e.Restart(ctx, r.Name); err != nil {
			return restarted, err
		}
		restarted = append(restarted, r.Name)
	}
	return restarted, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
