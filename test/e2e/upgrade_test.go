package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	"github.com/kvstore-io/kvstore-apiserver/pkg/cmd/server"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestV1alpha1StoredStoreThroughV1beta1 puts a store into the stack's etcd
// as the v1alpha1-only server stored it (v1alpha1 protobuf, with the
// teardown finalizer), and then, through kubectl in v1beta1 only: the
// store is rewritten in the storage version by `kvstore-apiserver
// migrate-storage`, the controller runs it to Ready, and it is updated,
// scaled and deleted with the ordered teardown.
func TestV1alpha1StoredStoreThroughV1beta1(t *testing.T) {
	ns := namespace(t)
	const name = "old"
	tlsConfig, err := stack.KVStoreEtcdTLS()
	require.NoError(t, err)
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{framework.KVStoreEtcdURL}, TLS: tlsConfig, DialTimeout: 10 * time.Second})
	require.NoError(t, err)
	defer ec.Close()
	key := fmt.Sprintf("%s/keyvaluestores/%s/%s", server.DefaultEtcdPathPrefix, ns, name)

	old := &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID(fmt.Sprintf("e2e-old-%d", time.Now().UnixNano())), Generation: 1,
			CreationTimestamp: metav1.Now(), Finalizers: []string{v1alpha1.TeardownFinalizer},
		},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To[int32](1), Image: "redis:7.2", Port: 6379,
			Storage: v1alpha1.StorageSpec{VolumeSize: resource.MustParse("1Gi")},
			PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
	info, ok := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	var buf bytes.Buffer
	require.NoError(t, apiserver.Codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion).Encode(old, &buf))
	_, err = ec.Put(context.Background(), key, buf.String())
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = ec.Delete(context.Background(), key) }) // if the test fails before the teardown
	assert.Equal(t, "v1alpha1", storedVersion(t, ec, key))

	// The documented migration, through kube-apiserver and the aggregator.
	// The controller may write the store first (and so rewrite it); either
	// way nothing fails and the store ends up stored as v1beta1.
	migrate := exec.Command(filepath.Join(framework.RepoRoot(), "_output", "bin", "kvstore-apiserver"), "migrate-storage", "--kubeconfig", stack.Kubeconfig)
	out, err := migrate.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `keyvaluestores\.kvstore\.io: \d+ rewritten, \d+ already in the storage version, \d+ changed or deleted meanwhile, 0 failed`, string(out))
	assert.Equal(t, "v1beta1", storedVersion(t, ec, key))

	kvsB := "keyvaluestores.v1beta1.kvstore.io"
	mustKubectl(t, "wait", "--for=condition=Ready", kvsB+"/"+name, "-n", ns, "--timeout="+readyTimeout.String())
	assert.Equal(t, "1Gi redis:7.2", mustKubectl(t, "get", kvsB, name, "-n", ns, "-o", "jsonpath={.spec.storage.capacity} {.spec.image}"))

	mustKubectl(t, "patch", kvsB, name, "-n", ns, "--type=merge", "-p", `{"spec":{"image":"redis:7.4"}}`)
	mustKubectl(t, "scale", kvsB, name, "-n", ns, "--replicas=3")
	mustKubectl(t, "wait", "--for=jsonpath={.status.observedGeneration}=3", kvsB+"/"+name, "-n", ns, "--timeout="+readyTimeout.String())
	mustKubectl(t, "wait", "--for=condition=Ready", kvsB+"/"+name, "-n", ns, "--timeout="+readyTimeout.String())
	assert.Equal(t, "3 3 redis:7.4", mustKubectl(t, "get", kvsB, name, "-n", ns, "-o", "jsonpath={.spec.replicas} {.status.readyReplicas} {.spec.image}"))

	deleted := mustKubectl(t, "delete", kvsB, name, "-n", ns, "--timeout="+readyTimeout.String())
	assert.Contains(t, deleted, "deleted")
	requireNotFound(t, ns, name)
	// The StatefulSet, scaled to zero by the teardown, goes with its owner.
	require.NoError(t, framework.WaitFor(context.Background(), readyTimeout, func(context.Context) error {
		if left := mustKubectl(t, "get", "statefulsets", "-n", ns, "-o", "name"); left != "" {
			return fmt.Errorf("still there: %s", left)
		}
		return nil
	}))
}

// storedVersion is the version the object at key is encoded in.
func storedVersion(t *testing.T, ec *clientv3.Client, key string) string {
	t.Helper()
	resp, err := ec.Get(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "no object at %s", key)
	_, gvk, err := apiserver.Codecs.UniversalDeserializer().Decode(resp.Kvs[0].Value, nil, nil)
	require.NoError(t, err)
	return gvk.Version
}
