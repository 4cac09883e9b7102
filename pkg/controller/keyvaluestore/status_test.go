package keyvaluestore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// wasReadyAt marks a store as having been fully ready at generation gen,
// all three replicas ready.
func wasReadyAt(kvs *v1alpha1.KeyValueStore, gen int64) {
	kvs.Status.Phase = v1alpha1.PhaseReady
	kvs.Status.CurrentImage = "redis:7.2"
	kvs.Status.Replicas, kvs.Status.ReadyReplicas, kvs.Status.UpdatedReplicas = 3, 3, 3
	meta.SetStatusCondition(&kvs.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonRolloutComplete, ObservedGeneration: gen})
}

// A replica lost is Degraded whatever the spec does meanwhile. Before, any
// new generation read Upgrading (Degraded=False) until the replica came
// back: a backup schedule or a `keep` edited, an HPA's /scale write of the
// same count, each hid a lost replica. What a change has not brought up yet
// is told from what was lost by the status last written: a loss takes a
// ready replica the store had (a rollout of the new generation takes one at
// a time), and Degraded holds until the store is Ready again.
func TestObserveTellsLostReplicasFromAChange(t *testing.T) {
	lose := func(s *appsv1.StatefulSet, n int32) *appsv1.StatefulSet {
		s.Status.ReadyReplicas -= n
		return s
	}
	tests := []struct {
		name     string
		setup    func(*v1alpha1.KeyValueStore) *appsv1.StatefulSet
		want     v1alpha1.KeyValueStorePhase
		degraded bool
	}{
		{"lost, recorded, then a spec change that touches no workload", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Status.Phase, k.Status.ReadyReplicas = v1alpha1.PhaseDegraded, 2
			meta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonReplicasLost, ObservedGeneration: 1})
			k.Generation = 2
			return lose(readySts("redis:7.2", 3), 1)
		}, v1alpha1.PhaseDegraded, true},
		{"lost in the same pass as a spec change that touches no workload", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Generation = 2
			return lose(readySts("redis:7.2", 3), 1)
		}, v1alpha1.PhaseDegraded, true},
		{"lost, recorded, then an image change", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Status.Phase, k.Status.ReadyReplicas = v1alpha1.PhaseDegraded, 2
			meta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonReplicasLost, ObservedGeneration: 1})
			k.Generation, k.Spec.Image = 2, "redis:7.4"
			s := lose(readySts("redis:7.4", 3), 1)
			s.Status.CurrentRevision = "r1"
			return s
		}, v1alpha1.PhaseDegraded, true},
		{"scale-up: its newest replica not ready yet", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Generation, k.Spec.Replicas = 2, ptr.To(int32(4))
			return lose(readySts("redis:7.2", 4), 1)
		}, v1alpha1.PhaseUpgrading, false},
		{"scale-up: a replica the store had lost meanwhile", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Generation, k.Spec.Replicas = 2, ptr.To(int32(4))
			return lose(readySts("redis:7.2", 4), 2)
		}, v1alpha1.PhaseDegraded, true},
		{"image rollout: the replica being replaced", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Generation, k.Spec.Image = 2, "redis:7.4"
			s := lose(readySts("redis:7.4", 3), 1)
			s.Status.CurrentRevision, s.Status.UpdatedReplicas = "r1", 1
			return s
		}, v1alpha1.PhaseUpgrading, false},
		{"image rollout: two replicas down", func(k *v1alpha1.KeyValueStore) *appsv1.StatefulSet {
			wasReadyAt(k, 1)
			k.Generation, k.Spec.Image = 2, "redis:7.4"
			s := lose(readySts("redis:7.4", 3), 2)
			s.Status.CurrentRevision, s.Status.UpdatedReplicas = "r1", 1
			return s
		}, v1alpha1.PhaseDegraded, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kvs := newStore()
			sts := tc.setup(kvs)
			st := observe(kvs, sts, nil, nil, bootstrapState{done: true}, nil)
			assert.Equal(t, tc.want, st.Phase)
			assert.Equal(t, tc.degraded, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded))
			for _, c := range st.Conditions {
				assert.Equal(t, kvs.Generation, c.ObservedGeneration, c.Type)
			}
		})
	}
}

// statefulSetState is what a StatefulSet's status shows at one step (its
// generation 2 observed unless told; revisions r1 and r2).
type statefulSetState struct {
	spec, replicas, ready, updated int32
	rolling, unobserved            bool
}

func dataStatefulSet(s statefulSetState) *appsv1.StatefulSet {
	sts := readySts("redis:7.2", s.spec)
	sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.UpdatedReplicas = s.replicas, s.ready, s.updated
	if s.rolling {
		sts.Status.CurrentRevision = "r1"
	}
	if s.unobserved {
		sts.Status.ObservedGeneration = 1
	}
	return sts
}

// deploymentState is what the proxy Deployment's status shows at one step;
// complete: its Progressing condition says the newest ReplicaSet is available.
type deploymentState struct {
	spec, replicas, updated, ready int32
	complete                       bool
}

func proxyAt(d deploymentState) *appsv1.Deployment {
	reason := "ReplicaSetUpdated"
	if d.complete {
		reason = deploymentRolloutComplete
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(d.spec)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: d.replicas, UpdatedReplicas: d.updated, ReadyReplicas: d.ready, AvailableReplicas: d.ready,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: reason}}}}
}

// Status, step by step, each pass starting from what the one before wrote
// (as after a restart: the controller keeps nothing else), with the
// StatefulSet's and the Deployment's statuses as their controllers write
// them. Found by review: the last step of a proxy rollout of four replicas
// read as a loss; losses during a stalled rollout added up unseen, one per
// pass, down to none ready; a refused apply forgot a loss.
func TestObserveStories(t *testing.T) {
	type step struct {
		sts      statefulSetState
		proxy    *deploymentState
		applyErr error
		phase    v1alpha1.KeyValueStorePhase
		degraded bool
	}
	up, ready, degraded := v1alpha1.PhaseUpgrading, v1alpha1.PhaseReady, v1alpha1.PhaseDegraded
	inTheWay := &objectInTheWayError{kind: "PersistentVolumeClaim", namespace: "ns", name: "data-s-3", problem: "bound by another store"}
	stories := []struct {
		name   string
		proxy  int32
		change func(*v1alpha1.KeyValueStore)
		steps  []step
	}{
		{"scale-up 3 to 5", 0, func(k *v1alpha1.KeyValueStore) { k.Spec.Replicas = ptr.To(int32(5)) }, []step{
			{sts: statefulSetState{spec: 5, replicas: 3, ready: 3, updated: 3, unobserved: true}, phase: up},
			{sts: statefulSetState{spec: 5, replicas: 4, ready: 3, updated: 4}, phase: up},
			{sts: statefulSetState{spec: 5, replicas: 4, ready: 4, updated: 4}, phase: up},
			{sts: statefulSetState{spec: 5, replicas: 5, ready: 4, updated: 5}, phase: up},
			{sts: statefulSetState{spec: 5, replicas: 5, ready: 5, updated: 5}, phase: ready},
		}},
		{"image rollout with a scale-up to 4", 0, func(k *v1alpha1.KeyValueStore) { k.Spec.Replicas = ptr.To(int32(4)) }, []step{
			{sts: statefulSetState{spec: 4, replicas: 3, ready: 3, updated: 3, unobserved: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 4, ready: 3, updated: 1, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 4, ready: 4, updated: 1, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 3, ready: 3, updated: 1, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 4, ready: 3, updated: 2, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 4, ready: 4, updated: 2, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 3, ready: 3, updated: 2, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 4, ready: 3, updated: 3, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 4, replicas: 4, ready: 4, updated: 4}, phase: ready},
		}},
		{"losses during a stalled rollout", 0, nil, []step{
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 0, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 2, ready: 2, updated: 0, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 2, updated: 1, rolling: true}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 1, updated: 1, rolling: true}, phase: degraded, degraded: true},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 0, updated: 1, rolling: true}, phase: degraded, degraded: true},
		}},
		{"a loss and a scale-up seen in one pass after a restart", 0, func(k *v1alpha1.KeyValueStore) { k.Spec.Replicas = ptr.To(int32(5)) }, []step{
			{sts: statefulSetState{spec: 5, replicas: 3, ready: 2, updated: 3, unobserved: true}, phase: degraded, degraded: true},
			{sts: statefulSetState{spec: 5, replicas: 3, ready: 2, updated: 3}, phase: degraded, degraded: true},
		}},
		{"proxy rollout of four replicas", 4, nil, []step{
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 5, updated: 1, ready: 4}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 4, updated: 1, ready: 3}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 5, updated: 4, ready: 4}, phase: up},
			// The old ReplicaSet scaled down before the last new Pod is ready.
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 4, updated: 4, ready: 3}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 4, updated: 4, ready: 4, complete: true}, phase: ready},
		}},
		{"losses during a stalled proxy rollout", 4, nil, []step{
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 5, updated: 1, ready: 4}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 4, updated: 1, ready: 3}, phase: up},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 3, updated: 3}, proxy: &deploymentState{spec: 4, replicas: 4, updated: 1, ready: 2}, phase: degraded, degraded: true},
		}},
		{"a refused apply does not forget a loss", 0, nil, []step{
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 2, updated: 3}, phase: degraded, degraded: true},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 2, updated: 3}, applyErr: inTheWay, phase: v1alpha1.PhaseFailed, degraded: true},
			{sts: statefulSetState{spec: 3, replicas: 3, ready: 2, updated: 3}, phase: degraded, degraded: true},
		}},
	}
	for _, story := range stories {
		t.Run(story.name, func(t *testing.T) {
			kvs := newStore()
			if story.proxy > 0 {
				kvs.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To(story.proxy), Image: "envoy:1"}
			}
			full := deploymentState{spec: story.proxy, replicas: story.proxy, updated: story.proxy, ready: story.proxy, complete: true}
			deployment := func(d *deploymentState) *appsv1.Deployment {
				if story.proxy == 0 {
					return nil
				}
				if d == nil {
					d = &full
				}
				return proxyAt(*d)
			}
			kvs.Status = observe(kvs, readySts("redis:7.2", 3), deployment(nil), nil, bootstrapState{done: true}, nil)
			require.Equal(t, ready, kvs.Status.Phase)
			kvs.Generation++
			if story.change != nil {
				story.change(kvs)
			}
			for i, s := range story.steps {
				kvs.Status = observe(kvs, dataStatefulSet(s.sts), deployment(s.proxy), s.applyErr, bootstrapState{done: true}, nil)
				assert.Equal(t, s.phase, kvs.Status.Phase, "step %d: %+v", i, s.sts)
				assert.Equal(t, s.degraded, meta.IsStatusConditionTrue(kvs.Status.Conditions, v1alpha1.ConditionDegraded), "step %d: %+v", i, s.sts)
			}
		})
	}
}

// A lost proxy replica is Degraded too, after a spec change as before one.
func TestObserveTellsALostProxyReplicaFromAChange(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptrInt32(2), Image: "envoy:1"}
	wasReadyAt(kvs, 1)
	kvs.Status.ProxyReadyReplicas = 2
	kvs.Generation = 2
	d := proxyAt(deploymentState{spec: 2, replicas: 2, updated: 2, ready: 1, complete: true})
	st := observe(kvs, readySts("redis:7.2", 3), d, nil, bootstrapState{done: true}, nil)
	assert.Equal(t, v1alpha1.PhaseDegraded, st.Phase)
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	require.NotNil(t, c)
	assert.Equal(t, "only 1/2 proxy replicas ready", c.Message)
}

func TestObservePhases(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "s", field.ErrorList{field.Invalid(field.NewPath("spec"), "", "bad")})
	tests := []struct {
		name     string
		setup    func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error)
		want     v1alpha1.KeyValueStorePhase
		degraded bool
	}{
		{"no statefulset yet", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return nil, nil }, v1alpha1.PhaseCreating, false},
		{"partly ready, never ready", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			s := readySts("redis:7.2", 3)
			s.Status.ReadyReplicas = 1
			return s, nil
		}, v1alpha1.PhaseCreating, false},
		{"ready", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return readySts("redis:7.2", 3), nil }, v1alpha1.PhaseReady, false},
		{"new generation rolling after ready", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			k.Generation = 2
			k.Spec.Image = "redis:7.4"
			return readySts("redis:7.2", 3), nil
		}, v1alpha1.PhaseUpgrading, false},
		{"lost replicas at the ready generation", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			s := readySts("redis:7.2", 3)
			s.Status.ReadyReplicas = 2
			return s, nil
		}, v1alpha1.PhaseDegraded, true},
		{"refused by the cluster", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return nil, invalid }, v1alpha1.PhaseFailed, false},
		{"transient error is not failure", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) { return nil, errors.New("timeout") }, v1alpha1.PhaseCreating, false},
		// A transient apply error leaves the cached StatefulSet, which runs
		// the previous generation's spec: before the fix a change that
		// readiness does not see (the proxy image, the port) was reported
		// Ready at the new generation.
		{"transient error at a new generation is not Ready", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			k.Generation = 2
			return readySts("redis:7.2", 3), errors.New("timeout")
		}, v1alpha1.PhaseUpgrading, false},
		{"transient error at the ready generation stays Ready", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			return readySts("redis:7.2", 3), errors.New("timeout")
		}, v1alpha1.PhaseReady, false},
		// kubectl rollout restart: a new revision rolls with no change to
		// the store. The replica restarting does not serve: Degraded, as
		// for any lost replica (a new revision that never gets ready must
		// warn, not show Upgrading for ever).
		{"StatefulSet rolling a revision the store did not ask for", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			wasReadyAt(k, 1)
			s := readySts("redis:7.2", 3)
			s.Status.CurrentRevision, s.Status.ReadyReplicas, s.Status.UpdatedReplicas = "r1", 2, 1
			return s, nil
		}, v1alpha1.PhaseDegraded, true},
		{"image pinned to a digest by an admission webhook", func(*v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			return readySts("redis:7.2@sha256:"+strings.Repeat("a", 64), 3), nil
		}, v1alpha1.PhaseReady, false},
		{"paused before anything exists", func(k *v1alpha1.KeyValueStore) (*appsv1.StatefulSet, error) {
			k.Spec.Paused = true
			return nil, nil
		}, v1alpha1.PhasePending, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kvs := newStore()
			sts, err := tc.setup(kvs)
			st := observe(kvs, sts, nil, err, bootstrapState{done: true}, nil)
			assert.Equal(t, tc.want, st.Phase)
			assert.Equal(t, kvs.Generation, st.ObservedGeneration)
			assert.Equal(t, tc.degraded, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded))
			for _, c := range st.Conditions {
				assert.Equal(t, kvs.Generation, c.ObservedGeneration, c.Type)
			}
			assert.LessOrEqual(t, st.ReadyReplicas, st.Replicas)
		})
	}
}

func TestObserveReadyRecordsImageAndWaitsForProxy(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptrInt32(2), Image: "envoy:1"}
	st := observe(kvs, readySts("redis:7.2", 3), nil, nil, bootstrapState{done: true}, nil)
	assert.Equal(t, v1alpha1.PhaseCreating, st.Phase, "not Ready while the proxy tier is missing")
	assert.Empty(t, st.CurrentImage, "currentImage is recorded once the whole store is Ready")
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable))

	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptrInt32(2)},
		Status: appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}}
	st = observe(kvs, readySts("redis:7.2", 3), d, nil, bootstrapState{done: true}, nil)
	assert.Equal(t, v1alpha1.PhaseReady, st.Phase)
	assert.Equal(t, "redis:7.2", st.CurrentImage)
	assert.Equal(t, int32(2), st.ProxyReadyReplicas)
}

func ptrInt32(v int32) *int32 { return &v }

// A status write that conflicts because the store was deleted and created
// again under the same name (the cache still holds the old one) must not
// carry on with the new store: before the fix the conflict handler took the
// fresh read whatever its UID, wrote the old store's status (Terminating,
// BackupSucceeded) onto the new one and left the caller, a teardown, working
// on it.
func TestUpdateStatusNeverSwitchesToAnotherStore(t *testing.T) {
	old := newStore(deleting)
	recreated := newStore(func(k *v1alpha1.KeyValueStore) { k.UID = "uid-2" })
	f := newFixture(t, recreated)
	conflicted := false
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicted {
			return false, nil, nil
		}
		conflicted = true
		return true, nil, apierrors.NewConflict(v1alpha1.Resource("keyvaluestores"), "s", errors.New("the object has been modified"))
	})
	stale := old.DeepCopy()
	_, err := f.c.updateStatus(context.Background(), stale, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseTerminating
		return st
	})
	assert.Error(t, err)
	assert.Equal(t, old.UID, stale.UID, "the caller keeps the store it was working on")
	assert.Empty(t, f.stored(recreated).Status.Phase, "the recreated store's status is not written")
}

// A store whose size was stored before the quantity guard existed is
// refused (422 on its size) when its whole object is sent back: its status
// goes as a JSON patch of /status instead. Before, its status never changed
// and a teardown waiting on it (the final backup's outcome) waited forever
// (found by review).
func TestStatusOfAStoreWithASizeFromBeforeTheGuard(t *testing.T) {
	kvs := newStore()
	f := newFixture(t, kvs)
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("KeyValueStore").GroupKind(), "s", field.ErrorList{
			field.Invalid(field.NewPath("spec", "storage", "size"), "10e2147483646", "the exponent must be between -1000 and 1000")})
	})
	_, err := f.c.updateStatus(context.Background(), kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseTerminating
		return st
	})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseTerminating, f.stored(kvs).Status.Phase)
	assert.Equal(t, v1alpha1.PhaseTerminating, kvs.Status.Phase, "the caller sees what was written")
}

// A transient error applying an owned object before the bootstrap step ran
// leaves the bootstrap as recorded. Before the fix it counted as "not
// done": a Ready store without spec.bootstrap flipped to Bootstrapping.
func TestTransientApplyErrorKeepsTheRecordedBootstrap(t *testing.T) {
	f, kvs := created(t)
	f.markReady(kvs)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Equal(t, v1alpha1.PhaseReady, f.stored(kvs).Status.Phase)
	f.refreshCache("ns")

	pdb, err := f.kube.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), "s", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, f.kube.PolicyV1().PodDisruptionBudgets("ns").Delete(context.Background(), "s", metav1.DeleteOptions{}))
	require.NoError(t, f.kubeInf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Delete(pdb))
	f.kube.PrependReactor("patch", "poddisruptionbudgets", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServerTimeout(policyv1.Resource("poddisruptionbudgets"), "patch", 1)
	})
	_, err = f.sync(f.stored(kvs))
	require.Error(t, err, "retried with backoff")
	assert.Equal(t, v1alpha1.PhaseReady, f.stored(kvs).Status.Phase)
}

// A status write that conflicts because the spec changed meanwhile is not
// recomputed for the new generation from the objects applied for the old
// one: the new generation's sync reports it. Before the fix a proxy image
// change made during the write was reported Ready at its generation.
func TestStatusConflictWithANewGenerationWritesNothing(t *testing.T) {
	kvs := newStore(withProxy(1))
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	_, err = f.sync(f.stored(kvs)) // data ready: the proxy is created
	require.NoError(t, err)
	f.markReady(kvs)
	conflicted := false
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicted {
			return false, nil, nil
		}
		conflicted = true
		// The tracker, not the clientset: a reactor runs under its lock.
		gvr := v1alpha1.SchemeGroupVersion.WithResource("keyvaluestores")
		obj, err := f.kvs.Tracker().Get(gvr, "ns", "s")
		require.NoError(t, err)
		changed := obj.(*v1alpha1.KeyValueStore).DeepCopy()
		changed.Generation = 2
		changed.Spec.Proxy.Image = "envoy:2"
		require.NoError(t, f.kvs.Tracker().Update(gvr, changed, "ns"))
		return true, nil, apierrors.NewConflict(v1alpha1.Resource("keyvaluestores"), "s", errors.New("changed"))
	})
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.True(t, conflicted)
	st := f.stored(kvs).Status
	assert.False(t, st.Phase == v1alpha1.PhaseReady && st.ObservedGeneration == 2, "Ready at generation 2, whose proxy image was never applied")
}

// The Warning that a store turned Degraded says what was lost. It carried
// the Progressing message, which at the generation once Ready still reads
// "all replicas run the current spec and are ready".
func TestTheDegradedEventSaysWhatWasLost(t *testing.T) {
	f, kvs := readyStore(t)
	sts, err := f.kube.AppsV1().StatefulSets("ns").Get(context.Background(), kvs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	sts.Status.ReadyReplicas = 2
	_, err = f.kube.AppsV1().StatefulSets("ns").UpdateStatus(context.Background(), sts, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, []string{"Warning Degraded Phase Ready -> Degraded: only 2/3 data replicas ready"}, f.events())
}

// A phase change is told once: a pass that started from a cached store
// older than the last status write, and whose own write conflicted, wrote
// nothing new over the fresh store, and must not tell the change again
// (found by review: every rollout told "Ready -> Upgrading" twice).
func TestAPhaseChangeIsToldOnceWhenAStaleWriteConflicts(t *testing.T) {
	f, kvs := readyStore(t)
	f.changeSpec(kvs, func(s *v1alpha1.KeyValueStoreSpec) { s.Replicas = ptr.To[int32](5) })
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Equal(t, v1alpha1.PhaseUpgrading, f.stored(kvs).Status.Phase)
	require.Len(t, f.phaseEvents(), 1)

	// The cache still has the store Ready; its write conflicts once.
	conflicted := f.statusWriteConflictsOnce(kvs)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.True(t, *conflicted)
	assert.Empty(t, f.phaseEvents(), "told again")
}

// The same in a teardown: its step's write, conflicting on a cached store
// older than the last pass's write, tells "Ready -> Terminating" once, and
// a Final backup's success once (found by review).
func TestATeardownToldOnceWhenAStaleWriteConflicts(t *testing.T) {
	f, kvs := readyStore(t, withBackup)
	k := f.stored(kvs)
	deleting(k)
	_, err := f.kvs.KvstoreV1alpha1().KeyValueStores("ns").Update(context.Background(), k, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refreshCache("ns")
	_, err = f.sync(k)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.PhaseTerminating, f.stored(kvs).Status.Phase)
	require.Len(t, f.phaseEvents(), 1)

	conflicted := f.statusWriteConflictsOnce(kvs)
	_, err = f.sync(k)
	require.NoError(t, err)
	require.True(t, *conflicted)
	assert.Empty(t, f.phaseEvents(), "told again")

}

// A Final backup's success is told once: a pass from a cached store older
// than the write that recorded it, whose own write conflicts, records
// nothing new and tells nothing (found by review).
func TestAFinalBackupToldOnceWhenAStaleWriteConflicts(t *testing.T) {
	kvs := newStore(withBackup, deleting)
	f := newFixture(t, kvs)
	f.passes(kvs, 2)
	f.finishJob("s-final-uid1-1", batchv1.JobComplete)
	succeeded := 0
	told := func() int {
		succeeded += len(slices.DeleteFunc(f.events(), func(e string) bool { return !strings.Contains(e, "Normal "+ReasonBackupSucceeded) }))
		return succeeded
	}
	for range 4 {
		if meta.IsStatusConditionTrue(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBackupSucceeded) {
			break
		}
		f.refreshCache("ns")
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
	}
	require.True(t, meta.IsStatusConditionTrue(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBackupSucceeded))
	require.Equal(t, 1, told())

	// The cache still has the store without the record.
	conflicted := f.statusWriteConflictsOnce(kvs)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.True(t, *conflicted)
	assert.Equal(t, 1, told(), "told again")
}

// A failed Final backup attempt's Warning is told once, also by a pass
// from a cached store older than the write that recorded it, whose own
// write conflicts while the data tier went down meanwhile (its message
// changes): what it goes over already told the attempt (found by review).
func TestAFailedFinalBackupToldOnceWhenAStaleWriteConflicts(t *testing.T) {
	f, kvs, ready := failedFinalBackup(t)
	f.refreshCache("ns")
	_, err := f.sync(f.stored(kvs)) // the backup's failure
	require.NoError(t, err)
	f.refreshCache("ns")
	warnings := 0
	told := func() int {
		warnings += strings.Count(strings.Join(f.events(), "\n"), "Warning "+ReasonBackupFailed)
		return warnings
	}
	for range 3 {
		if told() > 0 {
			break
		}
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
	}
	require.Equal(t, 1, told())

	// The cache of the store is left behind that write; the data tier goes down.
	require.NoError(t, f.kubeInf.Core().V1().Pods().Informer().GetIndexer().Delete(ready))
	conflicted := f.statusWriteConflictsOnce(kvs)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.True(t, *conflicted)
	assert.Contains(t, meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBackupSucceeded).Message, "no data replica")
	assert.Equal(t, 1, told(), "told again")
}

// statusWriteConflictsOnce makes the next status write of kvs conflict,
// as when another pass wrote the store first; it says whether one did.
func (f *fixture) statusWriteConflictsOnce(kvs *v1alpha1.KeyValueStore) *bool {
	conflicted := new(bool)
	f.kvs.PrependReactor("update", "keyvaluestores", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || *conflicted {
			return false, nil, nil
		}
		*conflicted = true
		return true, nil, apierrors.NewConflict(v1alpha1.Resource("keyvaluestores"), kvs.Name, errors.New("the object has been modified"))
	})
	return conflicted
}

// phaseEvents are the phase-change events recorded since the last drain.
func (f *fixture) phaseEvents() []string {
	var out []string
	for _, e := range f.events() {
		if strings.Contains(e, "Phase ") {
			out = append(out, e)
		}
	}
	return out
}

// Until the StatefulSet controller has seen the new template, none of the
// replicas is known to run it: the rollout starts at 0/N updated, as
// kubectl rollout status reads it. Before, the first Upgrading event of
// every rollout said "3/3 replicas updated" from the previous revision's
// status (found by live review).
func TestARolloutStartsWithNoReplicaUpdated(t *testing.T) {
	kvs := newStore()
	wasReadyAt(kvs, 1)
	kvs.Generation = 2
	sts := readySts("redis:7.3", 3)
	sts.Generation = 3 // just applied; its status is still of generation 2
	st := observe(kvs, sts, nil, nil, bootstrapState{done: true}, nil)
	assert.Equal(t, v1alpha1.PhaseUpgrading, st.Phase)
	assert.Zero(t, st.UpdatedReplicas)
	assert.Equal(t, "rolling out generation 2: 0/3 replicas updated",
		meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing).Message)
}
