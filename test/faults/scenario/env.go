// Package scenario injects faults into the local stack of hack/local-up.sh
// while a checked workload runs, and measures recovery. Processes are
// signalled by the PID in the stack's PID files, and only while the process
// still has the command line recorded when local-up started it.
package scenario

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// Replica is one kvstore-apiserver process of the stack. Main is the one
// the APIService reaches (the local overlay's ExternalName service points at
// 127.0.0.1:8443); B runs beside it, on the same etcd and Lease (port 8446:
// the e2e leader-election test uses 8444 and 8445).
type Replica struct {
	Name string
	Port int
}

var (
	Main = Replica{"kvstore-apiserver", 8443}
	B    = Replica{"kvstore-apiserver-b", 8446}
)

// Env is a running local stack and clients of it.
type Env struct {
	Stack *framework.Stack
	Rest  *rest.Config
	Kube  kubernetes.Interface
	KVS   versioned.Interface
	// HTTP reaches the replicas' ports directly with the admin certificate.
	HTTP  *http.Client
	Log   io.Writer
	Short bool
}

// NewEnv connects to s.
func NewEnv(s *framework.Stack, log io.Writer, short bool) (*Env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Timeout = 10 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kvs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(s.CertDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.CertDir, "admin.crt"), filepath.Join(s.CertDir, "admin.key"))
	if err != nil {
		return nil, err
	}
	// 5s: above the server's 2s etcd readiness check, so that /readyz
	// answers (503) rather than times out while etcd is gone.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "localhost", MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
	return &Env{Stack: s, Rest: cfg, Kube: kube, KVS: kvs, HTTP: httpClient, Log: log, Short: short}, nil
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.Log, "%s faults: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// PID returns the PID of component name, only while it is the process
// local-up started.
func (e *Env) PID(name string) (int, error) { return e.Stack.PID(name) }

// Alive says whether component name runs.
func (e *Env) Alive(name string) bool {
	_, err := e.PID(name)
	return err == nil
}

// Signal sends sig to component name.
func (e *Env) Signal(name string, sig syscall.Signal) error {
	pid, err := e.PID(name)
	if err != nil {
		return err
	}
	e.logf("%s (PID %d) <- %s", name, pid, sig)
	return syscall.Kill(pid, sig)
}

// Stop sends SIGSTOP to component name and returns the function that
// sends SIGCONT to that same process, and only to it: once the component
// has been restarted, its new process is left alone.
func (e *Env) Stop(name string) (resume func(), err error) {
	pid, err := e.PID(name)
	if err != nil {
		return func() {}, err
	}
	e.logf("%s (PID %d) <- SIGSTOP", name, pid)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return func() {}, err
	}
	done := false
	return func() {
		if now, err := e.PID(name); done || err != nil || now != pid {
			return
		}
		done = true
		e.logf("%s (PID %d) <- SIGCONT", name, pid)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}, nil
}

// LocalUp runs hack/local-up.sh with args on the stack's state dir.
func (e *Env) LocalUp(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(framework.RepoRoot(), "hack", "local-up.sh"), args...)
	cmd.Env = append(os.Environ(), "KVSTORE_LOCAL_DIR="+e.Stack.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("local-up.sh %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Supervise restarts, as a kubelet would, any of replicas (those running
// now) that exits
// until the returned stop function is called; stop reports which replicas
// it restarted.
func (e *Env) Supervise(ctx context.Context, replicas ...Replica) (stop func() []string) {
	var running []Replica
	for _, r := range replicas {
		if e.Alive(r.Name) {
			running = append(running, r)
		}
	}
	replicas = running
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan []string)
	go func() {
		var restarted []string
		for ctx.Err() == nil {
			for _, r := range replicas {
				if !e.Alive(r.Name) && ctx.Err() == nil {
					e.logf("supervisor: %s exited", r.Name)
					if err := e.Restart(ctx, r.Name); err != nil {
						e.logf("supervisor: %v", err)
					}
					if !slices.Contains(restarted, r.Name) {
						restarted = append(restarted, r.Name)
					}
				}
			}
			sleepCtx(ctx, 500*time.Millisecond)
		}
		done <- restarted
	}()
	return func() []string {
		cancel()
		return <-done
	}
}

// Restart starts component name again with its recorded command line.
func (e *Env) Restart(ctx context.Context, name string) error {
	e.logf("restarting %s", name)
	return e.LocalUp(ctx, "restart", name)
}

// Ready says whether a replica's /readyz passes.
func (e *Env) Ready(r Replica) bool {
	resp, err := e.HTTP.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", r.Port))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// Leading reads a replica's kvstore_controller_leader gauge (false if it
// cannot be read).
func (e *Env) Leading(r Replica) bool {
	leading, _ := e.leaderGauge(r)
	return leading
}

// Follows says the replica's gauge reads 0: it answers, and does not lead.
func (e *Env) Follows(r Replica) bool {
	leading, read := e.leaderGauge(r)
	return read && !leading
}

// leaderGauge reads a replica's kvstore_controller_leader gauge; read is
// false if /metrics did not answer with it.
func (e *Env) leaderGauge(r Replica) (leading, read bool) {
	resp, err := e.HTTP.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", r.Port))
	if err != nil {
		return false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, false
	}
	m, err := framework.ParseMetrics(resp.Body)
	if err != nil {
		return false, false
	}
	v, err := m.Value("kvstore_controller_leader")
	return v == 1, err == nil
}

// Leader returns the replica whose gauge says it leads, if exactly one does.
func (e *Env) Leader(replicas ...Replica) (Replica, bool) {
	var leaders []Replica
	for _, r := range replicas {
		if e.Leading(r) {
			leaders = append(leaders, r)
		}
	}
	if len(leaders) != 1 {
		return Replica{}, false
	}
	return leaders[0], true
}

// KubeReady says whether kube-apiserver's /readyz passes.
func (e *Env) KubeReady(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := e.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// APIAvailable says whether the APIService v1alpha1.kvstore.io is Available.
func (e *Env) APIAvailable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	raw, err := e.Kube.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.kvstore.io").DoRaw(ctx)
	if err != nil {
		return false
	}
	var svc struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	if json.Unmarshal(raw, &svc) != nil {
		return false
	}
	for _, c := range svc.Status.Conditions {
		if c.Type == "Available" {
			return c.Status == "True"
		}
	}
	return false
}

// Since polls cond until it holds and returns how long after t that was
// (-1 if not within timeout of t): figures measured from one instant.
func Since(ctx context.Context, t time.Time, timeout time.Duration, cond func() bool) time.Duration {
	if Until(ctx, timeout-time.Since(t), cond) < 0 {
		return -1
	}
	return time.Since(t)
}

// Until polls cond every 100ms until it holds or timeout passes, and
// returns how long it took (-1 if it never held).
func Until(ctx context.Context, timeout time.Duration, cond func() bool) time.Duration {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > timeout || ctx.Err() != nil {
			return -1
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
