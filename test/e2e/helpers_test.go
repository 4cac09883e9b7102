package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

const (
	// unavailableTimeout is how long a command is retried while kvstore.io
	// is unavailable, as when kvstore-apiserver restarts.
	unavailableTimeout = 2 * time.Minute
	// eventually bounds waits for eventually consistent state, such as RBAC.
	eventually = 2 * time.Minute
)

// unavailable matches kubectl errors of a kvstore.io API that is briefly
// gone: none of them is ever what a test asserts.
var unavailable = regexp.MustCompile(strings.Join([]string{
	`the server is currently unable to handle the request`,
	`\(ServiceUnavailable\)`,
	`error trying to reach service`,
	`connection refused`,
	`connection reset by peer`,
	`unexpected EOF`,
	`the server doesn't have a resource type`,
	`no matches for kind`,
}, "|"))

// kubectl runs kubectl as the admin; see kubectlWith.
func kubectl(t *testing.T, args ...string) framework.KubectlResult {
	t.Helper()
	return kubectlWith(t, framework.KubectlOptions{}, args...)
}

// kubectlWith runs kubectl, retrying while kvstore.io is unavailable, and
// returns the last attempt.
func kubectlWith(t *testing.T, opts framework.KubectlOptions, args ...string) framework.KubectlResult {
	t.Helper()
	var r framework.KubectlResult
	// Not t.Context(): cleanups run kubectl after it is cancelled.
	_ = framework.WaitFor(context.Background(), unavailableTimeout, func(ctx context.Context) error {
		r = stack.Kubectl(ctx, opts, args...)
		if r.Err != nil && unavailable.MatchString(r.Stderr) {
			return r
		}
		return nil
	})
	return r
}

// mustKubectl runs kubectl as the admin, requires success and returns stdout.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	r := kubectl(t, args...)
	require.NoErrorf(t, r.Err, "%v", r)
	return r.Stdout
}

// requireFails requires kubectl to have failed with stderr containing each of want.
func requireFails(t *testing.T, r framework.KubectlResult, want ...string) {
	t.Helper()
	require.Errorf(t, r.Err, "kubectl %s succeeded; stdout: %s", strings.Join(r.Args, " "), r.Stdout)
	for _, w := range want {
		require.Containsf(t, r.Stderr, w, "%v", r)
	}
}

// namespace creates a namespace of t's own and deletes it, without waiting,
// when t ends.
func namespace(t *testing.T) string {
	t.Helper()
	slug := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	name := fmt.Sprintf("e2e-%.40s-%06x", slug, rand.N(1<<24))
	mustKubectl(t, "create", "namespace", name)
	t.Cleanup(func() { kubectl(t, "delete", "namespace", name, "--wait=false") })
	return name
}

// applyFile applies a file of testdata into ns.
func applyFile(t *testing.T, ns, file string, flags ...string) framework.KubectlResult {
	t.Helper()
	return kubectl(t, append([]string{"apply", "-n", ns, "-f", "testdata/" + file}, flags...)...)
}

// demo creates the store "demo" of testdata/keyvaluestore.yaml in a new
// namespace and returns the namespace.
func demo(t *testing.T) string {
	t.Helper()
	ns := namespace(t)
	r := applyFile(t, ns, "keyvaluestore.yaml")
	require.NoErrorf(t, r.Err, "%v", r)
	require.Contains(t, r.Stdout, "keyvaluestore.kvstore.io/demo created")
	return ns
}

// field prints a jsonpath expression of the store ns/name.
func field(t *testing.T, ns, name, jsonpath string) string {
	t.Helper()
	return mustKubectl(t, "get", "kvs", name, "-n", ns, "-o", "jsonpath="+jsonpath)
}

// finalizers returns the store's metadata.finalizers.
func finalizers(t *testing.T, ns, name string) []string {
	t.Helper()
	var f []string
	if out := field(t, ns, name, "{.metadata.finalizers}"); out != "" {
		require.NoError(t, json.Unmarshal([]byte(out), &f), out)
	}
	return f
}

// requireNotFound requires the store ns/name not to exist.
func requireNotFound(t *testing.T, ns, name string) {
	t.Helper()
	requireFails(t, kubectl(t, "get", "kvs", name, "-n", ns), "NotFound")
}

// table parses kubectl's table output into its header and rows, each row
// keyed by column header. Columns are cut at the header's offsets, since
// kubectl left-aligns them.
func table(t *testing.T, out string) ([]string, []map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	// Columns are at least three spaces apart; a name may hold one
	// ("LAST BACKUP").
	header := regexp.MustCompile(`\S+(?: \S+)*`).FindAllString(lines[0], -1)
	starts := make([]int, len(header))
	for i, h := range header {
		from := 0
		if i > 0 {
			from = starts[i-1] + len(header[i-1])
		}
		starts[i] = from + strings.Index(lines[0][from:], h)
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, h := range header {
			from, to := min(starts[i], len(line)), len(line)
			if i+1 < len(starts) {
				to = min(starts[i+1], len(line))
			}
			row[h] = strings.TrimSpace(line[from:to])
		}
		rows = append(rows, row)
	}
	return header, rows
}
