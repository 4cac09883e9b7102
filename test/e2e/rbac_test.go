package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestBuiltinRolesGrantKeyValueStores checks the aggregation of kvstore.io:view
// and kvstore.io:edit into the built-in view and edit ClusterRoles.
func TestBuiltinRolesGrantKeyValueStores(t *testing.T) {
	ns := namespace(t)
	const viewer, editor = "e2e-viewer", "e2e-editor"
	mustKubectl(t, "create", "rolebinding", viewer, "-n", ns, "--clusterrole=view", "--user="+viewer)
	mustKubectl(t, "create", "rolebinding", editor, "-n", ns, "--clusterrole=edit", "--user="+editor)

	waitCanI(t, ns, []canI{
		{viewer, "get", "yes"}, {viewer, "list", "yes"}, {viewer, "watch", "yes"},
		{viewer, "create", "no"}, {viewer, "delete", "no"}, {viewer, "patch", "no"},
		{editor, "get", "yes"}, {editor, "create", "yes"}, {editor, "patch", "yes"}, {editor, "delete", "yes"},
	})

	asViewer := framework.KubectlOptions{As: viewer}
	asEditor := framework.KubectlOptions{As: editor}
	requireFails(t, kubectlWith(t, asViewer, "create", "-n", ns, "-f", "testdata/keyvaluestore.yaml"),
		"Forbidden", `User "e2e-viewer" cannot create resource "keyvaluestores" in API group "kvstore.io"`)
	requireNotFound(t, ns, "demo")

	r := kubectlWith(t, asEditor, "create", "-n", ns, "-f", "testdata/keyvaluestore.yaml")
	require.NoErrorf(t, r.Err, "%v", r)

	r = kubectlWith(t, asViewer, "get", "kvs", "-n", ns)
	require.NoErrorf(t, r.Err, "%v", r)
	_, rows := table(t, r.Stdout)
	require.Len(t, rows, 1)
	assert.Equal(t, "demo", rows[0]["NAME"])

	requireFails(t, kubectlWith(t, asViewer, "delete", "kvs", "demo", "-n", ns, "--wait=false"),
		"Forbidden", `User "e2e-viewer" cannot delete resource "keyvaluestores"`)
	assert.Empty(t, field(t, ns, "demo", "{.metadata.deletionTimestamp}"))

	r = kubectlWith(t, asEditor, "delete", "kvs", "demo", "-n", ns, "--wait=false")
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Contains(t, r.Stdout, `keyvaluestore.kvstore.io "demo" deleted`)
}

// canI is one `kubectl auth can-i` question about keyvaluestores and the answer wanted.
type canI struct{ user, verb, answer string }

// waitCanI waits until kubectl auth can-i answers every question as wanted:
// RBAC reaches the authorizer's cache eventually.
func waitCanI(t *testing.T, ns string, want []canI, flags ...string) {
	t.Helper()
	err := framework.WaitFor(context.Background(), eventually, func(context.Context) error {
		var wrong []string
		for _, w := range want {
			args := append([]string{"auth", "can-i", "--as=" + w.user, "-n", ns, w.verb, "keyvaluestores.kvstore.io"}, flags...)
			r := kubectl(t, args...)
			if got := strings.TrimSpace(r.Stdout); got != w.answer {
				wrong = append(wrong, fmt.Sprintf("%s %s %v: got %q, want %q (stderr %q)", w.user, w.verb, flags, got, w.answer, r.Stderr))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("kubectl auth can-i:\n%s", strings.Join(wrong, "\n"))
		}
		return nil
	})
	require.NoError(t, err)
}
