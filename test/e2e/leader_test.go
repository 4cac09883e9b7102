package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// replica is one kvstore-apiserver process of the local stack.
type replica struct {
	name string
	port int
}

var mainReplica = replica{"kvstore-apiserver", 8443}

func localUp(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.RepoRoot(), "hack", "local-up.sh"), args...)
	cmd.Env = append(os.Environ(), "KVSTORE_LOCAL_DIR="+stack.Dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "local-up.sh %v: %s", args, out)
}

func (r replica) pid(t *testing.T) int {
	pid, err := stack.PID(r.name)
	require.NoError(t, err)
	return pid
}

// adminTransport authenticates to a replica directly with the admin client
// certificate, which it verifies against the cluster CA it delegates to.
func adminTLS(t *testing.T) *tls.Config {
	ca, err := os.ReadFile(filepath.Join(stack.CertDir, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	cert, err := tls.LoadX509KeyPair(filepath.Join(stack.CertDir, "admin.crt"), filepath.Join(stack.CertDir, "admin.key"))
	require.NoError(t, err)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "localhost"}
}

// leading reads the replica's kvstore_controller_leader gauge.
func (r replica) leading(client *http.Client) (bool, error) {
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", r.port))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("metrics: %d %v", resp.StatusCode, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "kvstore_controller_leader ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "kvstore_controller_leader ")) == "1", nil
		}
	}
	return false, nil
}

// waitLeader waits until exactly one of the replicas leads and returns it.
func waitLeader(t *testing.T, client *http.Client, replicas []replica, timeout time.Duration) replica {
	t.Helper()
	var leader replica
	require.NoError(t, framework.WaitFor(context.Background(), timeout, func(ctx context.Context) error {
		var leaders []replica
		for _, r := range replicas {
			if ok, err := r.leading(client); err == nil && ok {
				leaders = append(leaders, r)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("leaders: %v", leaders)
		}
		leader = leaders[0]
		return nil
	}))
	return leader
}

func without(rs []replica, gone replica) []replica {
	var out []replica
	for _, r := range rs {
		if r != gone {
			out = append(out, r)
		}
	}
	return out
}

func TestLeaderElectionFailover(t *testing.T) {
	extra := []replica{{"kvstore-apiserver-e2e-a", 8444}, {"kvstore-apiserver-e2e-b", 8445}}
	for _, r := range extra {
		localUp(t, "start-kvstore", r.name, strconv.Itoa(r.port))
	}
	t.Cleanup(func() {
		for _, r := range extra {
			localUp(t, "stop-kvstore", r.name)
		}
		// The stack's own replica may have been killed: bring it back.
		localUp(t, "restart-kvstore")
	})
	replicas := append([]replica{mainReplica}, extra...)
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: adminTLS(t)}}

	const leaseDuration, retryPeriod = 15 * time.Second, 2 * time.Second
	leader := waitLeader(t, httpClient, replicas, time.Minute)

	// SIGKILL: no release, so a follower takes over once the lease expires.
	require.NoError(t, syscall.Kill(leader.pid(t), syscall.SIGKILL))
	killed := time.Now()
	replicas = without(replicas, leader)
	next := waitLeader(t, httpClient, replicas, leaseDuration+retryPeriod+10*time.Second)
	took := time.Since(killed)
	t.Logf("after SIGKILL of %s, %s leads after %s", leader.name, next.name, took)
	// Bounded by the lease: a follower may have observed the last renewal up
	// to one jittered retry period after it was written, and tries to
	// acquire every jittered retry period (client-go's JitterFactor 1.2, so
	// up to 2.2 retry periods), plus the metrics poll interval.
	jittered := retryPeriod * 22 / 10
	assert.LessOrEqual(t, took, leaseDuration+2*jittered+2*framework.PollInterval+time.Second)

	// The new leader reconciles: a store created through it becomes Ready.
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", next.port), TLSClientConfig: rest.TLSClientConfig{
		CAFile: filepath.Join(stack.CertDir, "ca.crt"), ServerName: "localhost",
		CertFile: filepath.Join(stack.CertDir, "admin.crt"), KeyFile: filepath.Join(stack.CertDir, "admin.key"),
	}}
	kvs := versioned.NewForConfigOrDie(cfg)
	ns := namespace(t)
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(context.Background(), store("failover", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "failover", "Ready under the new leader", isReady)

	// SIGTERM: the leader releases the Lease, so hand-over takes about one retry period.
	require.NoError(t, syscall.Kill(next.pid(t), syscall.SIGTERM))
	stopped := time.Now()
	replicas = without(replicas, next)
	third := waitLeader(t, httpClient, replicas, 3*retryPeriod+10*time.Second)
	took = time.Since(stopped)
	t.Logf("after SIGTERM of %s, %s leads after %s", next.name, third.name, took)
	assert.Less(t, took, leaseDuration, "a graceful stop must hand over well before the lease would expire")
}
