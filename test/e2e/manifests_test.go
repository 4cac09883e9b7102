package e2e

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestManifestsBaseServerDryRun has the real kube-apiserver validate and
// admit every object of artifacts/base, the manifests for a real cluster,
// without persisting any of them. The Secrets the base mounts and the
// Service the APIService names need not exist for that.
func TestManifestsBaseServerDryRun(t *testing.T) {
	base := filepath.Join(framework.RepoRoot(), "artifacts", "base")
	r := kubectl(t, "apply", "--dry-run=server", "-k", base)
	require.NoErrorf(t, r.Err, "%v", r)
	for _, object := range []string{
		"namespace/kvstore-system",
		"clusterrole.rbac.authorization.k8s.io/kvstore-apiserver:controller",
		"role.rbac.authorization.k8s.io/kvstore-apiserver:leader-election",
		"service/kvstore-etcd",
		"statefulset.apps/kvstore-etcd",
		"poddisruptionbudget.policy/kvstore-etcd",
		"networkpolicy.networking.k8s.io/kvstore-etcd",
		"deployment.apps/kvstore-apiserver",
		"poddisruptionbudget.policy/kvstore-apiserver",
		"service/kvstore-apiserver",
		"apiservice.apiregistration.k8s.io/v1alpha1.kvstore.io",
	} {
		assert.Regexpf(t, `(?m)^`+strings.ReplaceAll(object, ".", `\.`)+` \S+ \(server dry run\)$`, r.Stdout, "%v", r)
	}
}

// TestManifestsCertManagerIssuesEverySecret checks that the cert-manager
// component issues each Secret the base's workloads mount, so a cluster
// with cert-manager needs nothing made by hand. cert-manager itself is not
// installed on the local stack, so this only builds the kustomization.
func TestManifestsCertManagerIssuesEverySecret(t *testing.T) {
	root := framework.RepoRoot()
	overlay := t.TempDir()
	rel := func(dir string) string {
		p, err := filepath.Rel(overlay, filepath.Join(root, "artifacts", dir))
		require.NoError(t, err)
		return p
	}
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(
		"resources:\n- "+rel("base")+"\ncomponents:\n- "+rel("components/cert-manager")+"\n"), 0o644))
	r := kubectl(t, "kustomize", overlay)
	require.NoErrorf(t, r.Err, "%v", r)

	mounted, issued := map[string]bool{}, map[string]bool{}
	for _, o := range decodeAll(t, r.Stdout) {
		switch o.GetKind() {
		case "Deployment", "StatefulSet":
			volumes, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			require.NoError(t, err)
			for _, v := range volumes {
				if name, ok, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); ok {
					mounted[name] = true
				}
			}
		case "Certificate":
			name, _, err := unstructured.NestedString(o.Object, "spec", "secretName")
			require.NoError(t, err)
			issued[name] = true
			// A CA reissued with a new key breaks every leaf it signs
			// afterwards for the servers that loaded the old CA at start
			// (cert-manager 1.18 rotates keys by default).
			if isCA, _, _ := unstructured.NestedBool(o.Object, "spec", "isCA"); isCA {
				policy, _, _ := unstructured.NestedString(o.Object, "spec", "privateKey", "rotationPolicy")
				assert.Equalf(t, "Never", policy, "CA Certificate %s keeps its key when reissued", o.GetName())
			}
		}
	}
	require.NotEmpty(t, mounted)
	for name := range mounted {
		assert.Truef(t, issued[name], "Secret %s is mounted by the base but issued by no Certificate of the component", name)
	}
}

// TestReadmeShowsTheExampleAsItIs: the README shows the example store in
// full, so that what a reader applies is what they read (it had drifted:
// the file deleted its claims with the store after a backup that keeps
// nothing; found by review).
func TestReadmeShowsTheExampleAsItIs(t *testing.T) {
	root := framework.RepoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	example, err := os.ReadFile(filepath.Join(root, "artifacts", "examples", "keyvaluestore.yaml"))
	require.NoError(t, err)
	_, after, found := strings.Cut(string(readme), "A store (`artifacts/examples/keyvaluestore.yaml`")
	require.True(t, found)
	_, block, found := strings.Cut(after, "```yaml\n")
	require.True(t, found)
	block, _, found = strings.Cut(block, "```")
	require.True(t, found)
	assert.Equal(t, string(example), block)
}

// decodeAll decodes a multi-document YAML stream.
func decodeAll(t *testing.T, stream string) []unstructured.Unstructured {
	t.Helper()
	var out []unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if o != nil {
			out = append(out, unstructured.Unstructured{Object: o})
		}
	}
}
