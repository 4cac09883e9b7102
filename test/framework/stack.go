package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// DefaultKubectlTimeout bounds one kubectl command unless told otherwise.
	DefaultKubectlTimeout = 60 * time.Second
	// PollInterval is how often WaitFor checks its condition.
	PollInterval = 500 * time.Millisecond
)

// KVStoreEtcdURL is the client URL of kvstore-apiserver's own etcd in the
// local stack. It serves TLS and admits only client certificates signed by
// its own CA: connect with Stack.KVStoreEtcdTLS.
const KVStoreEtcdURL = "https://127.0.0.1:32381"

// Stack is the local control plane of hack/local-up.sh: kube-apiserver on
// https://127.0.0.1:6443 with kvstore.io registered through an APIService.
type Stack struct {
	// Dir holds the stack's state (KVSTORE_LOCAL_DIR, default _output/local).
	Dir string
	// Kubeconfig is the admin (system:masters) kubeconfig.
	Kubeconfig string
	// CertDir holds the CAs and client certificates made by local-up.sh.
	CertDir string
	// KubectlPath is the pinned kubectl of hack/build-tools.sh.
	KubectlPath string
	// started says this process brought the stack up, so Stop tears it down.
	started bool
}

// EnsureStack reuses a running local stack (its admin kubeconfig exists and
// kube-apiserver's /readyz passes) or brings one up with `hack/local-up.sh up`.
// Either way it returns once the kvstore.io API is available. Progress of a
// bring-up goes to logw.
func EnsureStack(ctx context.Context, logw io.Writer) (*Stack, error) {
	dir := os.Getenv("KVSTORE_LOCAL_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "_output", "local")
	}
	kubectl, err := ToolPath("kubectl")
	if err != nil {
		return nil, err
	}
	s := &Stack{
		Dir:         dir,
		Kubeconfig:  filepath.Join(dir, "admin.kubeconfig"),
		CertDir:     filepath.Join(dir, "certs"),
		KubectlPath: kubectl,
	}
	if !s.running(ctx) {
		fmt.Fprintln(logw, "e2e: no running local stack; starting one with hack/local-up.sh up")
		if err := s.localUp(ctx, logw, "up"); err != nil {
			return nil, fmt.Errorf("hack/local-up.sh up: %w", err)
		}
		s.started = true
	}
	if err := s.WaitAPIAvailable(ctx, 3*time.Minute); err != nil {
		s.Stop(ctx, logw)
		return nil, err
	}
	return s, nil
}

// Stop tears the stack down with `hack/local-up.sh down`, only if
// EnsureStack brought it up; a reused stack is left running.
func (s *Stack) Stop(ctx context.Context, logw io.Writer) {
	if !s.started {
		return
	}
	if err := s.localUp(ctx, logw, "down"); err != nil {
		fmt.Fprintln(logw, "e2e: hack/local-up.sh down:", err)
	}
}

// Reset starts the stack again on empty etcds (`hack/local-up.sh reset`):
// certificates and kubeconfigs stay, every object is gone. The benchmark
// uses it so that each system it compares starts from the same state.
func (s *Stack) Reset(ctx context.Context, logw io.Writer) error {
	if err := s.localUp(ctx, logw, "reset"); err != nil {
		return fmt.Errorf("hack/local-up.sh reset: %w", err)
	}
	return s.WaitAPIAvailable(ctx, 3*time.Minute)
}

func (s *Stack) running(ctx context.Context) bool {
	if _, err := os.Stat(s.Kubeconfig); err != nil {
		return false
	}
	return s.Kubectl(ctx, KubectlOptions{Timeout: 15 * time.Second}, "get", "--raw", "/readyz").Err == nil
}

func (s *Stack) localUp(ctx context.Context, logw io.Writer, verb string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(), "hack", "local-up.sh"), verb)
	cmd.Dir = RepoRoot()
	cmd.Stdout, cmd.Stderr = logw, logw
	// SIGTERM, not SIGKILL, on timeout: the script's EXIT trap then stops
	// what it had started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd.Run()
}

// WaitAPIAvailable waits until the APIService v1alpha1.kvstore.io is
// Available and discovery lists keyvaluestores: kvstore-apiserver may be
// restarting.
func (s *Stack) WaitAPIAvailable(ctx context.Context, timeout time.Duration) error {
	err := WaitFor(ctx, timeout, func(ctx context.Context) error {
		if r := s.Kubectl(ctx, KubectlOptions{}, "wait", "--for=condition=Available", "--timeout=5s", "apiservice/v1alpha1.kvstore.io"); r.Err != nil {
			return r
		}
		r := s.Kubectl(ctx, KubectlOptions{}, "api-resources", "--api-group=kvstore.io", "-o", "name")
		if r.Err != nil {
			return r
		}
		if !strings.Contains(r.Stdout, "keyvaluestores.kvstore.io") {
			return fmt.Errorf("discovery does not list keyvaluestores.kvstore.io yet: %q", r.Stdout)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kvstore.io API not available (logs in %s): %w", filepath.Join(s.Dir, "logs"), err)
	}
	return nil
}

// KVStoreEtcdTLS is the client TLS configuration for KVStoreEtcdURL:
// kvstore-apiserver's etcd client certificate, verifying the server against
// the etcd CA that hack/lib/certs.sh made.
func (s *Stack) KVStoreEtcdTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.CertDir, "kvstore-etcd-client.crt"), filepath.Join(s.CertDir, "kvstore-etcd-client.key"))
	if err != nil {
		return nil, fmt.Errorf("kvstore etcd client certificate: %w", err)
	}
	caFile := filepath.Join(s.CertDir, "kvstore-etcd-ca.crt")
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("kvstore etcd CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("kvstore etcd CA: no certificate in %s", caFile)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

// KubectlOptions tunes one kubectl command; the zero value runs it as the
// admin with DefaultKubectlTimeout.
type KubectlOptions struct {
	// Kubeconfig replaces the admin kubeconfig.
	Kubeconfig string
	// As impersonates this user (--as).
	As string
	// Env is added to kubectl's environment, e.g. KUBE_EDITOR=...
	Env []string
	// Timeout kills kubectl after this long.
	Timeout time.Duration
}

// KubectlResult is what a kubectl command printed and how it exited. It is
// an error, describing the command and its output, for messages.
type KubectlResult struct {
	// Args are kubectl's arguments after --kubeconfig.
	Args           []string
	Stdout, Stderr string
	// Err is nil when kubectl exited 0.
	Err error
}

func (r KubectlResult) Error() string {
	return fmt.Sprintf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(r.Args, " "), r.Err, r.Stdout, r.Stderr)
}

// Kubectl runs the stack's kubectl with args and captures its output.
func (s *Stack) Kubectl(ctx context.Context, opts KubectlOptions, args ...string) KubectlResult {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultKubectlTimeout
	}
	if opts.Kubeconfig == "" {
		opts.Kubeconfig = s.Kubeconfig
	}
	full := []string{"--kubeconfig", opts.Kubeconfig}
	if opts.As != "" {
		full = append(full, "--as", opts.As)
	}
	full = append(full, args...)

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, s.KubectlPath, full...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (timeout %s)", ctx.Err(), opts.Timeout)
	}
	return KubectlResult{Args: full[2:], Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// WaitFor calls cond every PollInterval until it returns nil, and fails with
// cond's last error once timeout has passed or ctx is done.
func WaitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %w", timeout, errors.Join(ctx.Err(), err))
		case <-time.After(PollInterval):
		}
	}
}

// Owned says whether EnsureStack brought the stack up (and Stop will tear
// it down), rather than reusing a running one.
func (s *Stack) Owned() bool { return s.started }

// PID returns the PID of the stack's component name, only while it is the
// process local-up started: its command line matches pids/NAME.cmdline and
// it is no zombie. A PID file outlives its process, whose PID may be
// another's by now, so nothing is signalled on the PID file alone.
func (s *Stack) PID(name string) (int, error) {
	dir := filepath.Join(s.Dir, "pids")
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("%s: no PID file: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: bad PID file: %w", name, err)
	}
	want, err := os.ReadFile(filepath.Join(dir, name+".cmdline"))
	if err != nil {
		return 0, fmt.Errorf("%s: no cmdline record: %w", name, err)
	}
	got, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Equal(got, want) {
		return 0, fmt.Errorf("%s: PID %d is not running it", name, pid)
	}
	if state, err := procState(pid); err == nil && state == "Z" {
		return 0, fmt.Errorf("%s: PID %d is a zombie", name, pid)
	}
	return pid, nil
}

// procState is the state letter of /proc/PID/stat (R, S, Z, ...).
func procState(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return "", fmt.Errorf("bad stat")
	}
	return s[i+2 : i+3], nil
}
