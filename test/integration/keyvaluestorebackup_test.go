package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	kvsapply "github.com/kvstore-io/kvstore-apiserver/pkg/generated/applyconfiguration/kvstore/v1alpha1"
)

func newBackup(name, store string) *v1alpha1.KeyValueStoreBackup {
	return &v1alpha1.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.KeyValueStoreBackupSpec{StoreName: store},
	}
}

func TestBackupCreateGetListByStore(t *testing.T) {
	ctx := context.Background()
	backups := client.KvstoreV1alpha1().KeyValueStoreBackups(ns(t))

	in := newBackup("alpha-1", "alpha")
	in.Status.Phase = v1alpha1.BackupPhaseCompleted // must be dropped
	created, err := backups.Create(ctx, in, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Generation)
	assert.Equal(t, v1alpha1.BackupReasonManual, created.Spec.Reason, "reason defaults to Manual")
	assert.Empty(t, created.Status.Phase, "status sent on create must be wiped")
	assert.Empty(t, created.Finalizers)

	final := newBackup("alpha-final", "alpha")
	final.Spec.Reason = v1alpha1.BackupReasonFinal
	_, err = backups.Create(ctx, final, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = backups.Create(ctx, newBackup("beta-1", "beta"), metav1.CreateOptions{})
	require.NoError(t, err)

	got, err := backups.Get(ctx, "alpha-final", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupReasonFinal, got.Spec.Reason)

	names := func(opts metav1.ListOptions) []string {
		list, err := backups.List(ctx, opts)
		require.NoError(t, err)
		out := []string{}
		for _, i := range list.Items {
			out = append(out, i.Name)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"alpha-1", "alpha-final", "beta-1"}, names(metav1.ListOptions{}))
	assert.Equal(t, []string{"alpha-1", "alpha-final"}, names(metav1.ListOptions{FieldSelector: "spec.storeName=alpha"}))
	assert.Equal(t, []string{"beta-1"}, names(metav1.ListOptions{FieldSelector: "spec.storeName=beta"}))
	assert.Equal(t, []string{"beta-1"}, names(metav1.ListOptions{FieldSelector: "spec.storeName!=alpha"}))
	assert.Empty(t, names(metav1.ListOptions{FieldSelector: "spec.storeName=gamma"}))
	// Served from the watch cache, at any resourceVersion.
	assert.Equal(t, []string{"alpha-1", "alpha-final"}, names(metav1.ListOptions{FieldSelector: "spec.storeName=alpha", ResourceVersion: "0"}))

	_, err = backups.List(ctx, metav1.ListOptions{FieldSelector: "spec.reason=Final"})
	assert.True(t, apierrors.IsBadRequest(err), "unsupported field selector must be a 400, got %v", err)

	require.NoError(t, backups.Delete(ctx, "alpha-1", metav1.DeleteOptions{}))
	_, err = backups.Get(ctx, "alpha-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a backup has no finalizer: deleted at once, got %v", err)
}

func TestBackupValidation(t *testing.T) {
	ctx := context.Background()
	backups := client.KvstoreV1alpha1().KeyValueStoreBackups(ns(t))
	for i, tc := range []struct {
		name   string
		mutate func(*v1alpha1.KeyValueStoreBackup)
		fields []string
	}{
		{"missing store name", func(b *v1alpha1.KeyValueStoreBackup) { b.Spec.StoreName = "" }, []string{"spec.storeName"}},
		{"invalid store name", func(b *v1alpha1.KeyValueStoreBackup) { b.Spec.StoreName = "Not_A_Store" }, []string{"spec.storeName"}},
		{"store name too long", func(b *v1alpha1.KeyValueStoreBackup) { b.Spec.StoreName = strings.Repeat("a", 53) }, []string{"spec.storeName"}},
		{"bad reason", func(b *v1alpha1.KeyValueStoreBackup) { b.Spec.Reason = "Whim" }, []string{"spec.reason"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackup(fmt.Sprintf("invalid-%d", i), "demo")
			tc.mutate(b)
			_, err := backups.Create(ctx, b, metav1.CreateOptions{})
			requireInvalid(t, err, tc.fields...)
		})
	}
	list, err := backups.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "a refused backup must not be stored")
}

func TestBackupSpecImmutable(t *testing.T) {
	ctx := context.Background()
	backups := client.KvstoreV1alpha1().KeyValueStoreBackups(ns(t))
	created, err := backups.Create(ctx, newBackup("imm", "demo"), metav1.CreateOptions{})
	require.NoError(t, err)

	moved := created.DeepCopy()
	moved.Spec.StoreName = "other"
	_, err = backups.Update(ctx, moved, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec.storeName")

	reason := created.DeepCopy()
	reason.Spec.Reason = v1alpha1.BackupReasonScheduled
	_, err = backups.Update(ctx, reason, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec.reason")

	// A merge patch is refused the same way.
	_, err = backups.Patch(ctx, "imm", types.MergePatchType, []byte(`{"spec":{"storeName":"other"}}`), metav1.PatchOptions{})
	requireInvalid(t, err, "spec.storeName")

	stored, err := backups.Get(ctx, "imm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, stored.ResourceVersion, "a refused update changes nothing")
	assert.Equal(t, "demo", stored.Spec.StoreName)

	// Metadata may still change, without a new generation.
	stored.Labels = map[string]string{"team": "a"}
	labelled, err := backups.Update(ctx, stored, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), labelled.Generation)
}

func TestBackupStatusSubresource(t *testing.T) {
	ctx := context.Background()
	backups := client.KvstoreV1alpha1().KeyValueStoreBackups(ns(t))
	created, err := backups.Create(ctx, newBackup("status", "demo"), metav1.CreateOptions{})
	require.NoError(t, err)

	// The main endpoint ignores status.
	created.Status.Phase = v1alpha1.BackupPhaseRunning
	afterMain, err := backups.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Empty(t, afterMain.Status.Phase)

	// /status writes status only: spec and labels sent along are ignored.
	start := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	afterMain.Status = v1alpha1.KeyValueStoreBackupStatus{
		Phase: v1alpha1.BackupPhaseRunning, StartTime: &start, JobName: "status-backup", Attempts: 1, ObservedGeneration: 1,
	}
	afterMain.Spec.StoreName = "other"
	afterMain.Labels = map[string]string{"sneaky": "yes"}
	afterStatus, err := backups.UpdateStatus(ctx, afterMain, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupPhaseRunning, afterStatus.Status.Phase)
	assert.Equal(t, "status-backup", afterStatus.Status.JobName)
	assert.Equal(t, "demo", afterStatus.Spec.StoreName, "/status must not change spec")
	assert.Empty(t, afterStatus.Labels, "/status must not change labels")
	assert.Equal(t, int64(1), afterStatus.Generation)

	// Invalid status is refused with the field named, and nothing changes.
	before := metav1.NewTime(start.Add(-time.Minute))
	bad := afterStatus.DeepCopy()
	bad.Status.CompletionTime = &before
	_, err = backups.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.completionTime")
	bad = afterStatus.DeepCopy()
	bad.Status.Phase = "Done"
	bad.Status.Attempts = -1
	_, err = backups.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.phase", "status.attempts")
	stored, err := backups.Get(ctx, "status", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, afterStatus.ResourceVersion, stored.ResourceVersion)

	// Server-side apply of status through /status is owned there.
	st := kvsapply.KeyValueStoreBackup("status", ns(t)).WithStatus(kvsapply.KeyValueStoreBackupStatus().WithPhase(v1alpha1.BackupPhaseCompleted))
	applied, err := backups.ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "controller", Force: true})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupPhaseCompleted, applied.Status.Phase)
	assert.Equal(t, "demo", applied.Spec.StoreName)
}

func TestBackupDiscovery(t *testing.T) {
	resources, err := client.Discovery().ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	require.NoError(t, err)
	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	b, ok := byName["keyvaluestorebackups"]
	require.True(t, ok, "resources: %v", keys(byName))
	assert.Equal(t, "KeyValueStoreBackup", b.Kind)
	assert.Equal(t, "keyvaluestorebackup", b.SingularName)
	assert.True(t, b.Namespaced)
	assert.Equal(t, []string{"kvsbackup"}, b.ShortNames)
	assert.Equal(t, []string{"kvstore"}, b.Categories)
	assert.ElementsMatch(t, []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, []string(b.Verbs))

	s, ok := byName["keyvaluestorebackups/status"]
	require.True(t, ok, "resources: %v", keys(byName))
	assert.ElementsMatch(t, []string{"get", "patch", "update"}, []string(s.Verbs))
	_, ok = byName["keyvaluestorebackups/scale"]
	assert.False(t, ok, "a backup has no /scale")
}

// TestBackupProtobufRoundTrip writes every field through a protobuf client
// and reads it back through protobuf and JSON, and checks etcd holds it as
// protobuf in the storage version.
func TestBackupProtobufRoundTrip(t *testing.T) {
	ctx := context.Background()
	pb, seen := protobufClient(t)
	backups := pb.KvstoreV1alpha1().KeyValueStoreBackups(ns(t))

	in := newBackup("pb", "demo")
	in.Labels = map[string]string{"tier": "gold"}
	in.Spec.Reason = v1alpha1.BackupReasonScheduled
	created, err := backups.Create(ctx, in, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, in.Spec, created.Spec)
	assert.Equal(t, in.Labels, created.Labels)

	start := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	done := metav1.NewTime(start.Add(90 * time.Second))
	created.Status = v1alpha1.KeyValueStoreBackupStatus{
		Phase: v1alpha1.BackupPhaseFailed, ObservedGeneration: 1, StartTime: &start, CompletionTime: &done,
		JobName: "pb-backup", Attempts: 3, Message: "backup container exited 1",
		Conditions: []metav1.Condition{{
			Type: "Failed", Status: metav1.ConditionTrue, ObservedGeneration: 1,
			LastTransitionTime: done, Reason: "BackoffLimitExceeded", Message: "3 attempts failed",
		}},
	}
	withStatus, err := backups.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(created.Status, withStatus.Status), "status changed on the way:\nsent: %#v\ngot:  %#v", created.Status, withStatus.Status)

	got, err := backups.Get(ctx, "pb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(withStatus, got), "get differs from update:\nupdate: %#v\nget:    %#v", withStatus, got)
	viaJSON, err := client.KvstoreV1alpha1().KeyValueStoreBackups(ns(t)).Get(ctx, "pb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(got, viaJSON), "protobuf and JSON disagree:\nprotobuf: %#v\njson:     %#v", got, viaJSON)

	list, err := backups.List(ctx, metav1.ListOptions{FieldSelector: "spec.storeName=demo"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.True(t, apiequality.Semantic.DeepEqual(got.Status, list.Items[0].Status))

	requests, responses := seen.snapshot()
	require.NotEmpty(t, requests)
	for _, r := range requests {
		assert.True(t, strings.HasSuffix(r, " "+protobufType), "request body not protobuf: %s", r)
	}
	for _, r := range responses {
		assert.Contains(t, r, " "+protobufType, "response not protobuf: %s", r)
	}

	ec, err := etcd.Client()
	require.NoError(t, err)
	defer ec.Close()
	key := fmt.Sprintf("%s/keyvaluestorebackups/%s/pb", etcdPrefix, ns(t))
	resp, err := ec.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "no object at %s", key)
	raw := resp.Kvs[0].Value
	require.True(t, bytes.HasPrefix(raw, []byte(protobufMagic)), "not protobuf: %q", raw[:min(len(raw), 16)])
	obj, gvk, err := apiserver.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, v1beta1.SchemeGroupVersion.WithKind("KeyValueStoreBackup"), *gvk, "stored as the storage version")
	assert.Equal(t, "pb-backup", obj.(*v1beta1.KeyValueStoreBackup).Status.JobName)
}

func TestBackupTableAndOpenAPI(t *testing.T) {
	ctx := context.Background()
	_, err := client.KvstoreV1alpha1().KeyValueStoreBackups(ns(t)).Create(ctx, newBackup("table", "demo"), metav1.CreateOptions{})
	require.NoError(t, err)

	rc, err := rest.RESTClientFor(restConfigFor())
	require.NoError(t, err)
	raw, err := rc.Get().AbsPath("/apis/kvstore.io/v1alpha1/namespaces", ns(t), "keyvaluestorebackups").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	assert.Equal(t, []string{"Name", "Store", "Phase", "Started", "Completed"}, cols[:5])
	assert.Equal(t, "Age", cols[5])
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []interface{}{"table", "demo", "Pending", "<none>", "<none>"}, table.Rows[0].Cells[:5])

	rawDoc, err := rc.Get().AbsPath("/openapi/v3/apis/kvstore.io/v1alpha1").DoRaw(ctx)
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Description string                            `json:"description"`
				Properties  map[string]map[string]interface{} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(rawDoc, &doc))
	spec, ok := doc.Components.Schemas["io.kvstore.v1alpha1.KeyValueStoreBackupSpec"]
	require.True(t, ok, "schemas: %v", keys(doc.Components.Schemas))
	assert.Contains(t, spec.Properties["storeName"]["description"], "KeyValueStore to back up")
	assert.Equal(t, "Manual", spec.Properties["reason"]["default"])
	status := doc.Components.Schemas["io.kvstore.v1alpha1.KeyValueStoreBackupStatus"]
	for name, prop := range status.Properties {
		assert.NotEmpty(t, prop["description"], "status.%s has no description", name)
	}
}

// Patches of a backup that cannot be applied are the client's fault: 400,
// as for stores (TestHostileInput), never a 500; and nothing is stored.
// Before the fix k8s.io/apiserver served these as 500 for backups.
func TestBackupMalformedPatchesAreBadRequests(t *testing.T) {
	ctx := context.Background()
	namespace := ns(t)
	before, err := client.KvstoreV1alpha1().KeyValueStoreBackups(namespace).Create(ctx, newBackup("patched", "alpha"), metav1.CreateOptions{})
	require.NoError(t, err)
	path := "/apis/kvstore.io/v1alpha1/namespaces/" + namespace + "/keyvaluestorebackups/patched"
	for _, tc := range []struct {
		name, subresource string
		pt                types.PatchType
		query, body       string
	}{
		{"strategic merge patch, unknown directive", "", types.StrategicMergePatchType, "", `{"spec":{"$patch":"explode"}}`},
		{"strategic merge patch to /status, unknown directive", "/status", types.StrategicMergePatchType, "", `{"status":{"$patch":"explode"}}`},
		{"strategic merge patch, retainKeys of a non-list", "", types.StrategicMergePatchType, "", `{"spec":{"$retainKeys":7}}`},
		{"apply, storeName of the wrong type", "", types.ApplyYAMLPatchType, "?fieldManager=a",
			`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStoreBackup","metadata":{"name":"patched"},"spec":{"storeName":["alpha"]}}`},
		{"apply to /status, phase of the wrong type", "/status", types.ApplyYAMLPatchType, "?fieldManager=a",
			`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStoreBackup","metadata":{"name":"patched"},"status":{"phase":["Completed"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := rawRequest(t, "PATCH", path+tc.subresource+tc.query, string(tc.pt), []byte(tc.body))
			assert.Equal(t, 400, status, "%s", body)
			after, err := client.KvstoreV1alpha1().KeyValueStoreBackups(namespace).Get(ctx, "patched", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "nothing is stored")
		})
	}
}
