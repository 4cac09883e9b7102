package scenario

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A CI run's leader-pause reported a dual writer when no hand-over had
// happened: the paused leader still held the Lease it had acquired before
// the pause, and its own writes after SIGCONT were counted against that
// acquireTime.
func TestHandedOverOnlyWhenAcquiredDuringTheFault(t *testing.T) {
	paused := time.Date(2026, 12, 1, 13, 44, 56, 0, time.UTC)
	assert.False(t, handedOver(paused.Add(-16*time.Second), paused), "the paused leader's own acquisition")
	assert.True(t, handedOver(paused.Add(17*time.Second), paused), "the other replica's acquisition during the pause")
}
