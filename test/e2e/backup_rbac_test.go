package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestRolesGrantKeyValueStoreBackups checks what the built-in view and edit
// roles, and the controller's ClusterRole, allow on keyvaluestorebackups:
// editors manage backups but cannot write their status, which only the
// controller reports.
func TestRolesGrantKeyValueStoreBackups(t *testing.T) {
	ns := namespace(t)
	const viewer, editor = "e2e-backup-viewer", "e2e-backup-editor"
	const controller = "system:serviceaccount:kvstore-system:kvstore-apiserver"
	mustKubectl(t, "create", "rolebinding", viewer, "-n", ns, "--clusterrole=view", "--user="+viewer)
	mustKubectl(t, "create", "rolebinding", editor, "-n", ns, "--clusterrole=edit", "--user="+editor)

	type question struct{ user, verb, subresource, answer string }
	want := []question{
		{viewer, "get", "", "yes"}, {viewer, "list", "", "yes"}, {viewer, "watch", "", "yes"},
		{viewer, "get", "status", "yes"},
		{viewer, "create", "", "no"}, {viewer, "delete", "", "no"}, {viewer, "update", "status", "no"},
		{editor, "create", "", "yes"}, {editor, "update", "", "yes"}, {editor, "patch", "", "yes"},
		{editor, "delete", "", "yes"}, {editor, "deletecollection", "", "yes"},
		{editor, "update", "status", "no"}, {editor, "patch", "status", "no"},
		{controller, "get", "", "yes"}, {controller, "list", "", "yes"}, {controller, "watch", "", "yes"},
		// Delete: the retention of Scheduled backups; never deletecollection or update.
		{controller, "create", "", "yes"}, {controller, "delete", "", "yes"},
		{controller, "deletecollection", "", "no"}, {controller, "update", "", "no"},
		{controller, "update", "status", "yes"}, {controller, "patch", "status", "yes"},
	}
	err := framework.WaitFor(context.Background(), eventually, func(context.Context) error {
		var wrong []string
		for _, w := range want {
			args := []string{"auth", "can-i", "--as=" + w.user, "-n", ns, w.verb, "keyvaluestorebackups.kvstore.io"}
			if w.subresource != "" {
				args = append(args, "--subresource="+w.subresource)
			}
			if got := strings.TrimSpace(kubectl(t, args...).Stdout); got != w.answer {
				wrong = append(wrong, fmt.Sprintf("%s %s %s: got %q, want %q", w.user, w.verb, w.subresource, got, w.answer))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("kubectl auth can-i:\n%s", strings.Join(wrong, "\n"))
		}
		return nil
	})
	require.NoError(t, err)
}
