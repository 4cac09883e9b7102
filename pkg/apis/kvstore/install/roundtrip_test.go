package install_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/install"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// kvstoreFuzzerFuncs makes fuzzed internal objects look as they do after
// v1alpha1 defaulting. The round trip decodes with a defaulting codec, so a
// fuzzed nil or zero field that has a default would not survive it.
func kvstoreFuzzerFuncs(_ runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(s *kvstore.KeyValueStoreSpec, c randfill.Continue) {
			c.FillNoCustom(s) // fill everything, then apply the defaults

			if s.Replicas == nil {
				s.Replicas = ptr.To[int32](3)
			}
			if s.Port == 0 {
				s.Port = 6379
			}
			if s.Storage.Size.IsZero() {
				s.Storage.Size = resource.MustParse(v1alpha1.DefaultStorageSize)
			}
			if s.Proxy != nil && s.Proxy.Replicas == nil {
				s.Proxy.Replicas = ptr.To[int32](0)
			}
			if s.Backup != nil && s.Backup.ActiveDeadlineSeconds == nil {
				s.Backup.ActiveDeadlineSeconds = ptr.To[int64](600)
			}
			if s.Backup != nil && s.Backup.Keep == nil {
				s.Backup.Keep = ptr.To[int32](7)
			}
			if s.Bootstrap != nil && s.Bootstrap.ActiveDeadlineSeconds == nil {
				s.Bootstrap.ActiveDeadlineSeconds = ptr.To[int64](600)
			}
			if s.Service != nil && s.Service.Type == "" {
				s.Service.Type = kvstore.ServiceTypeClusterIP
			}
			if s.PersistentVolumeClaimRetentionPolicy == nil {
				s.PersistentVolumeClaimRetentionPolicy = &kvstore.PersistentVolumeClaimRetentionPolicy{}
			}
			if s.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
				s.PersistentVolumeClaimRetentionPolicy.WhenDeleted = kvstore.RetainPersistentVolumeClaimRetentionPolicyType
			}
		},
		func(s *kvstore.KeyValueStoreStatus, c randfill.Continue) {
			c.FillNoCustom(s)
			// Half the objects without currentImage: v1beta1 then carries no
			// annotation for it, and that case must round-trip too.
			if c.Bool() {
				s.CurrentImage = ""
			}
			// Always carry a condition so every iteration exercises
			// metav1.Condition (the default fuzzer leaves half the slices nil).
			if len(s.Conditions) == 0 {
				var cond metav1.Condition
				c.Fill(&cond)
				s.Conditions = []metav1.Condition{cond}
			}
		},
		func(s *kvstore.KeyValueStoreBackupSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Reason == "" {
				s.Reason = kvstore.BackupReasonManual
			}
		},
		func(s *kvstore.KeyValueStoreBackupStatus, c randfill.Continue) {
			c.FillNoCustom(s)
			if len(s.Conditions) == 0 {
				var cond metav1.Condition
				c.Fill(&cond)
				s.Conditions = []metav1.Condition{cond}
			}
		},
	}
}

func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, install.Install, fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, kvstoreFuzzerFuncs))
}

// TestFuzzerProducesDefaultedObjects guards the fuzzer above: if it left a
// defaulted field empty the round trip would fail for a reason unrelated to
// conversion, and if it stopped filling Quantity or conditions the round trip
// would silently cover less.
func TestFuzzerProducesDefaultedObjects(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, kvstoreFuzzerFuncs), rand.NewSource(1), codecs)

	var sawProxy, sawBackup bool
	for i := 0; i < 50; i++ {
		obj := &kvstore.KeyValueStore{}
		f.Fill(obj)
		require.NotNil(t, obj.Spec.Replicas)
		require.NotZero(t, obj.Spec.Port)
		require.False(t, obj.Spec.Storage.Size.IsZero())
		require.NotNil(t, obj.Spec.PersistentVolumeClaimRetentionPolicy)
		require.NotEmpty(t, obj.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
		require.NotEmpty(t, obj.Status.Conditions)
		if obj.Spec.Proxy != nil {
			sawProxy = true
			require.NotNil(t, obj.Spec.Proxy.Replicas)
		}
		if obj.Spec.Backup != nil {
			sawBackup = true
			require.NotNil(t, obj.Spec.Backup.ActiveDeadlineSeconds)
		}

		// Defaulting a fuzzed object after conversion must change nothing,
		// in either version.
		for _, external := range []runtime.Object{&v1alpha1.KeyValueStore{}, &v1beta1.KeyValueStore{}} {
			require.NoError(t, scheme.Convert(obj, external, nil))
			defaulted := external.DeepCopyObject()
			scheme.Default(defaulted)
			require.True(t, apiequality.Semantic.DeepEqual(external, defaulted), "iteration %d: fuzzed object is not in defaulted form as %T", i, external)
		}
	}
	assert.True(t, sawProxy, "fuzzer never produced a proxy")
	assert.True(t, sawBackup, "fuzzer never produced a backup")
}

// TestRoundTripQuantityAndConditions round-trips one hand-written object
// through v1alpha1 JSON and checks the Quantity and the conditions exactly.
func TestRoundTripQuantityAndConditions(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	codec := codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)

	lastTransition := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	in := &kvstore.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", Generation: 4},
		Spec: kvstore.KeyValueStoreSpec{
			Replicas: ptr.To[int32](5),
			Image:    "redis:7.2",
			Port:     6380,
			Storage:  kvstore.StorageSpec{Size: resource.MustParse("1536Mi"), StorageClassName: ptr.To("fast")},
			Proxy:    &kvstore.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoy:1"},
			Backup: &kvstore.BackupSpec{
				Image: "backup:1", Command: []string{"/backup", "--all"}, ActiveDeadlineSeconds: ptr.To[int64](60),
				Schedule: "0 3 * * *", TimeZone: ptr.To("Europe/Berlin"), Keep: ptr.To[int32](7),
			},
			Bootstrap: &kvstore.BootstrapSpec{Image: "restore:1", FromBackup: "nightly", ActiveDeadlineSeconds: ptr.To[int64](60)},
			PersistentVolumeClaimRetentionPolicy: &kvstore.PersistentVolumeClaimRetentionPolicy{
				WhenDeleted: kvstore.DeletePersistentVolumeClaimRetentionPolicyType,
			},
			Paused: true,
		},
		Status: kvstore.KeyValueStoreStatus{
			Phase:              kvstore.PhaseDegraded,
			ObservedGeneration: 4,
			Replicas:           5,
			ReadyReplicas:      4,
			UpdatedReplicas:    5,
			ProxyReadyReplicas: 2,
			CurrentImage:       "redis:7.2",
			LastBackupTime:     &lastTransition,
			Selector:           "app.kubernetes.io/instance=demo",
			Conditions: []metav1.Condition{{
				Type:               kvstore.ConditionDegraded,
				Status:             metav1.ConditionTrue,
				ObservedGeneration: 4,
				LastTransitionTime: lastTransition,
				Reason:             "ReplicaLost",
				Message:            "4/5 replicas ready",
			}},
		},
	}

	data, err := runtime.Encode(codec, in)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"apiVersion":"kvstore.io/v1alpha1"`)
	assert.Contains(t, string(data), `"kind":"KeyValueStore"`)
	assert.Contains(t, string(data), `"size":"1536Mi"`)
	assert.Contains(t, string(data), `"lastTransitionTime":"2026-03-04T05:06:07Z"`)

	out, err := runtime.Decode(codec, data)
	require.NoError(t, err)
	got, ok := out.(*kvstore.KeyValueStore)
	require.True(t, ok, "decoded %T", out)

	assert.Zero(t, got.Spec.Storage.Size.Cmp(resource.MustParse("1536Mi")), "size %s", got.Spec.Storage.Size.String())
	require.Len(t, got.Status.Conditions, 1)
	assert.Equal(t, in.Status.Conditions[0].Reason, got.Status.Conditions[0].Reason)
	assert.True(t, in.Status.Conditions[0].LastTransitionTime.Equal(&got.Status.Conditions[0].LastTransitionTime))
	got.TypeMeta = metav1.TypeMeta{}
	assert.True(t, apiequality.Semantic.DeepEqual(in, got), "round trip changed the object:\nin:  %#v\ngot: %#v", in, got)
}
