// Package framework starts the real components the integration and
// end-to-end tests run against: an etcd process and kvstore-apiserver.
package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// RepoRoot is the repository's top folder, found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ToolPath returns a binary built by hack/build-tools.sh, or fails with how to build it.
func ToolPath(name string) (string, error) {
	p := filepath.Join(RepoRoot(), "_output", "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found at %s: run `make tools` (hack/build-tools.sh %s)", name, p, name)
	}
	return p, nil
}

// Etcd is a running etcd process on 127.0.0.1 with a temporary data folder.
type Etcd struct {
	URL     string
	cmd     *exec.Cmd
	dataDir string
	done    chan struct{}
}

// StartEtcd starts etcd on free loopback ports and waits until it answers.
func StartEtcd(ctx context.Context, logDir string) (*Etcd, error) {
	bin, err := ToolPath("etcd")
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "kvstore-etcd-")
	if err != nil {
		return nil, err
	}
	clientPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cmd := exec.Command(bin,
		"--name=test",
		"--data-dir="+dataDir,
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL,
		// Tests trade durability for speed; benchmarks never do.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	logFile, err := os.Create(filepath.Join(logDir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A test binary that panics or times out exits without its deferred
	// Stop: etcd must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	e := &Etcd{URL: clientURL, cmd: cmd, dataDir: dataDir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(e.done) }()

	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if err := e.ping(deadline); err == nil {
			return e, nil
		}
		select {
		case <-e.done:
			os.RemoveAll(dataDir)
			return nil, fmt.Errorf("etcd exited early; see %s", logFile.Name())
		case <-deadline.Done():
			e.Stop()
			return nil, fmt.Errorf("etcd did not become ready: %w", deadline.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *Etcd) ping(ctx context.Context) error {
	c, err := e.Client()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = c.Get(ctx, "health-check")
	return err
}

// Client returns an etcd client; the caller closes it.
func (e *Etcd) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{e.URL}, DialTimeout: 2 * time.Second})
}

// Stop ends etcd and removes its data.
func (e *Etcd) Stop() {
	if e.cmd.Process != nil {
		_ = e.cmd.Process.Signal(os.Interrupt)
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.done
		}
	}
	os.RemoveAll(e.dataDir)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
