package keyvaluestore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock.Interface whose writes succeed or fail on demand.
type fakeLock struct {
	resourcelock.Interface
	id  string
	err error
}

func (l *fakeLock) Identity() string { return l.id }
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.err
}
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
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

	// Releasing the Lease closes it at once.
	require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: ""}))
	assert.Error(t, f.open())
}

// Without leader election there is no fence.
func TestNilFenceIsOpen(t *testing.T) {
	var f *fence
	assert.NoError(t, f.open())
}
