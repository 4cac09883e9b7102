package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stackPIDs reads the PID file of each component of the local stack.
func stackPIDs(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range []string{"etcd-kube", "etcd-kvstore", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kvstore-apiserver"} {
		pid, err := stack.PID(name)
		require.NoError(t, err)
		out[name] = pid
	}
	return out
}

// `make up` on a running stack leaves it running; on a partly running one it
// starts only what is missing.
func TestLocalUpKeepsARunningStack(t *testing.T) {
	before := stackPIDs(t)
	localUp(t, "up")
	assert.Equal(t, before, stackPIDs(t), "a second up restarts nothing")

	// The scheduler matters least to the other tests: kill it and bring it
	// back. What it logged is kept: a restart used to empty the log, and a
	// test's cleanup wiped the log a failure needed.
	logPath := filepath.Join(stack.Dir, "logs", "kube-scheduler.log")
	logged, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.NotEmpty(t, logged)
	require.NoError(t, syscall.Kill(before["kube-scheduler"], syscall.SIGKILL))
	require.Eventually(t, func() bool { // gone, or a zombie (no command line)
		b, err := os.ReadFile("/proc/" + strconv.Itoa(before["kube-scheduler"]) + "/cmdline")
		return err != nil || len(b) == 0
	}, 10*time.Second, 100*time.Millisecond)
	localUp(t, "up")
	after := stackPIDs(t)
	assert.NotEqual(t, before["kube-scheduler"], after["kube-scheduler"], "the missing component is started")
	kept, err := filepath.Glob(logPath + ".*")
	require.NoError(t, err)
	var keptLogs []string
	for _, k := range kept {
		b, err := os.ReadFile(k)
		require.NoError(t, err)
		keptLogs = append(keptLogs, string(b))
	}
	assert.True(t, slices.ContainsFunc(keptLogs, func(l string) bool { return strings.HasPrefix(l, string(logged)) }),
		"the killed scheduler's log is kept beside the new one (%v)", kept)
	delete(before, "kube-scheduler")
	delete(after, "kube-scheduler")
	assert.Equal(t, before, after, "only the missing component is started")
}
