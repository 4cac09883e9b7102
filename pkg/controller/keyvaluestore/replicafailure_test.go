package keyvaluestore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

const refusal = `create Pod s-0 in StatefulSet s failed error: pods "s-0" is forbidden: violates PodSecurity "restricted:latest"`

// failedCreate is the event the StatefulSet controller sends when it
// cannot create a Pod of sts, last at at.
func failedCreate(sts *appsv1.StatefulSet, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: sts.Name + ".1", Namespace: sts.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Namespace: sts.Namespace, Name: sts.Name, UID: sts.UID},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, Message: refusal,
		LastTimestamp: metav1.NewTime(at),
	}
}

// replicaFailure is the store's stored ReplicaFailure condition, or nil.
func (f *fixture) replicaFailure(kvs *v1alpha1.KeyValueStore) *metav1.Condition {
	return meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionReplicaFailure)
}

// A store whose StatefulSet cannot create its Pods (a quota, a Pod Security
// level, a webhook refuses them) says why in a ReplicaFailure condition,
// from the StatefulSet's FailedCreate event, until a Pod is created after
// it. Before, the store read Creating "0/3 data replicas ready" and
// nothing said why.
func TestAStoreSaysWhyItsPodsAreRefused(t *testing.T) {
	kvs := newStore()
	f := newFixture(t, kvs)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	sts := f.statefulSet(kvs)
	refused := appliedAt(sts).Add(time.Second) // the fake server stamps the apply with the clock
	f.cache(failedCreate(sts, refused))
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	cond := f.replicaFailure(kvs)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, ReasonFailedCreate, cond.Reason)
	assert.Equal(t, "StatefulSet s: "+refusal, cond.Message)
	assert.Equal(t, v1alpha1.PhaseCreating, f.stored(kvs).Status.Phase)

	pod := revisionPod(kvs, sts, 0, "r", false)
	pod.CreationTimestamp = metav1.NewTime(refused.Add(time.Second))
	f.addPod(pod)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Nil(t, f.replicaFailure(kvs), "a Pod created since: the refusal is over")
}

// Only a refusal of this StatefulSet that no Pod creation followed, while
// it lacks Pods, counts.
func TestAReplicaFailureIsCurrent(t *testing.T) {
	for name, setup := range map[string]func(f *fixture, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet){
		"an earlier StatefulSet of the name": func(f *fixture, _ *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) {
			e := failedCreate(sts, appliedAt(sts).Add(time.Second))
			e.InvolvedObject.UID = "earlier"
			f.cache(e)
		},
		"a Pod created after it": func(f *fixture, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) {
			refused := appliedAt(sts).Add(time.Second)
			f.cache(failedCreate(sts, refused))
			pod := revisionPod(kvs, sts, 0, "r", true)
			pod.CreationTimestamp = metav1.NewTime(refused.Add(time.Minute))
			f.addPod(pod)
		},
		// A refusal, then the quota raised and the Pod created, the store
		// scaled down and up again: the refusal is older than the scale-up
		// (found by review: it came back with the next Pod missing).
		"the StatefulSet changed since": func(f *fixture, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) {
			refused := appliedAt(sts).Add(time.Second)
			f.cache(failedCreate(sts, refused))
			f.setStatefulSet(kvs, "kube-controller-manager", func(s *appsv1.StatefulSet) {
				for i := range s.ManagedFields {
					if s.ManagedFields[i].Manager == FieldManager {
						s.ManagedFields[i].Time = ptr.To(metav1.NewTime(refused.Add(time.Minute)))
					}
				}
			})
		},
		"every Pod exists": func(f *fixture, kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) {
			f.cache(failedCreate(sts, appliedAt(sts).Add(time.Second)))
			f.setStatefulSet(kvs, "kube-controller-manager", func(s *appsv1.StatefulSet) { s.Status.Replicas = 3 })
		},
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore()
			f := newFixture(t, kvs)
			_, err := f.sync(f.stored(kvs))
			require.NoError(t, err)
			setup(f, kvs, f.statefulSet(kvs))
			_, err = f.sync(f.stored(kvs))
			require.NoError(t, err)
			assert.Nil(t, f.replicaFailure(kvs))
		})
	}
}

// The proxy Deployment's own ReplicaFailure condition is repeated.
func TestAStoreSaysWhyItsProxyPodsAreRefused(t *testing.T) {
	f, kvs := readyStore(t, withProxy(2))
	d, err := f.kube.AppsV1().Deployments(kvs.Namespace).Get(t.Context(), proxyName(kvs), metav1.GetOptions{})
	require.NoError(t, err)
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure,
		Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: `pods "s-proxy-1" is forbidden: exceeded quota`})
	_, err = f.kube.AppsV1().Deployments(kvs.Namespace).UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refreshCache(kvs.Namespace)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	cond := f.replicaFailure(kvs)
	require.NotNil(t, cond)
	assert.Equal(t, `Deployment s-proxy: pods "s-proxy-1" is forbidden: exceeded quota`, cond.Message)
}

// The events wake the store of their StatefulSet's name, and a change of
// the proxy Deployment's ReplicaFailure condition wakes its store.
func TestReplicaFailuresWakeTheStore(t *testing.T) {
	kvs := newStore()
	f := newFixture(t, kvs)
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	for f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
		f.c.queue.Forget(key)
	}
	f.c.enqueueStoreOfEvent(failedCreate(f.statefulSet(kvs), testNow))
	require.Equal(t, 1, f.c.queue.Len())
	key, _ := f.c.queue.Get()
	assert.Equal(t, "ns/s", key)

	d := &appsv1.Deployment{}
	failing := d.DeepCopy()
	failing.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Message: "x"}}
	assert.True(t, deploymentChanged(d, failing))
	assert.False(t, deploymentChanged(failing, failing.DeepCopy()))
}

func TestTruncateKeepsCharactersWhole(t *testing.T) {
	assert.Equal(t, "abc", truncate("abc", 3))
	assert.Equal(t, "a", truncate("aé", 2), "é is two bytes: cut before it")
	assert.Equal(t, "aé", truncate("aéb", 3))
	assert.Len(t, truncate(strings.Repeat("€", 400), maxFailureMessage), 1023)
}
