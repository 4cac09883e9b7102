package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

func TestGetPrintsColumns(t *testing.T) {
	ns := demo(t)

	header, rows := table(t, mustKubectl(t, "get", "kvs", "-n", ns))
	assert.Equal(t, []string{"NAME", "REPLICAS", "READY", "PHASE", "AGE"}, header)
	require.Len(t, rows, 1)
	assert.Equal(t, "demo", rows[0]["NAME"])
	assert.Equal(t, "1", rows[0]["REPLICAS"])

	header, rows = table(t, mustKubectl(t, "get", "kvs", "-n", ns, "-o", "wide"))
	assert.Equal(t, []string{"NAME", "REPLICAS", "READY", "PHASE", "AGE", "IMAGE", "CAPACITY", "LAST BACKUP"}, header)
	require.Len(t, rows, 1)
	assert.Equal(t, "redis:7.2", rows[0]["IMAGE"])
	assert.Equal(t, "1Gi", rows[0]["CAPACITY"])
	assert.Equal(t, "<none>", rows[0]["LAST BACKUP"])
}

func TestDescribeShowsImageAndFinalizer(t *testing.T) {
	ns := demo(t)
	out := mustKubectl(t, "describe", "kvs", "demo", "-n", ns)
	assert.Regexp(t, `(?m)^\s+Image:\s+redis:7\.2$`, out)
	assert.Regexp(t, `(?m)^\s+Finalizers:\n\s+kvstore\.io/teardown$`, out)
}

func TestServerSideApplyConflict(t *testing.T) {
	ns := namespace(t)
	r := applyFile(t, ns, "ssa-alice.yaml", "--server-side", "--field-manager=alice")
	require.NoErrorf(t, r.Err, "%v", r)

	requireFails(t, applyFile(t, ns, "ssa-bob.yaml", "--server-side", "--field-manager=bob"),
		"conflict", `"alice"`, ".spec.replicas")
	assert.Equal(t, "1", field(t, ns, "shared", "{.spec.replicas}"), "a refused apply must change nothing")

	r = applyFile(t, ns, "ssa-bob.yaml", "--server-side", "--field-manager=bob", "--force-conflicts")
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Equal(t, "3", field(t, ns, "shared", "{.spec.replicas}"))
	assert.Equal(t, "redis:7.2", field(t, ns, "shared", "{.spec.image}"), "alice's image must stay")
}

func TestPatch(t *testing.T) {
	ns := demo(t)

	mustKubectl(t, "patch", "kvs", "demo", "-n", ns, "--type=merge", "-p", `{"spec":{"image":"redis:7.4","paused":true}}`)
	assert.Equal(t, "redis:7.4", field(t, ns, "demo", "{.spec.image}"))
	assert.Equal(t, "true", field(t, ns, "demo", "{.spec.paused}"))

	mustKubectl(t, "patch", "kvs", "demo", "-n", ns, "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":5}]`)
	assert.Equal(t, "5", field(t, ns, "demo", "{.spec.replicas}"))

	requireFails(t, kubectl(t, "patch", "kvs", "demo", "-n", ns, "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":12}]`),
		"spec.replicas")
	assert.Equal(t, "5", field(t, ns, "demo", "{.spec.replicas}"), "a refused patch must change nothing")
}

func TestEdit(t *testing.T) {
	ns := demo(t)
	editor := filepath.Join(t.TempDir(), "editor.sh")
	require.NoError(t, os.WriteFile(editor, []byte("#!/bin/sh\nexec sed -i 's/image: redis:7.2/image: redis:7.4/' \"$1\"\n"), 0o755))

	r := kubectlWith(t, framework.KubectlOptions{Env: []string{"KUBE_EDITOR=" + editor}}, "edit", "kvs", "demo", "-n", ns)
	require.NoErrorf(t, r.Err, "%v", r)
	assert.Contains(t, r.Stdout, "keyvaluestore.kvstore.io/demo edited")
	assert.Equal(t, "redis:7.4", field(t, ns, "demo", "{.spec.image}"))
}

func TestInvalidObjectRefused(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct{ file, name, field string }{
		{"invalid-replicas.yaml", "bad-replicas", "spec.replicas"},
		{"invalid-image.yaml", "bad-image", "spec.image"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			requireFails(t, applyFile(t, ns, tc.file), "is invalid", tc.field)
			requireFails(t, kubectl(t, "create", "-n", ns, "-f", "testdata/"+tc.file), "is invalid", tc.field)
			requireNotFound(t, ns, tc.name)
		})
	}
}

func TestDeleteLeavesTerminatingWithFinalizer(t *testing.T) {
	ns := namespace(t)
	r := applyFile(t, ns, "held.yaml")
	require.NoErrorf(t, r.Err, "%v", r)
	t.Cleanup(func() {
		// Release the store: drop the tests' own finalizer, always first.
		kubectl(t, "patch", "kvs", "held", "-n", ns, "--type=json", "-p",
			`[{"op":"test","path":"/metadata/finalizers/0","value":"e2e.kvstore.io/hold"},{"op":"remove","path":"/metadata/finalizers/0"}]`)
	})
	assert.Equal(t, []string{"e2e.kvstore.io/hold", "kvstore.io/teardown"}, finalizers(t, ns, "held"),
		"the server appends kvstore.io/teardown after the user's finalizers")

	assert.Contains(t, mustKubectl(t, "delete", "kvs", "held", "-n", ns, "--wait=false"), `keyvaluestore.kvstore.io "held" deleted`)

	assert.NotEmpty(t, field(t, ns, "held", "{.metadata.deletionTimestamp}"))
	// kvstore.io/teardown may already be gone if a controller finished the teardown.
	assert.Contains(t, finalizers(t, ns, "held"), "e2e.kvstore.io/hold")
	_, rows := table(t, mustKubectl(t, "get", "kvs", "held", "-n", ns))
	require.Len(t, rows, 1)
	assert.Equal(t, "Terminating", rows[0]["PHASE"])
}
