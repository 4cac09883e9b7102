package keyvaluestore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/install"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func newKVS() *kvstore.KeyValueStore {
	return &kvstore.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: kvstore.KeyValueStoreSpec{
			Replicas: ptr.To[int32](3),
			Image:    "redis:7.2",
			Port:     6379,
			Storage:  kvstore.StorageSpec{Size: resource.MustParse("1Gi")},
			PersistentVolumeClaimRetentionPolicy: &kvstore.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: kvstore.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

// storedKVS is newKVS as the registry would have stored it.
func storedKVS() *kvstore.KeyValueStore {
	k := newKVS()
	k.UID = types.UID("11111111-2222-3333-4444-555555555555")
	k.ResourceVersion = "10"
	k.Generation = 2
	k.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	k.Finalizers = []string{kvstore.TeardownFinalizer}
	k.Labels = map[string]string{"team": "storage"}
	k.Annotations = map[string]string{"note": "old"}
	k.Status = kvstore.KeyValueStoreStatus{
		Phase:              kvstore.PhaseReady,
		ObservedGeneration: 2,
		Replicas:           3,
		ReadyReplicas:      3,
		UpdatedReplicas:    3,
		CurrentImage:       "redis:7.2",
	}
	return k
}

func testStrategy() Strategy { return NewStrategy(runtime.NewScheme()) }

func TestStrategyBasics(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	assert.True(t, s.NamespaceScoped())
	assert.False(t, s.AllowCreateOnUpdate(ctx))
	assert.True(t, s.AllowUnconditionalUpdate(ctx))
	assert.Equal(t, rest.DeleteDependents, s.DefaultGarbageCollectionPolicy(ctx))

	status := NewStatusStrategy(s)
	assert.True(t, status.NamespaceScoped())
	assert.False(t, status.AllowCreateOnUpdate(ctx))

	// Canonicalize is a no-op.
	obj := storedKVS()
	s.Canonicalize(obj)
	assert.Equal(t, storedKVS(), obj)
}

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name           string
		finalizers     []string
		wantFinalizers []string
	}{
		{name: "no finalizers", finalizers: nil, wantFinalizers: []string{kvstore.TeardownFinalizer}},
		{name: "user finalizers are kept", finalizers: []string{"example.com/a", "example.com/b"}, wantFinalizers: []string{"example.com/a", "example.com/b", kvstore.TeardownFinalizer}},
		{name: "teardown already present is not duplicated", finalizers: []string{kvstore.TeardownFinalizer}, wantFinalizers: []string{kvstore.TeardownFinalizer}},
		{name: "teardown in the middle keeps its place", finalizers: []string{"example.com/a", kvstore.TeardownFinalizer, "example.com/b"}, wantFinalizers: []string{"example.com/a", kvstore.TeardownFinalizer, "example.com/b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := newKVS()
			obj.Finalizers = tc.finalizers
			obj.Generation = 7
			obj.Status = kvstore.KeyValueStoreStatus{
				Phase:         kvstore.PhaseReady,
				Replicas:      3,
				ReadyReplicas: 3,
				Conditions:    []metav1.Condition{{Type: kvstore.ConditionAvailable, Status: metav1.ConditionTrue}},
			}
			wantSpec := *obj.Spec.DeepCopy()

			testStrategy().PrepareForCreate(context.Background(), obj)

			assert.Equal(t, kvstore.KeyValueStoreStatus{}, obj.Status, "client-sent status is wiped")
			assert.Equal(t, int64(1), obj.Generation)
			assert.Equal(t, tc.wantFinalizers, obj.Finalizers)
			assert.Equal(t, wantSpec, obj.Spec, "spec untouched")
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name           string
		mutate         func(newObj, oldObj *kvstore.KeyValueStore)
		wantGeneration int64
		wantFinalizers []string
	}{
		{
			name:           "no change",
			mutate:         func(_, _ *kvstore.KeyValueStore) {},
			wantGeneration: 2,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name: "metadata-only change keeps generation",
			mutate: func(n, _ *kvstore.KeyValueStore) {
				n.Labels = map[string]string{"team": "other"}
				n.Annotations = map[string]string{kvstore.SkipFinalBackupAnnotation: "true"}
			},
			wantGeneration: 2,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name: "status-only change keeps generation",
			mutate: func(n, _ *kvstore.KeyValueStore) {
				n.Status.Phase = kvstore.PhaseFailed
			},
			wantGeneration: 2,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name:           "image change bumps generation",
			mutate:         func(n, _ *kvstore.KeyValueStore) { n.Spec.Image = "redis:7.4" },
			wantGeneration: 3,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name:           "replicas change bumps generation",
			mutate:         func(n, _ *kvstore.KeyValueStore) { n.Spec.Replicas = ptr.To[int32](5) },
			wantGeneration: 3,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name:           "paused change bumps generation",
			mutate:         func(n, _ *kvstore.KeyValueStore) { n.Spec.Paused = true },
			wantGeneration: 3,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name:           "semantically equal quantity is not a spec change",
			mutate:         func(n, _ *kvstore.KeyValueStore) { n.Spec.Storage.Size = resource.MustParse("1024Mi") },
			wantGeneration: 2,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name:           "removed finalizer is re-added",
			mutate:         func(n, _ *kvstore.KeyValueStore) { n.Finalizers = nil },
			wantGeneration: 2,
			wantFinalizers: []string{kvstore.TeardownFinalizer},
		},
		{
			name: "removed finalizer is re-added after user finalizers",
			mutate: func(n, _ *kvstore.KeyValueStore) {
				n.Finalizers = []string{"example.com/a"}
			},
			wantGeneration: 2,
			wantFinalizers: []string{"example.com/a", kvstore.TeardownFinalizer},
		},
		{
			name: "user finalizer added next to teardown, no duplicate",
			mutate: func(n, _ *kvstore.KeyValueStore) {
				n.Finalizers = []string{kvstore.TeardownFinalizer, "example.com/a"}
			},
			wantGeneration: 2,
			wantFinalizers: []string{kvstore.TeardownFinalizer, "example.com/a"},
		},
		{
			name: "finalizer not re-added while deleting",
			mutate: func(n, o *kvstore.KeyValueStore) {
				o.DeletionTimestamp = &now
				n.DeletionTimestamp = &now
				n.Finalizers = nil
			},
			wantGeneration: 2,
			wantFinalizers: nil,
		},
		{
			name: "deletion decided from the stored object, not the request body",
			mutate: func(n, o *kvstore.KeyValueStore) {
				o.DeletionTimestamp = &now
				n.DeletionTimestamp = nil
				n.Finalizers = nil
			},
			wantGeneration: 2,
			wantFinalizers: nil,
		},
		{
			name: "other finalizers released while deleting stay released",
			mutate: func(n, o *kvstore.KeyValueStore) {
				o.DeletionTimestamp = &now
				o.Finalizers = []string{kvstore.TeardownFinalizer, "example.com/a"}
				n.DeletionTimestamp = &now
				n.Finalizers = []string{"example.com/a"}
			},
			wantGeneration: 2,
			wantFinalizers: []string{"example.com/a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldObj := storedKVS()
			newObj := oldObj.DeepCopy()
			// A client's copy of status is ignored.
			newObj.Status = kvstore.KeyValueStoreStatus{Phase: kvstore.PhasePending, Replicas: 9}
			tc.mutate(newObj, oldObj)
			wantStatus := *oldObj.Status.DeepCopy()
			wantSpec := *newObj.Spec.DeepCopy()

			testStrategy().PrepareForUpdate(context.Background(), newObj, oldObj)

			assert.Equal(t, wantStatus, newObj.Status, "status comes from the stored object")
			assert.Equal(t, wantSpec, newObj.Spec, "spec comes from the request")
			assert.Equal(t, tc.wantGeneration, newObj.Generation)
			assert.Equal(t, tc.wantFinalizers, newObj.Finalizers)
			assert.Equal(t, int64(2), oldObj.Generation, "old object untouched")
		})
	}
}

func TestStatusStrategyPrepareForUpdate(t *testing.T) {
	oldObj := storedKVS()
	oldObj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u"}}
	newObj := oldObj.DeepCopy()

	// A stale controller copy: every non-status field differs.
	newObj.Spec.Image = "redis:6"
	newObj.Spec.Replicas = ptr.To[int32](1)
	newObj.Labels = map[string]string{"team": "stale"}
	newObj.Annotations = nil
	newObj.Finalizers = nil
	newObj.OwnerReferences = nil
	newStatus := kvstore.KeyValueStoreStatus{
		Phase:              kvstore.PhaseDegraded,
		ObservedGeneration: 2,
		Replicas:           3,
		ReadyReplicas:      2,
		UpdatedReplicas:    3,
		CurrentImage:       "redis:7.2",
		Conditions: []metav1.Condition{{
			Type: kvstore.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "ReplicaLost",
			LastTransitionTime: metav1.NewTime(time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)),
		}},
	}
	newObj.Status = newStatus

	NewStatusStrategy(testStrategy()).PrepareForUpdate(context.Background(), newObj, oldObj)

	assert.Equal(t, oldObj.Spec, newObj.Spec)
	assert.Equal(t, oldObj.Labels, newObj.Labels)
	assert.Equal(t, oldObj.Annotations, newObj.Annotations)
	assert.Equal(t, oldObj.Finalizers, newObj.Finalizers)
	assert.Equal(t, oldObj.OwnerReferences, newObj.OwnerReferences)
	// Ready is derived from the phase (ready_test.go); the rest is kept.
	require.NotNil(t, meta.FindStatusCondition(newObj.Status.Conditions, kvstore.ConditionReady))
	meta.RemoveStatusCondition(&newObj.Status.Conditions, kvstore.ConditionReady)
	assert.Equal(t, newStatus, newObj.Status)
	assert.Equal(t, int64(2), newObj.Generation, "a status write never bumps generation")
}

// v1beta1 has no status.currentImage: it carries it in an annotation the
// server owns. A status write through v1beta1 without it (or with another
// value) erased or set it, and with it the controller's "was Ready once"
// (an image change of a Ready store then read Creating, not Upgrading;
// found by hand with kubectl). Only a v1alpha1 writer sets it.
func TestStatusWriteThroughV1beta1KeepsCurrentImage(t *testing.T) {
	for version, want := range map[string]string{"v1beta1": "redis:7.4", "v1alpha1": ""} {
		oldObj := storedKVS()
		oldObj.Status.CurrentImage = "redis:7.4"
		newObj := oldObj.DeepCopy()
		newObj.Status.CurrentImage = "" // the annotation left out of the request
		ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{
			IsResourceRequest: true, APIGroup: kvstore.GroupName, APIVersion: version, Resource: "keyvaluestores", Subresource: "status", Verb: "update"})
		NewStatusStrategy(testStrategy()).PrepareForUpdate(ctx, newObj, oldObj)
		assert.Equal(t, want, newObj.Status.CurrentImage, version)
	}
}

// A merge or JSON patch is applied to the stored object encoded as JSON,
// which turns bytes that are not UTF-8 into U+FFFD. Commands stored before
// the UTF-8 rule may hold such bytes: the teardown's patch releasing the
// finalizer was refused for ever ("spec.bootstrap: field is immutable"),
// and a label patch silently changed a backup command and bumped the
// generation (found by review). The stored bytes stay.
func TestPatchThroughJSONKeepsStoredCommandBytes(t *testing.T) {
	oldObj := storedKVS()
	oldObj.Spec.Bootstrap = &kvstore.BootstrapSpec{Image: "restore:1", Command: []string{"/restore", "\xff\xfe"}}
	oldObj.Spec.Backup = &kvstore.BackupSpec{Image: "backup:1", Command: []string{"/backup", "a\xffb"}}
	data, err := json.Marshal(oldObj)
	require.NoError(t, err)
	patched := &kvstore.KeyValueStore{}
	require.NoError(t, json.Unmarshal(data, patched))
	require.NotEqual(t, oldObj.Spec.Backup.Command, patched.Spec.Backup.Command, "JSON replaced the bytes")
	patched.Labels = map[string]string{"team": "other"}

	s := testStrategy()
	s.PrepareForUpdate(context.Background(), patched, oldObj)
	assert.Empty(t, s.ValidateUpdate(context.Background(), patched, oldObj))
	assert.Equal(t, oldObj.Generation, patched.Generation, "no spec change")
	assert.Equal(t, oldObj.Spec.Backup.Command, patched.Spec.Backup.Command)
	assert.Equal(t, oldObj.Spec.Bootstrap.Command, patched.Spec.Bootstrap.Command)

	// An edit of another entry keeps what the user sent, U+FFFD included:
	// restoring the old bytes would refuse it for bytes never sent.
	edited := patched.DeepCopy()
	require.NoError(t, json.Unmarshal(data, edited))
	edited.Spec.Backup.Command[0] = "/backup2"
	s.PrepareForUpdate(context.Background(), edited, oldObj)
	assert.Empty(t, s.ValidateUpdate(context.Background(), edited, oldObj))
	assert.Equal(t, []string{"/backup2", "a\uFFFDb"}, edited.Spec.Backup.Command)
}

func TestStatusStrategyValidateAndWarnings(t *testing.T) {
	s := NewStatusStrategy(testStrategy())
	ctx := context.Background()
	oldObj := storedKVS()

	newObj := oldObj.DeepCopy()
	newObj.Status.ReadyReplicas = 4
	errs := s.ValidateUpdate(ctx, newObj, oldObj)
	require.Len(t, errs, 1, "errors: %v", errs)
	assert.Equal(t, "status.readyReplicas", errs[0].Field)

	// /status does not validate the spec.
	newObj = oldObj.DeepCopy()
	newObj.Spec.Replicas = ptr.To[int32](0)
	assert.Empty(t, s.ValidateUpdate(ctx, newObj, oldObj))

	newObj = oldObj.DeepCopy()
	newObj.Generation = 3
	newObj.Spec.Image = "redis:latest"
	assert.Nil(t, s.WarningsOnUpdate(ctx, newObj, oldObj))
}

func TestStrategyValidate(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()

	assert.Empty(t, s.Validate(ctx, newKVS()))

	bad := newKVS()
	bad.Spec.Port = 0
	errs := s.Validate(ctx, bad)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.port", errs[0].Field)

	oldObj := storedKVS()
	newObj := oldObj.DeepCopy()
	newObj.Spec.Storage.StorageClassName = ptr.To("fast")
	errs = s.ValidateUpdate(ctx, newObj, oldObj)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.storage.storageClassName", errs[0].Field)
}

func TestGetResetFields(t *testing.T) {
	for _, version := range []fieldpath.APIVersion{"kvstore.io/v1alpha1", "kvstore.io/v1beta1"} {
		t.Run(string(version), func(t *testing.T) { testGetResetFields(t, version) })
	}
}

func testGetResetFields(t *testing.T, version fieldpath.APIVersion) {
	mainFields := testStrategy().GetResetFields()
	require.Len(t, mainFields, 2)
	mainSet, ok := mainFields[version]
	require.True(t, ok, "keys: %v", mainFields)
	assert.True(t, mainSet.Equals(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))), "got %s", mainSet)
	assert.False(t, mainSet.Has(fieldpath.MakePathOrDie("spec")))

	status := NewStatusStrategy(testStrategy()).GetResetFields()
	require.Len(t, status, 2)
	statusSet, ok := status[version]
	require.True(t, ok, "keys: %v", status)
	want := fieldpath.NewSet(
		fieldpath.MakePathOrDie("spec"),
		fieldpath.MakePathOrDie("metadata", "labels"),
		fieldpath.MakePathOrDie("metadata", "annotations"),
		fieldpath.MakePathOrDie("metadata", "finalizers"),
		fieldpath.MakePathOrDie("metadata", "ownerReferences"),
	)
	assert.True(t, statusSet.Equals(want), "got %s", statusSet)
	assert.False(t, statusSet.Has(fieldpath.MakePathOrDie("status")))
}

func TestWarningsOnCreate(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*kvstore.KeyValueStore)
		contains []string // one substring per expected warning, in order
	}{
		{name: "pinned tag, odd replicas", mutate: func(*kvstore.KeyValueStore) {}},
		{name: "no tag", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "redis" }, contains: []string{`spec.image: "redis" has no tag or the tag "latest"`}},
		{name: "latest", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "redis:latest" }, contains: []string{`spec.image: "redis:latest"`}},
		{name: "registry port is not a tag", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "registry.local:5000/redis" }, contains: []string{`spec.image: "registry.local:5000/redis"`}},
		{name: "registry port and tag", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "registry.local:5000/redis:7.2" }},
		{name: "latest under a registry", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "registry.local:5000/team/redis:latest" }, contains: []string{"spec.image"}},
		{name: "tag merely containing latest", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "redis:latest-7" }},
		{name: "digest only", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "redis@" + digest }},
		{name: "latest pinned by digest", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Image = "redis:latest@" + digest }},
		{name: "even replicas", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Replicas = ptr.To[int32](4) }, contains: []string{"spec.replicas: 4 is even"}},
		{name: "nil replicas", mutate: func(k *kvstore.KeyValueStore) { k.Spec.Replicas = nil }},
		{
			name: "proxy image without tag",
			mutate: func(k *kvstore.KeyValueStore) {
				k.Spec.Proxy = &kvstore.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoy"}
			},
			contains: []string{`spec.proxy.image: "envoy"`},
		},
		{
			name:   "proxy without image",
			mutate: func(k *kvstore.KeyValueStore) { k.Spec.Proxy = &kvstore.ProxySpec{} },
		},
		{
			name:   "backup image is not checked",
			mutate: func(k *kvstore.KeyValueStore) { k.Spec.Backup = &kvstore.BackupSpec{Image: "backup:latest"} },
		},
		{
			name: "node port",
			mutate: func(k *kvstore.KeyValueStore) {
				k.Spec.Service = &kvstore.ClientService{Type: kvstore.ServiceTypeNodePort}
			},
			contains: []string{"spec.service.type: NodePort opens"},
		},
		{
			name: "load balancer open to every address",
			mutate: func(k *kvstore.KeyValueStore) {
				k.Spec.Service = &kvstore.ClientService{Type: kvstore.ServiceTypeLoadBalancer}
			},
			contains: []string{"spec.service: a LoadBalancer without loadBalancerSourceRanges"},
		},
		{
			name: "load balancer with source ranges",
			mutate: func(k *kvstore.KeyValueStore) {
				k.Spec.Service = &kvstore.ClientService{Type: kvstore.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
			},
		},
		{name: "cluster IP", mutate: func(k *kvstore.KeyValueStore) {
			k.Spec.Service = &kvstore.ClientService{Type: kvstore.ServiceTypeClusterIP}
		}},
		{
			name: "all three",
			mutate: func(k *kvstore.KeyValueStore) {
				k.Spec.Image = "redis:latest"
				k.Spec.Proxy = &kvstore.ProxySpec{Image: "envoy:latest"}
				k.Spec.Replicas = ptr.To[int32](2)
			},
			contains: []string{"spec.image", "spec.proxy.image", "spec.replicas: 2 is even"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := newKVS()
			tc.mutate(obj)
			warnings := testStrategy().WarningsOnCreate(context.Background(), obj)
			require.Len(t, warnings, len(tc.contains), "warnings: %q", warnings)
			for i, want := range tc.contains {
				assert.Contains(t, warnings[i], want)
			}
		})
	}
}

func TestWarningsOnUpdate(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	oldObj := storedKVS()
	oldObj.Spec.Image = "redis:latest"

	// Unchanged generation: the warning was given when the spec was written.
	newObj := oldObj.DeepCopy()
	newObj.Labels = map[string]string{"x": "y"}
	assert.Empty(t, s.WarningsOnUpdate(ctx, newObj, oldObj))

	// Spec changed (PrepareForUpdate bumped the generation): warn again.
	newObj = oldObj.DeepCopy()
	newObj.Spec.Replicas = ptr.To[int32](4)
	s.PrepareForUpdate(ctx, newObj, oldObj)
	require.Equal(t, oldObj.Generation+1, newObj.Generation)
	warnings := s.WarningsOnUpdate(ctx, newObj, oldObj)
	require.Len(t, warnings, 2, "warnings: %q", warnings)
	assert.True(t, strings.HasPrefix(warnings[0], "spec.image:"), warnings[0])
	assert.True(t, strings.HasPrefix(warnings[1], "spec.replicas:"), warnings[1])
}

// Opening the client Service beyond the cluster warns when it happens:
// not again on an unrelated change, again when the source ranges go.
func TestWarningsOnExposingTheClientService(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	update := func(old *kvstore.KeyValueStore, mutate func(*kvstore.KeyValueStore)) []string {
		obj := old.DeepCopy()
		mutate(obj)
		s.PrepareForUpdate(ctx, obj, old)
		require.NotEqual(t, old.Generation, obj.Generation)
		return s.WarningsOnUpdate(ctx, obj, old)
	}
	old := storedKVS()
	ranged := func(k *kvstore.KeyValueStore) {
		k.Spec.Service = &kvstore.ClientService{Type: kvstore.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
	}
	assert.Empty(t, update(old, ranged))

	ranged(old)
	warnings := update(old, func(k *kvstore.KeyValueStore) { k.Spec.Service.LoadBalancerSourceRanges = nil })
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "without loadBalancerSourceRanges")

	old.Spec.Service.LoadBalancerSourceRanges = nil
	assert.Empty(t, update(old, func(k *kvstore.KeyValueStore) { k.Spec.Replicas = ptr.To[int32](5) }), "told when it was opened")
	warnings = update(old, func(k *kvstore.KeyValueStore) { k.Spec.Service.Type = kvstore.ServiceTypeNodePort })
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "NodePort")
	// Removed: what server-side apply leaves is told (found by live review).
	warnings = update(old, func(k *kvstore.KeyValueStore) { k.Spec.Service = nil })
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "also set on it by hand")
	old.Spec.Service.Type = kvstore.ServiceTypeClusterIP
	assert.Empty(t, update(old, func(k *kvstore.KeyValueStore) { k.Spec.Service = nil }), "nothing was open")
}

// Taking the security context or the data replicas' resources away warns:
// a namespace that asks for them refuses the new Pods, and the rollout
// stops with a replica down (found by review).
func TestWarningsOnRemovingWhatANamespaceMayRequire(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	oldObj := storedKVS()
	oldObj.Spec.SecurityContext = &kvstore.SecurityContext{RunAsUser: 999}
	oldObj.Spec.Resources = &kvstore.Resources{Requests: map[string]resource.Quantity{"cpu": resource.MustParse("1")}}

	newObj := oldObj.DeepCopy()
	newObj.Spec.SecurityContext.RunAsUser = 1000
	s.PrepareForUpdate(ctx, newObj, oldObj)
	assert.Empty(t, s.WarningsOnUpdate(ctx, newObj, oldObj), "a change is no removal")

	newObj = oldObj.DeepCopy()
	newObj.Spec.SecurityContext, newObj.Spec.Resources = nil, nil
	s.PrepareForUpdate(ctx, newObj, oldObj)
	warnings := s.WarningsOnUpdate(ctx, newObj, oldObj)
	require.Len(t, warnings, 2, "warnings: %q", warnings)
	assert.True(t, strings.HasPrefix(warnings[0], "spec.securityContext: removed;"), warnings[0])
	assert.True(t, strings.HasPrefix(warnings[1], "spec.resources: removed;"), warnings[1])
}

// Pull secrets warn, when set or changed, that they replace the Pods'
// ServiceAccount's (found by review: the docs said "besides").
func TestWarningOnPullSecrets(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	obj := storedKVS()
	obj.Spec.ImagePullSecrets = []kvstore.LocalSecretReference{{Name: "registry"}}
	warnings := s.WarningsOnCreate(ctx, obj)
	require.Len(t, warnings, 1, "warnings: %q", warnings)
	assert.True(t, strings.HasPrefix(warnings[0], "spec.imagePullSecrets: "), warnings[0])

	newObj := obj.DeepCopy()
	newObj.Spec.Replicas = ptr.To[int32](5)
	s.PrepareForUpdate(ctx, newObj, obj)
	assert.Empty(t, s.WarningsOnUpdate(ctx, newObj, obj), "unchanged")

	newObj = obj.DeepCopy()
	newObj.Spec.ImagePullSecrets = append(newObj.Spec.ImagePullSecrets, kvstore.LocalSecretReference{Name: "mirror"})
	s.PrepareForUpdate(ctx, newObj, obj)
	assert.Len(t, s.WarningsOnUpdate(ctx, newObj, obj), 1)
}

// A new storage size warns what it does: growing cannot be undone and needs
// an expandable StorageClass; lowering shrinks nothing.
func TestWarningOnGrowingTheStorage(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	oldObj := storedKVS()
	newObj := oldObj.DeepCopy()
	newObj.Spec.Storage.Size = resource.MustParse("1024Mi")
	s.PrepareForUpdate(ctx, newObj, oldObj)
	assert.Empty(t, s.WarningsOnUpdate(ctx, newObj, oldObj), "the same size in another unit")

	newObj = oldObj.DeepCopy()
	newObj.Spec.Storage.Size = resource.MustParse("2Gi")
	s.PrepareForUpdate(ctx, newObj, oldObj)
	assert.Equal(t, []string{"spec.storage: every data replica's claim is asked for 2Gi, and a claim does not shrink back; " +
		"its StorageClass must allow volume expansion, see the store's StorageResized condition"}, s.WarningsOnUpdate(ctx, newObj, oldObj))

	newObj = oldObj.DeepCopy()
	newObj.Spec.Storage.Size = resource.MustParse("512Mi")
	s.PrepareForUpdate(ctx, newObj, oldObj)
	warnings := s.WarningsOnUpdate(ctx, newObj, oldObj)
	require.Len(t, warnings, 1)
	assert.True(t, strings.HasPrefix(warnings[0], "spec.storage: lowered to 512Mi, which shrinks no claim"), warnings[0])
}

func TestFloatingTag(t *testing.T) {
	for image, want := range map[string]bool{
		"redis":                          true,
		"redis:latest":                   true,
		"docker.io/library/redis":        true,
		"localhost:5000/redis":           true,
		"localhost:5000/redis:latest":    true,
		"redis:7":                        false,
		"localhost:5000/redis:7":         false,
		"redis@" + digest:                false,
		"localhost:5000/redis@" + digest: false,
		"redis:Latest":                   false, // tags are case-sensitive
	} {
		assert.Equal(t, want, floatingTag(image), image)
	}
}

// The generic registry calls the strategy through rest.BeforeCreate and
// rest.BeforeUpdate; these tests run that real sequence without storage.
func restCtx() context.Context {
	return genericapirequest.WithNamespace(genericapirequest.NewContext(), "default")
}

func schemeStrategy(t *testing.T) Strategy {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return NewStrategy(scheme)
}

func TestBeforeCreate(t *testing.T) {
	s := schemeStrategy(t)
	obj := newKVS()
	obj.UID = "uid"
	obj.CreationTimestamp = metav1.Now()
	obj.Finalizers = []string{"example.com/a"}
	obj.Status.Phase = kvstore.PhaseReady
	require.NoError(t, rest.BeforeCreate(s, restCtx(), obj))
	assert.Equal(t, int64(1), obj.Generation)
	assert.Equal(t, []string{"example.com/a", kvstore.TeardownFinalizer}, obj.Finalizers)
	assert.Empty(t, obj.Status.Phase)

	bad := newKVS()
	bad.UID = "uid"
	bad.CreationTimestamp = metav1.Now()
	bad.Spec.Replicas = ptr.To[int32](10)
	err := rest.BeforeCreate(s, restCtx(), bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.replicas")
}

func TestBeforeUpdate(t *testing.T) {
	s := schemeStrategy(t)

	t.Run("client cannot set generation", func(t *testing.T) {
		oldObj := storedKVS()
		newObj := oldObj.DeepCopy()
		newObj.Generation = 100
		require.NoError(t, rest.BeforeUpdate(s, restCtx(), newObj, oldObj))
		assert.Equal(t, int64(2), newObj.Generation)
	})

	t.Run("spec change bumps generation by one", func(t *testing.T) {
		oldObj := storedKVS()
		newObj := oldObj.DeepCopy()
		newObj.Generation = 100
		newObj.Spec.Image = "redis:7.4"
		require.NoError(t, rest.BeforeUpdate(s, restCtx(), newObj, oldObj))
		assert.Equal(t, int64(3), newObj.Generation)
	})

	t.Run("storage class change is rejected", func(t *testing.T) {
		oldObj := storedKVS()
		newObj := oldObj.DeepCopy()
		newObj.Spec.Storage.StorageClassName = ptr.To("fast")
		err := rest.BeforeUpdate(s, restCtx(), newObj, oldObj)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.storage")
	})

	t.Run("finalizer removal on a live store is undone", func(t *testing.T) {
		oldObj := storedKVS()
		newObj := oldObj.DeepCopy()
		newObj.Finalizers = nil
		require.NoError(t, rest.BeforeUpdate(s, restCtx(), newObj, oldObj))
		assert.Equal(t, []string{kvstore.TeardownFinalizer}, newObj.Finalizers)
	})

	t.Run("finalizer removal on a deleting store is kept", func(t *testing.T) {
		oldObj := storedKVS()
		now := metav1.Now()
		oldObj.DeletionTimestamp = &now
		oldObj.DeletionGracePeriodSeconds = ptr.To[int64](0)
		newObj := oldObj.DeepCopy()
		newObj.Finalizers = nil
		require.NoError(t, rest.BeforeUpdate(s, restCtx(), newObj, oldObj))
		assert.Empty(t, newObj.Finalizers)
	})

	t.Run("status write through /status", func(t *testing.T) {
		oldObj := storedKVS()
		newObj := oldObj.DeepCopy()
		newObj.Spec.Image = "redis:6"
		newObj.Status.ReadyReplicas = 2
		newObj.Status.Phase = kvstore.PhaseDegraded
		require.NoError(t, rest.BeforeUpdate(NewStatusStrategy(s), restCtx(), newObj, oldObj))
		assert.Equal(t, "redis:7.2", newObj.Spec.Image)
		assert.Equal(t, int32(2), newObj.Status.ReadyReplicas)
		assert.Equal(t, int64(2), newObj.Generation)
	})
}

// A running store that gains a DoNotSchedule spread constraint is warned
// that it moves no replica's volume; a constraint it had, a ScheduleAnyway
// one, or one given at create are not warned about.
func TestWarningOnSpreadAddedToARunningStore(t *testing.T) {
	s := testStrategy()
	ctx := context.Background()
	zone := kvstore.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: kvstore.DoNotSchedule, MinDomains: ptr.To[int32](3)}
	obj := storedKVS()
	obj.Spec.Scheduling = &kvstore.Scheduling{TopologySpreadConstraints: []kvstore.TopologySpreadConstraint{zone}}
	assert.Empty(t, s.WarningsOnCreate(ctx, obj), "set at create")

	update := func(old *kvstore.KeyValueStore, change func(*kvstore.KeyValueStoreSpec)) []string {
		newObj := old.DeepCopy()
		change(&newObj.Spec)
		s.PrepareForUpdate(ctx, newObj, old)
		return s.WarningsOnUpdate(ctx, newObj, old)
	}
	assert.Empty(t, update(obj, func(spec *kvstore.KeyValueStoreSpec) {
		spec.Replicas = ptr.To[int32](5)
		spec.Scheduling.TopologySpreadConstraints[0].MinDomains = ptr.To[int32](3) // the same, decoded anew
	}), "kept")
	for name, relax := range map[string]func(*kvstore.TopologySpreadConstraint){
		"ScheduleAnyway":     func(c *kvstore.TopologySpreadConstraint) { c.WhenUnsatisfiable = kvstore.ScheduleAnyway },
		"maxSkew raised":     func(c *kvstore.TopologySpreadConstraint) { c.MaxSkew = 2 },
		"minDomains removed": func(c *kvstore.TopologySpreadConstraint) { c.MinDomains = nil },
		"minDomains lowered": func(c *kvstore.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](2) },
	} {
		// Found by review: only ScheduleAnyway was silent.
		assert.Empty(t, update(obj, func(spec *kvstore.KeyValueStoreSpec) { relax(&spec.Scheduling.TopologySpreadConstraints[0]) }), "relaxed: "+name)
	}
	for name, tighten := range map[string]func(*kvstore.TopologySpreadConstraint){
		"minDomains raised": func(c *kvstore.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](4) },
		"another key":       func(c *kvstore.TopologySpreadConstraint) { c.TopologyKey = "kubernetes.io/hostname" },
	} {
		assert.Len(t, update(obj, func(spec *kvstore.KeyValueStoreSpec) { tighten(&spec.Scheduling.TopologySpreadConstraints[0]) }), 1, "tightened: "+name)
	}
	obj.Spec.Scheduling.TopologySpreadConstraints[0].MinDomains = nil
	assert.Len(t, update(obj, func(spec *kvstore.KeyValueStoreSpec) {
		spec.Scheduling.TopologySpreadConstraints[0].MinDomains = ptr.To[int32](2)
	}), 1, "tightened: minDomains set")
	assert.Empty(t, update(obj, func(spec *kvstore.KeyValueStoreSpec) {
		spec.Scheduling.TopologySpreadConstraints[0].MinDomains = ptr.To[int32](1)
	}), "minDomains 1 set: as unset (found by review)")
	obj.Spec.Scheduling.TopologySpreadConstraints[0].MaxSkew = 2
	assert.Len(t, update(obj, func(spec *kvstore.KeyValueStoreSpec) {
		spec.Scheduling.TopologySpreadConstraints[0].MaxSkew = 1
	}), 1, "tightened: maxSkew lowered")

	running := storedKVS()
	warnings := update(running, func(spec *kvstore.KeyValueStoreSpec) {
		spec.Scheduling = &kvstore.Scheduling{TopologySpreadConstraints: []kvstore.TopologySpreadConstraint{zone}}
	})
	require.Len(t, warnings, 1, "warnings: %q", warnings)
	assert.True(t, strings.HasPrefix(warnings[0], "spec.scheduling.topologySpreadConstraints: "), warnings[0])
}
