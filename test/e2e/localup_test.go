package e2e

import (
	"os"
	"path/filepath"
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
		b, err := os.ReadFile(filepath.Join(stack.Dir, "pids", name+".pid"))
		require.NoError(t, err, name)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err, name)
		require.NoError(t, syscall.Kill(pid, 0), "%s (pid %d) is not running", name, pid)
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

	// The scheduler matters least to the other tests: kill it and bring it back.
	require.NoError(t, syscall.Kill(before["kube-scheduler"], syscall.SIGKILL))
	require.Eventually(t, func() bool { // gone, or a zombie (no command line)
		b, err := os.ReadFile("/proc/" + strconv.Itoa(before["kube-scheduler"]) + "/cmdline")
		return err != nil || len(b) == 0
	}, 10*time.Second, 100*time.Millisecond)
	localUp(t, "up")
	after := stackPIDs(t)
	assert.NotEqual(t, before["kube-scheduler"], after["kube-scheduler"], "the missing component is started")
	delete(before, "kube-scheduler")
	delete(after, "kube-scheduler")
	assert.Equal(t, before, after, "only the missing component is started")
}
