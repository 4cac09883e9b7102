package keyvaluestore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

const refusal = `create Pod s-0 in StatefulSet s failed error: pods "s-0" is forbidden: violates PodSecurity "restricted:latest"`

// failedCreate is the event a workload controller sends when it cannot
// create a Pod of obj (a StatefulSet or a Job), last at at.
func failedCreate(obj metav1.Object, at time.Time) *corev1.Event {
	kind := "StatefulSet"
	if _, ok := obj.(*batchv1.Job); ok {
		kind = "Job"
	}
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: obj.GetName() + ".1", Namespace: obj.GetNamespace()},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()},
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

// A backup Job that cannot create its Pod (a quota, a Pod Security level
// refuses it) is told on the backup, with one Warning event, and on the
// store's ReplicaFailure, until a Pod of it is created. Before, the backup
// read "runs" until its deadline failed it.
func TestABackupSaysWhyItsPodIsRefused(t *testing.T) {
	f, kvs, job := runningBackup(t)
	f.cache(failedCreate(job, testNow))
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseRunning, b.Status.Phase)
	assert.Equal(t, "attempt 1: Job b-1 cannot create its Pod: "+refusal, b.Status.Message)
	assert.Equal(t, []string{"Warning FailedCreate attempt 1: Job b-1 cannot create its Pod: " + refusal}, f.events())
	cond := f.replicaFailure(kvs)
	require.NotNil(t, cond)
	assert.Equal(t, "Job b-1: "+refusal, cond.Message)

	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	_, own := f.writes()
	assert.Empty(t, own, "told once")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-1-x", Namespace: "ns", Labels: labelsFor(kvs, ComponentBackup),
		CreationTimestamp: metav1.NewTime(testNow.Add(time.Minute)),
		OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}}}
	f.addPod(pod)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, "attempt 1: Job b-1 runs", f.backup("b").Status.Message, "a Pod created since: the refusal is over")
	assert.Nil(t, f.replicaFailure(kvs))
}

// A teardown keeps ReplicaFailure current: the Final backup's Job refused
// its Pod is told, and no longer once a Pod of it is created (found by
// review: the condition was neither set nor cleared during a teardown).
func TestATeardownSaysWhyTheFinalBackupsPodIsRefused(t *testing.T) {
	kvs := newStore(withBackup, deleting)
	f := newFixture(t, kvs)
	for range 2 { // the Final backup, then its first Job
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
	}
	job := f.job(backupJobName(f.backup(finalBackupName(kvs)), 1))
	f.cache(failedCreate(job, testNow))
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	cond := f.replicaFailure(kvs)
	require.NotNil(t, cond)
	assert.Equal(t, "Job "+job.Name+": "+refusal, cond.Message)
	assert.Equal(t, v1alpha1.PhaseTerminating, f.stored(kvs).Status.Phase)

	f.refreshCache("ns")
	f.addPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x", Namespace: "ns", Labels: labelsFor(kvs, ComponentBackup),
		CreationTimestamp: metav1.NewTime(testNow.Add(time.Minute)),
		OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}}})
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Nil(t, f.replicaFailure(kvs), "a Pod created since: the refusal is over")
}

// A Job's refusals name a new Pod each retry, and the recorder combines
// them after ten: each would rewrite the backup's status and the store's,
// with a Warning event, once per retry (found by review).
func TestAJobRefusalIsTheSameForEveryRetry(t *testing.T) {
	f, kvs, job := runningBackup(t)
	for i, msg := range []string{
		`Error creating: pods "b-1-g2nd9" is forbidden: failed quota: compute: must specify limits.memory`,
		`Error creating: pods "b-1-dh76m" is forbidden: failed quota: compute: must specify limits.memory`,
		`(combined from similar events): Error creating: pods "b-1-x8k2p" is forbidden: failed quota: compute: must specify limits.memory`,
	} {
		e := failedCreate(job, testNow.Add(time.Duration(i)*time.Minute))
		e.Message = msg
		f.cache(e)
		f.refreshCache("ns")
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
	}
	assert.Equal(t, `attempt 1: Job b-1 cannot create its Pod: Error creating: pods "b-1-…" is forbidden: failed quota: compute: must specify limits.memory`,
		f.backup("b").Status.Message)
	assert.Len(t, f.events(), 1, "one Warning event, not one per retry")
}

// runningBackup is a store whose Manual backup "b" runs its first Job, on
// refreshed caches, its events drained.
func runningBackup(t *testing.T) (*fixture, *v1alpha1.KeyValueStore, *batchv1.Job) {
	t.Helper()
	kvs := newStore(withBackup)
	f := newFixture(t, kvs, newBackup("b", v1alpha1.BackupReasonManual))
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.refreshCache("ns")
	f.events()
	return f, kvs, f.job(backupJobName(f.backup("b"), 1))
}

// A Job named with 58 characters or more has Pods named from its first 58
// (kube-apiserver cuts a generateName there): those are read as the same
// Pod too (found by review).
func TestAJobRefusalOfALongJobNameIsTheSameForEveryRetry(t *testing.T) {
	job := strings.Repeat("j", 60)
	prefix := job[:58]
	first := jobRefusal(`(combined from similar events): Error creating: pods "`+prefix+`abcde" is forbidden: x`, job)
	assert.Equal(t, `Error creating: pods "`+prefix+`…" is forbidden: x`, first)
	assert.Equal(t, first, jobRefusal(`Error creating: pods "`+prefix+`vwxyz" is forbidden: x`, job))
	assert.Equal(t, `pods "other-1-abcde" is forbidden`, jobRefusal(`pods "other-1-abcde" is forbidden`, "b-1"), "another Job's Pod is left as it is")
}

// job is the Job name on the fake server.
func (f *fixture) job(name string) *batchv1.Job {
	f.t.Helper()
	j, err := f.kube.BatchV1().Jobs("ns").Get(f.t.Context(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return j
}

// A Job's refusal counts only while the Job may still start a Pod.
func TestAJobRefusalIsCurrent(t *testing.T) {
	for name, change := range map[string]func(*batchv1.Job){
		"finished": func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
		},
		"suspended":  func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) },
		"a Pod runs": func(j *batchv1.Job) { j.Status.Active = 1 },
	} {
		t.Run(name, func(t *testing.T) {
			kvs := newStore(withBackup)
			f := newFixture(t, kvs)
			job := newJob("b-1", nil)
			job.UID = "job-uid"
			job.Labels = labelsFor(kvs, ComponentBackup)
			f.cache(job)
			f.cache(failedCreate(job, testNow))
			require.NotEmpty(t, f.c.jobFailure(kvs, job, ComponentBackup))
			change(job)
			assert.Empty(t, f.c.jobFailure(kvs, job, ComponentBackup))
		})
	}
}

// A Job's FailedCreate event wakes the store of the Job, if the Job is ours.
func TestAJobRefusalWakesItsStore(t *testing.T) {
	kvs := newStore(withBackup)
	f := newFixture(t, kvs)
	job := newJob("b-1", nil)
	job.Labels = labelsFor(kvs, ComponentBackup)
	f.c.enqueueStoreOfEvent(failedCreate(job, testNow))
	assert.Zero(t, f.c.queue.Len(), "not in the cache: not ours")
	f.cache(job)
	f.c.enqueueStoreOfEvent(failedCreate(job, testNow))
	require.Equal(t, 1, f.c.queue.Len())
	key, _ := f.c.queue.Get()
	assert.Equal(t, "ns/s", key)
}

func TestTruncateKeepsCharactersWhole(t *testing.T) {
	assert.Equal(t, "abc", truncate("abc", 3))
	assert.Equal(t, "a", truncate("aé", 2), "é is two bytes: cut before it")
	assert.Equal(t, "aé", truncate("aéb", 3))
	assert.Len(t, truncate(strings.Repeat("€", 400), maxFailureMessage), 1023)
}
