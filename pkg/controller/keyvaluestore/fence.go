package keyvaluestore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fence keeps a replica that may no longer lead from writing. client-go's
// leader election tells a replica it lost the Lease only after a whole renew
// deadline of failed renewals: a process that was paused (SIGSTOP, a long GC
// or VM stall) longer than the lease duration wakes up believing it leads
// while another replica already does, and its workers write for up to that
// renew deadline. The fence closes on the replica's own clock: writes pass
// only within validFor of the start of the last successful acquire or renew
// of the Lease. Other replicas can take the Lease no earlier than a lease
// duration after they saw that renewal, so validFor (the renew deadline,
// shorter than the lease duration) leaves the difference as margin for a
// request in flight. A write also carries the fence's closing time as its
// deadline: one that passed the check and was then held up (the process
// paused before the request went out, a slow connection) is abandoned when
// the fence closes instead of going out late. One the server has already
// received may still be applied: client-side, nothing bounds that.
type fence struct {
	mu       sync.Mutex
	renewed  time.Time // start of the last successful acquire or renew; zero: not leading
	validFor time.Duration
	now      func() time.Time
}

func newFence(validFor time.Duration) *fence {
	return &fence{validFor: validFor, now: time.Now}
}

// remaining is how long the fence stays open (0 without leader election:
// for ever), or why it is closed.
func (f *fence) remaining() (time.Duration, error) {
	if f == nil {
		return 0, nil // no leader election: the only writer
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renewed.IsZero() {
		return 0, fmt.Errorf("not writing: this replica does not hold the controller's leader Lease")
	}
	age := f.now().Sub(f.renewed)
	if age >= f.validFor {
		return 0, fmt.Errorf("not writing: this replica last renewed the controller's leader Lease %s ago (more than %s); another replica may lead", age.Round(time.Millisecond), f.validFor)
	}
	return f.validFor - age, nil
}

func (f *fence) renewedAt(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed = t
}

func (f *fence) close() { f.renewedAt(time.Time{}) }

// fencedLock records on the fence every successful acquire or renew of the
// Lease by this replica, and closes it on a release. It also refuses a
// release of a Lease another replica holds: client-go releases after a
// renew deadline of failed renewals too, judging whether it leads by what it
// last saw rather than by the record its release has just read, and would
// otherwise write "no holder" over a new leader's Lease and take it back at
// once, two controllers writing side by side.
type fencedLock struct {
	resourcelock.Interface
	fence *fence

	mu     sync.Mutex
	holder string // in the record last read
}

func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ler, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.mu.Lock()
		l.holder = ler.HolderIdentity
		l.mu.Unlock()
	}
	return ler, raw, err
}

func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.record(ler, func() error { return l.Interface.Create(ctx, ler) })
}

func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.record(ler, func() error { return l.Interface.Update(ctx, ler) })
}

func (l *fencedLock) record(ler resourcelock.LeaderElectionRecord, write func() error) error {
	start := l.fence.now()
	if ler.HolderIdentity != l.Identity() {
		l.fence.close() // a release: from now on another replica may lead
		l.mu.Lock()
		holder := l.holder
		l.mu.Unlock()
		if holder != l.Identity() {
			return fmt.Errorf("not releasing the controller's leader Lease: %q holds it", holder)
		}
	}
	err := write()
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.fence.renewedAt(start)
	}
	return err
}

// fencedTransport refuses every request but reads while the fence is
// closed, and abandons a write still unsent when the fence closes.
type fencedTransport struct {
	next  http.RoundTripper
	fence *fence
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(req)
	}
	left, err := t.fence.remaining()
	if err != nil {
		return nil, err
	}
	if left == 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), left)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a request's context once its response is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}

// wrap puts the fence in front of a client's transport.
func (f *fence) wrap(rt http.RoundTripper) http.RoundTripper {
	return fencedTransport{next: rt, fence: f}
}
