package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Leader election times are checked for what the fence and client-go rely
// on. Before, a fractional lease (the Lease records whole seconds: 10.9s is
// 10s to other replicas) passed with a renew deadline of 10.5s, so the
// fence stayed open after another replica could lead; and a retry period
// too close to the renew deadline passed here and stopped the controller
// at start.
func TestValidateLeaderElectionTimes(t *testing.T) {
	for _, tc := range []struct {
		name                string
		lease, renew, retry time.Duration
		wantErr             bool
	}{
		{"defaults", 15 * time.Second, 10 * time.Second, 2 * time.Second, false},
		{"fractional lease", 10900 * time.Millisecond, 10500 * time.Millisecond, 2 * time.Second, true},
		{"lease under a second", 900 * time.Millisecond, 500 * time.Millisecond, 100 * time.Millisecond, true},
		{"renew deadline not above 1.2 retry periods", 15 * time.Second, 10 * time.Second, 9 * time.Second, true},
		{"renew deadline not below the lease", 15 * time.Second, 15 * time.Second, 2 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewControllerOptions()
			o.LeaderElection.LeaseDuration.Duration = tc.lease
			o.LeaderElection.RenewDeadline.Duration = tc.renew
			o.LeaderElection.RetryPeriod.Duration = tc.retry
			assert.Equal(t, tc.wantErr, len(o.Validate()) > 0, "%v", o.Validate())
		})
	}
}

// A negative burst with a client-side limit on makes every request of the
// controller (and of its Lease) fail in client-go's limiter: no replica
// ever led, and nothing said so (found by review). Without a limit
// (negative QPS) the burst is unused.
func TestValidateKubeAPIBurst(t *testing.T) {
	for _, tc := range []struct {
		qps     float32
		burst   int
		wantErr bool
	}{
		{50, 100, false},
		{50, 0, false}, // client-go's default burst
		{0, 0, false},  // client-go's default QPS and burst
		{50, -1, true},
		{-1, -1, false},
	} {
		o := NewControllerOptions()
		o.KubeAPIQPS, o.KubeAPIBurst = tc.qps, tc.burst
		assert.Equal(t, tc.wantErr, len(o.Validate()) > 0, "qps %v burst %d: %v", tc.qps, tc.burst, o.Validate())
		if tc.wantErr {
			continue
		}
		// What Validate accepts, client-go accepts too. Before, a QPS with
		// burst 0 (documented as client-go's default) passed here and
		// client-go refused it when the controller started, after the
		// server served: every replica exited (found by review).
		_, err := kubernetes.NewForConfig(o.kubeConfig(&rest.Config{Host: "https://127.0.0.1:6443"}))
		assert.NoError(t, err, "qps %v burst %d", tc.qps, tc.burst)
	}
}

// Shutdown stops the controller (and so releases its Lease) when it begins
// and waits for it, not after the server's shutdown delay: before, the
// controller ran on the post-start hook's context, cancelled only once the
// server stopped serving, and nothing waited for the release.
func TestControllerStopsWhenShutdownBegins(t *testing.T) {
	var run controllerRun
	var released atomic.Bool
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	run.start(parent, func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // releasing the Lease
		released.Store(true)
	})
	run.stop(5 * time.Second)
	assert.True(t, released.Load(), "stop returns once the controller has stopped")
	assert.NoError(t, parent.Err(), "the server's own context is not what stops it")
}

// A SIGTERM while the server starts runs the pre-shutdown hook before or
// beside the post-start hook: a stop that comes first keeps the controller
// from starting at all. Before, it returned at once and the controller
// started afterwards, stood for election while terminating, and nothing
// waited for its Lease's release (found by review).
func TestControllerDoesNotStartAfterShutdownBegan(t *testing.T) {
	var run controllerRun
	run.stop(time.Second) // never started: returns at once
	var started atomic.Bool
	run.start(context.Background(), func(context.Context) { started.Store(true) })
	run.stop(time.Second)
	assert.False(t, started.Load())
}
