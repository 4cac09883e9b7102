package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestBothVersionsThroughKubectl goes through kube-apiserver and the
// aggregator with the real kubectl: one APIService per version, v1beta1
// preferred, an object applied in one version read in the other, explain,
// the table and a scale in each version.
func TestBothVersionsThroughKubectl(t *testing.T) {
	for _, apiService := range []string{"v1beta1.kvstore.io", "v1alpha1.kvstore.io"} {
		err := framework.WaitFor(context.Background(), eventually, func(context.Context) error {
			if got := mustKubectl(t, "get", "apiservice", apiService, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`); got != "True" {
				return fmt.Errorf("%s not Available: %q", apiService, got)
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Equal(t, "20 15", mustKubectl(t, "get", "apiservice", "v1beta1.kvstore.io", "v1alpha1.kvstore.io", "-o", "jsonpath={.items[*].spec.versionPriority}"))

	// Applied in v1alpha1 (testdata/keyvaluestore.yaml), read in both. The
	// version is chosen with the resource's full name: kubectl's short-name
	// expansion (client-go restmapper) drops the version, so
	// kvs.v1alpha1.kvstore.io reads the preferred version.
	ns := demo(t)
	assert.Equal(t, "kvstore.io/v1beta1 1Gi", mustKubectl(t, "get", "kvs", "demo", "-n", ns, "-o", "jsonpath={.apiVersion} {.spec.storage.capacity}"), "kubectl prefers v1beta1")
	assert.Equal(t, "kvstore.io/v1beta1 1Gi", mustKubectl(t, "get", "keyvaluestores.v1beta1.kvstore.io", "demo", "-n", ns, "-o", "jsonpath={.apiVersion} {.spec.storage.capacity}"))
	assert.Equal(t, "kvstore.io/v1alpha1 1Gi", mustKubectl(t, "get", "keyvaluestores.v1alpha1.kvstore.io", "demo", "-n", ns, "-o", "jsonpath={.apiVersion} {.spec.storage.size}"))

	// Applied in v1beta1, read in v1alpha1; then applied again in v1alpha1
	// by the same manager (kubectl), which owns the same fields.
	manifest := filepath.Join(t.TempDir(), "beta.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: kvstore.io/v1beta1
kind: KeyValueStore
metadata:
  name: beta
spec:
  replicas: 1
  image: redis:7.2
  storage:
    capacity: 2Gi
`), 0o644))
	out := mustKubectl(t, "apply", "--server-side", "-n", ns, "-f", manifest)
	assert.Contains(t, out, "keyvaluestore.kvstore.io/beta serverside-applied")
	assert.Equal(t, "2Gi 1", mustKubectl(t, "get", "keyvaluestores.v1alpha1.kvstore.io", "beta", "-n", ns, "-o", "jsonpath={.spec.storage.size} {.spec.replicas}"))
	alphaManifest := filepath.Join(t.TempDir(), "alpha.yaml")
	require.NoError(t, os.WriteFile(alphaManifest, []byte(`apiVersion: kvstore.io/v1alpha1
kind: KeyValueStore
metadata:
  name: beta
spec:
  replicas: 3
  image: redis:7.2
  storage:
    size: 2Gi
`), 0o644))
	out = mustKubectl(t, "apply", "--server-side", "-n", ns, "-f", alphaManifest)
	assert.Contains(t, out, "serverside-applied")
	assert.Equal(t, "3", mustKubectl(t, "get", "kvs", "beta", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
	// Another manager applying other replicas through v1beta1 conflicts
	// with kubectl's v1alpha1 ownership of them.
	requireFails(t, kubectl(t, "apply", "--server-side", "--field-manager=other", "-n", ns, "-f", manifest), "conflict", ".spec.replicas")

	// The table is the same in both versions.
	headerA, rowsA := table(t, mustKubectl(t, "get", "keyvaluestores.v1alpha1.kvstore.io", "-n", ns))
	headerB, rowsB := table(t, mustKubectl(t, "get", "keyvaluestores.v1beta1.kvstore.io", "-n", ns))
	assert.Equal(t, headerA, headerB)
	assert.Len(t, rowsB, 2)
	for i := range rowsA {
		delete(rowsA[i], "AGE")
		delete(rowsB[i], "AGE")
	}
	assert.Equal(t, rowsA, rowsB)

	// explain in each version.
	explainB := mustKubectl(t, "explain", "keyvaluestore.spec.storage", "--api-version=kvstore.io/v1beta1")
	assert.Contains(t, explainB, "capacity")
	assert.NotContains(t, explainB, "size\t")
	explainA := mustKubectl(t, "explain", "keyvaluestore.spec.storage", "--api-version=kvstore.io/v1alpha1")
	assert.Contains(t, explainA, "size")

	// kubectl scale in each version.
	out = mustKubectl(t, "scale", "keyvaluestores.v1beta1.kvstore.io", "demo", "--replicas=3", "-n", ns)
	assert.Contains(t, out, "scaled")
	assert.Equal(t, "3", mustKubectl(t, "get", "keyvaluestores.v1alpha1.kvstore.io", "demo", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
	out = mustKubectl(t, "scale", "keyvaluestores.v1alpha1.kvstore.io", "demo", "--replicas=1", "-n", ns)
	assert.Contains(t, out, "scaled")
	requireFails(t, kubectl(t, "scale", "keyvaluestores.v1beta1.kvstore.io", "demo", "--replicas=10", "-n", ns), "is invalid", "spec.replicas")

	// The Ready condition, derived from the phase the controller reports.
	out = mustKubectl(t, "wait", "--for=condition=Ready", "kvs/demo", "-n", ns, fmt.Sprintf("--timeout=%s", readyTimeout))
	assert.Contains(t, out, "condition met")
	assert.Equal(t, "Ready", mustKubectl(t, "get", "kvs", "demo", "-n", ns, "-o", "jsonpath={.status.phase}"))
	assert.NotEmpty(t, strings.TrimSpace(mustKubectl(t, "get", "keyvaluestores.v1alpha1.kvstore.io", "demo", "-n", ns, "-o", "jsonpath={.status.currentImage}")))
	assert.Equal(t, "redis:7.2", mustKubectl(t, "get", "keyvaluestores.v1beta1.kvstore.io", "demo", "-n", ns, "-o", `jsonpath={.metadata.annotations.kvstore\.io/v1alpha1-status-current-image}`))
}
