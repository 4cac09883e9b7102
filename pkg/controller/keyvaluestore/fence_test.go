package keyvaluestore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// open reports nil if a write may go out now, else why not.
func (f *fence) open() error {
	_, err := f.remaining()
	return err
}

// fakeLock is a resourcelock.Interface whose writes succeed or fail on
// demand and whose reads show holder.
type fakeLock struct {
	resourcelock.Interface
	id      string
	holder  string
	err     error
	updates int
}

func (l *fakeLock) Identity() string { return l.id }
func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: l.holder}, nil, nil
}
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.err
}
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	l.updates++
	return l.err
}

// A replica paused past its renew deadline wakes up believing it leads (as
// client-go's elector does until a renew deadline of failed renewals): its
// writes are refused from the moment it wakes, its reads are not.
func TestFenceRefusesWritesOfAStaleLeader(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f := newFence(10 * time.Second)
	f.now = func() time.Time { return now }
	lock := fencedLock{Interface: &fakeLock{id: "me"}, fence: f}
	require.Error(t, f.open(), "not leading yet")

	require.NoError(t, lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))
	require.NoError(t, f.open())

	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer server.Close()
	client := &http.Client{Transport: f.wrap(http.DefaultTransport)}
	send := func(method string) error {
		req, err := http.NewRequest(method, server.URL, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	assert.NoError(t, send(http.MethodPatch))

	// SIGSTOP for 25 s: on waking, nothing has renewed.
	now = now.Add(25 * time.Second)
	assert.ErrorContains(t, send(http.MethodPatch), "last renewed the controller's leader Lease 25s ago")
	assert.Error(t, send(http.MethodPut))
	assert.Error(t, send(http.MethodPost))
	assert.Error(t, send(http.MethodDelete))
	assert.NoError(t, send(http.MethodGet), "reads still go out")

	// A failed renewal does not reopen it; a successful one does.
	lock.Interface.(*fakeLock).err = assert.AnError
	require.Error(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))
	assert.Error(t, f.open())
	lock.Interface.(*fakeLock).err = nil
	require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))
	assert.NoError(t, f.open())

	// Releasing the Lease (client-go reads it first) closes it at once.
	lock.Interface.(*fakeLock).holder = "me"
	_, _, err := lock.Get(context.Background())
	require.NoError(t, err)
	require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: ""}))
	assert.Error(t, f.open())
}

// client-go releases the Lease (ReleaseOnCancel) after a renew deadline of
// failed renewals too, and decides whether it holds the Lease from what it
// last saw, not from the record its release has just read: a replica whose
// requests hung while another took the Lease wrote "no holder" over the new
// leader's record, took the Lease again at once and wrote beside the new
// leader until the latter's fence closed. A release goes out only if the
// record it read names this replica.
func TestAReleaseNeverFreesAnotherReplicasLease(t *testing.T) {
	f := newFence(10 * time.Second)
	other := &fakeLock{id: "me", holder: "other"}
	lock := &fencedLock{Interface: other, fence: f}
	ctx := context.Background()
	require.NoError(t, lock.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))

	_, _, err := lock.Get(ctx)
	require.NoError(t, err)
	err = lock.Update(ctx, resourcelock.LeaderElectionRecord{})
	assert.ErrorContains(t, err, `"other" holds it`)
	assert.Zero(t, other.updates, "the other replica's Lease is left as it is")
	assert.Error(t, f.open(), "the fence closes all the same")
}

// Without leader election there is no fence.
func TestNilFenceIsOpen(t *testing.T) {
	var f *fence
	assert.NoError(t, f.open())
}

// A write that passed the fence and is then held up (the process paused
// before it went out, a slow connection) is abandoned when the fence
// closes, not sent late into another replica's term. Before, nothing
// bounded it: the comment promised the request's own timeout, and the
// controller's clients set none.
func TestFenceAbandonsAWriteHeldPastItsClosing(t *testing.T) {
	f := newFence(200 * time.Millisecond)
	lock := fencedLock{Interface: &fakeLock{id: "me"}, fence: f}
	require.NoError(t, lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))
	held := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(5 * time.Second):
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		}
	})
	req, err := http.NewRequest(http.MethodPatch, "http://kube-apiserver.invalid/apis/apps/v1/statefulsets/s", nil)
	require.NoError(t, err)
	start := time.Now()
	_, err = f.wrap(held).RoundTrip(req)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "abandoned when the fence closed")

	// Reads carry no deadline of the fence's (watches last).
	req, err = http.NewRequest(http.MethodGet, "http://kube-apiserver.invalid/api/v1/pods?watch=true", nil)
	require.NoError(t, err)
	var deadline bool
	_, err = f.wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		_, deadline = req.Context().Deadline()
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})).RoundTrip(req)
	require.NoError(t, err)
	assert.False(t, deadline)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// renewalHangsLock takes the Lease, then hangs in every renewal, ignoring
// its context: the stuck election the liveness watchdog is for.
type renewalHangsLock struct {
	fakeLock
	taken   bool
	release chan struct{}
}

func (l *renewalHangsLock) Describe() string   { return "test/lease" }
func (l *renewalHangsLock) RecordEvent(string) {}
func (l *renewalHangsLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{}, nil, nil
}
func (l *renewalHangsLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	if l.taken {
		<-l.release
		return assert.AnError
	}
	l.taken = true
	return nil
}

// fastElection is a Config with a watchdog and leader election in seconds.
func fastElection() Config {
	cfg := Config{Watchdog: leaderelection.NewLeaderHealthzAdaptor(100 * time.Millisecond)}
	cfg.LeaderElection.ResourceName = "test"
	cfg.LeaderElection.LeaseDuration.Duration = time.Second
	cfg.LeaderElection.RenewDeadline.Duration = 800 * time.Millisecond
	cfg.LeaderElection.RetryPeriod.Duration = 200 * time.Millisecond
	return cfg
}

// The liveness watchdog fails once the leader stops renewing. It never did:
// client-go ties a watchdog to its elector only in RunOrDie, which Run does
// not use, so /livez passed whatever the election did.
func TestTheWatchdogSeesAStuckElection(t *testing.T) {
	cfg := fastElection()
	lock := &renewalHangsLock{fakeLock: fakeLock{id: "me"}, release: make(chan struct{})}
	t.Cleanup(func() { close(lock.release) })
	leading := make(chan struct{})
	elector, err := cfg.newElector(lock, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { close(leading) },
		OnStoppedLeading: func() {},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go elector.Run(ctx)
	<-leading

	assert.NoError(t, cfg.Watchdog.Check(nil), "renewed a moment ago")
	assert.Eventually(t, func() bool { return cfg.Watchdog.Check(nil) != nil }, 10*time.Second, 100*time.Millisecond,
		"the lease duration and the watchdog's timeout have passed without a renewal")
}

// A follower's liveness passes although its elector reads its own identity
// in a Lease it can neither renew nor release (writes refused, reads fine):
// such an elector counts itself as leading without leading.
func TestTheWatchdogPassesAReplicaThatDoesNotLead(t *testing.T) {
	cfg := fastElection()
	lock := &writesRefusedLock{fakeLock: fakeLock{id: "me", holder: "me", err: assert.AnError}}
	elector, err := cfg.newElector(lock, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { t.Error("never leads") },
		OnStoppedLeading: func() {},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go elector.Run(ctx)
	time.Sleep(2 * time.Second) // past the lease duration and the watchdog's timeout
	assert.NoError(t, cfg.Watchdog.Check(nil))
}

// writesRefusedLock reads a Lease that names this replica, always the same
// record, and refuses every write.
type writesRefusedLock struct{ fakeLock }

func (l *writesRefusedLock) Describe() string   { return "test/lease" }
func (l *writesRefusedLock) RecordEvent(string) {}
func (l *writesRefusedLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ler := &resourcelock.LeaderElectionRecord{HolderIdentity: l.holder, LeaseDurationSeconds: 1}
	return ler, []byte(`{"holderIdentity":"me"}`), nil
}
