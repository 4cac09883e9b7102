package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
)

const (
	protobufType = "application/vnd.kubernetes.protobuf"
	// protobufMagic starts every Kubernetes protobuf envelope (runtime.Unknown).
	protobufMagic = "k8s\x00"
)

// contentTypes records the Content-Type of every request a client sends with
// a body and of every response it gets, so a test can tell that protobuf was
// really used and not silently replaced by JSON.
type contentTypes struct {
	mu        sync.Mutex
	requests  []string
	responses []string
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Body != nil && req.Method != http.MethodGet {
			c.mu.Lock()
			c.requests = append(c.requests, req.Method+" "+req.Header.Get("Content-Type"))
			c.mu.Unlock()
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			c.mu.Lock()
			c.responses = append(c.responses, req.Method+" "+req.URL.Path+" "+resp.Header.Get("Content-Type"))
			c.mu.Unlock()
		}
		return resp, err
	})
}

func (c *contentTypes) snapshot() (requests, responses []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...), append([]string(nil), c.responses...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// protobufClient is the generated clientset set up the way a protobuf client
// (kube-controller-manager, or our own controller) sets up its rest.Config.
func protobufClient(t *testing.T) (versioned.Interface, *contentTypes) {
	t.Helper()
	cfg := rest.CopyConfig(config)
	cfg.ContentType = protobufType
	cfg.AcceptContentTypes = protobufType + ",application/json"
	seen := &contentTypes{}
	cfg.Wrap(seen.wrap)
	c, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	return c, seen
}

// fullKVS sets every field, so that a protobuf round trip that dropped or
// misnumbered one would show.
func fullKVS(name string) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"tier": "gold"},
			Annotations: map[string]string{"note": "protobuf"},
		},
		Spec: v1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To[int32](5),
			Image:    "redis:7.2",
			Port:     6380,
			Storage:  v1alpha1.StorageSpec{VolumeSize: resource.MustParse("1536Mi"), StorageClassName: ptr.To("fast")},
			Proxy:    &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoy:1"},
			Backup: &v1alpha1.BackupSpec{
				Image: "backup:1", Command: []string{"/backup", "--all"}, ActiveDeadlineSeconds: ptr.To[int64](60),
				Schedule: "0 3 * * *", TimeZone: ptr.To("Europe/Berlin"), Keep: ptr.To[int32](5),
			},
			Bootstrap: &v1alpha1.BootstrapSpec{Image: "restore:1", Command: []string{"/restore"}, FromBackup: "nightly", ActiveDeadlineSeconds: ptr.To[int64](60)},
			PersistentVolumeClaimRetentionPolicy: &v1alpha1.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
			Paused: true,
		},
	}
}

// TestProtobufClient drives the generated clientset with protobuf request and
// response bodies: create, get, list, watch, update, update status, errors and
// delete. What it writes must read back the same through JSON.
func TestProtobufClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pb, seen := protobufClient(t)
	kvsClient := pb.KvstoreV1alpha1().KeyValueStores(ns(t))

	in := fullKVS("pb")
	created, err := kvsClient.Create(ctx, in, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Generation)
	assert.Equal(t, []string{v1alpha1.TeardownFinalizer}, created.Finalizers)
	assert.Equal(t, in.Labels, created.Labels)
	assert.Equal(t, in.Annotations, created.Annotations)
	assert.True(t, apiequality.Semantic.DeepEqual(in.Spec, created.Spec), "spec changed on the way:\nsent: %#v\ngot:  %#v", in.Spec, created.Spec)
	assert.Equal(t, "1536Mi", created.Spec.Storage.VolumeSize.String())

	// Defaults are applied to what a protobuf body leaves out.
	minimal, err := kvsClient.Create(ctx, newKVS("pb-defaults"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](3), minimal.Spec.Replicas)
	assert.Equal(t, int32(6379), minimal.Spec.Port)
	assert.Equal(t, "1Gi", minimal.Spec.Storage.VolumeSize.String())

	got, err := kvsClient.Get(ctx, "pb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(created, got), "get differs from create:\ncreate: %#v\nget:    %#v", created, got)

	// The same object read through JSON is identical.
	viaJSON, err := client.KvstoreV1alpha1().KeyValueStores(ns(t)).Get(ctx, "pb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(got, viaJSON), "protobuf and JSON disagree:\nprotobuf: %#v\njson:     %#v", got, viaJSON)

	list, err := kvsClient.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 2)
	assert.NotEmpty(t, list.ResourceVersion)
	listed := map[string]v1alpha1.KeyValueStore{}
	for _, item := range list.Items {
		listed[item.Name] = item
	}
	assert.True(t, apiequality.Semantic.DeepEqual(got.Spec, listed["pb"].Spec))

	w, err := kvsClient.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()

	// Status carries metav1.Time and metav1.Condition, both protobuf messages
	// of their own. Protobuf keeps whole seconds only, as JSON does.
	when := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	got.Status = v1alpha1.KeyValueStoreStatus{
		Phase:              v1alpha1.PhaseCreating,
		ObservedGeneration: 1,
		Replicas:           5,
		ReadyReplicas:      4,
		UpdatedReplicas:    5,
		ProxyReadyReplicas: 1,
		CurrentImage:       "redis:7.2",
		LastBackupTime:     &when,
		Selector:           "app.kubernetes.io/instance=pb",
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, ObservedGeneration: 1,
			LastTransitionTime: when, Reason: "ReplicasNotReady", Message: "4/5 replicas ready",
		}},
	}
	withStatus, err := kvsClient.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	// The server adds the Ready condition, derived from the phase.
	require.NotNil(t, meta.FindStatusCondition(withStatus.Status.Conditions, v1alpha1.ConditionReady), "no Ready condition")
	got.Status.Conditions = append(got.Status.Conditions, *meta.FindStatusCondition(withStatus.Status.Conditions, v1alpha1.ConditionReady))
	assert.True(t, apiequality.Semantic.DeepEqual(got.Status, withStatus.Status), "status changed on the way:\nsent: %#v\ngot:  %#v", got.Status, withStatus.Status)

	withStatus.Spec.Image = "redis:7.4"
	updated, err := kvsClient.Update(ctx, withStatus, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "redis:7.4", updated.Spec.Image)
	assert.Equal(t, int64(2), updated.Generation)

	var events []*v1alpha1.KeyValueStore
	for len(events) < 2 {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "watch closed after %d events", len(events))
			require.Equal(t, watch.Modified, ev.Type, "event %+v", ev)
			obj, ok := ev.Object.(*v1alpha1.KeyValueStore)
			require.True(t, ok, "watch event object is %T", ev.Object)
			events = append(events, obj)
		case <-ctx.Done():
			t.Fatalf("only %d watch events before timeout", len(events))
		}
	}
	assert.Equal(t, v1alpha1.PhaseCreating, events[0].Status.Phase)
	assert.Equal(t, "redis:7.4", events[1].Spec.Image)
	assert.True(t, apiequality.Semantic.DeepEqual(updated, events[1]), "watch event differs from the update:\nupdate: %#v\nevent:  %#v", updated, events[1])

	// Errors come back as protobuf Status objects with their details.
	_, err = kvsClient.Get(ctx, "missing", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	bad := newKVS("pb-invalid")
	bad.Spec.Storage.VolumeSize = resource.MustParse("-1")
	_, err = kvsClient.Create(ctx, bad, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.storage.size")
	stale := created.DeepCopy()
	stale.Spec.Port = 7000
	_, err = kvsClient.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "want 409, got %v", err)

	// Delete sends DeleteOptions as a protobuf body.
	require.NoError(t, kvsClient.Delete(ctx, "pb", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}))
	terminating, err := kvsClient.Get(ctx, "pb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, terminating.DeletionTimestamp)
	removeFinalizer(t, ns(t), "pb")
	_, err = kvsClient.Get(ctx, "pb", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)

	requests, responses := seen.snapshot()
	require.NotEmpty(t, requests)
	for _, r := range requests {
		assert.True(t, strings.HasSuffix(r, " "+protobufType), "request body not protobuf: %s", r)
	}
	require.NotEmpty(t, responses)
	for _, r := range responses {
		assert.Contains(t, r, " "+protobufType, "response not protobuf: %s", r)
	}
}

// rawGet sends a GET with the given Accept header through the test's
// privileged loopback config.
func rawGet(t *testing.T, path, accept string) (*http.Response, []byte) {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(config)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, config.Host+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// protobufDecoder decodes protobuf envelopes of our types and meta.k8s.io's.
func protobufDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	return protobuf.NewSerializer(scheme, scheme)
}

// TestProtobufRawRequests asks for protobuf by Accept header only, as
// kube-controller-manager's clients do, and checks status, Content-Type and
// the decoded body, for lists, objects, partial metadata and discovery.
func TestProtobufRawRequests(t *testing.T) {
	ctx := context.Background()
	namespace := ns(t)
	_, err := client.KvstoreV1alpha1().KeyValueStores(namespace).Create(ctx, fullKVS("raw"), metav1.CreateOptions{})
	require.NoError(t, err)
	decoder := protobufDecoder(t)

	collection := "/apis/kvstore.io/v1alpha1/namespaces/" + namespace + "/keyvaluestores"
	for _, path := range []string{collection, "/apis/kvstore.io/v1alpha1/keyvaluestores"} {
		resp, body := rawGet(t, path, protobufType)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
		assert.Equal(t, protobufType, resp.Header.Get("Content-Type"), "GET %s", path)
		require.True(t, bytes.HasPrefix(body, []byte(protobufMagic)), "GET %s: not a protobuf envelope: %q", path, body)
		list := &v1alpha1.KeyValueStoreList{}
		_, gvk, err := decoder.Decode(body, nil, list)
		require.NoError(t, err, "GET %s", path)
		assert.Equal(t, v1alpha1.SchemeGroupVersion.WithKind("KeyValueStoreList"), *gvk)
		var found *v1alpha1.KeyValueStore
		for i := range list.Items {
			if list.Items[i].Namespace == namespace && list.Items[i].Name == "raw" {
				found = &list.Items[i]
			}
		}
		require.NotNil(t, found, "GET %s: raw not listed", path)
		assert.Equal(t, "1536Mi", found.Spec.Storage.VolumeSize.String())
		assert.Equal(t, []string{"/backup", "--all"}, found.Spec.Backup.Command)
	}

	// An Accept that lists protobuf before JSON, as client-go sends it.
	resp, body := rawGet(t, collection+"/raw", protobufType+", application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, protobufType, resp.Header.Get("Content-Type"))
	obj := &v1alpha1.KeyValueStore{}
	_, _, err = decoder.Decode(body, nil, obj)
	require.NoError(t, err)
	assert.Equal(t, "raw", obj.Name)
	assert.Equal(t, "envoy:1", obj.Spec.Proxy.Image)

	// Partial object metadata in protobuf (the garbage collector and the
	// namespace controller ask for it).
	resp, body = rawGet(t, collection, protobufType+";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, protobufType, resp.Header.Get("Content-Type"))
	partial := &metav1.PartialObjectMetadataList{}
	_, _, err = decoder.Decode(body, nil, partial)
	require.NoError(t, err)
	require.Len(t, partial.Items, 1)
	assert.Equal(t, "raw", partial.Items[0].Name)
	assert.Equal(t, map[string]string{"tier": "gold"}, partial.Items[0].Labels)

	// Table has no protobuf form anywhere in Kubernetes: a client that also
	// accepts JSON gets the JSON Table, not an error.
	resp, body = rawGet(t, collection, protobufType+";as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io, application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var table metav1.Table
	require.NoError(t, json.Unmarshal(body, &table))
	assert.Equal(t, "Table", table.Kind)
	require.Len(t, table.Rows, 1)

	// Discovery of the group version, in protobuf.
	resp, body = rawGet(t, "/apis/kvstore.io/v1alpha1", protobufType+", application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, protobufType, resp.Header.Get("Content-Type"))
	resources := &metav1.APIResourceList{}
	_, _, err = decoder.Decode(body, nil, resources)
	require.NoError(t, err)
	assert.Equal(t, "kvstore.io/v1alpha1", resources.GroupVersion)
}

// TestProtobufMetadataClient lists and watches through client-go's metadata
// client, which speaks protobuf by default: what kube-controller-manager's
// garbage collector and namespace controller do against every API.
func TestProtobufMetadataClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	namespace := ns(t)
	seen := &contentTypes{}
	cfg := rest.CopyConfig(config)
	cfg.Wrap(seen.wrap)
	mc, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	res := mc.Resource(gvr).Namespace(namespace)

	created, err := client.KvstoreV1alpha1().KeyValueStores(namespace).Create(ctx, newKVS("meta"), metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := res.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, created.UID, list.Items[0].UID)

	one, err := res.Get(ctx, "meta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{v1alpha1.TeardownFinalizer}, one.Finalizers)

	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	created.Labels = map[string]string{"watched": "yes"}
	_, err = client.KvstoreV1alpha1().KeyValueStores(namespace).Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		require.Equal(t, watch.Modified, ev.Type, "event %+v", ev)
		m, ok := ev.Object.(*metav1.PartialObjectMetadata)
		require.True(t, ok, "watch event object is %T", ev.Object)
		assert.Equal(t, "yes", m.Labels["watched"])
	case <-ctx.Done():
		t.Fatal("no watch event before timeout")
	}

	_, responses := seen.snapshot()
	require.NotEmpty(t, responses)
	for _, r := range responses {
		assert.Contains(t, r, " "+protobufType, "response not protobuf: %s", r)
	}
}
