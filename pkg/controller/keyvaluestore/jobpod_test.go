package keyvaluestore

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// A backup whose Job's Pod was created but cannot start (a Secret of its
// envFrom missing, an image that cannot be pulled) says so, with one
// Warning event, until the Pod starts. Before, it read "runs" until its
// deadline failed it.
func TestABackupSaysWhyItsPodCannotStart(t *testing.T) {
	f, kvs, job := runningBackup(t)
	pod := f.runJobPod(kvs, job, ComponentBackup, "b-1-x", secretMissing())
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	want := `attempt 1: Job b-1: its Pod b-1-x cannot start: CreateContainerConfigError: secret "s3" not found`
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseRunning, b.Status.Phase)
	assert.Equal(t, want, b.Status.Message)
	assert.Equal(t, []string{"Warning PodCannotStart " + want}, f.events())
	assert.Nil(t, f.replicaFailure(kvs), "the Pod was created: not a ReplicaFailure")

	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	_, own := f.writes()
	assert.Empty(t, own, "told once")

	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	f.cache(pod)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, "attempt 1: Job b-1 runs", f.backup("b").Status.Message, "the Pod started")
}

// A bootstrap whose Job's Pod cannot start says so in its condition, with
// a Warning event; one that is still scheduled or pulled does not.
func TestABootstrapSaysWhyItsPodCannotStart(t *testing.T) {
	f, kvs, job := runningBootstrap(t)
	pod := f.runJobPod(kvs, job, ComponentBootstrap, "s-bootstrap-1-x", []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}})
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, "bootstrap Job s-bootstrap-1 runs (attempt 1)", f.bootstrapped(kvs).Message, "a Pod still starting")

	pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "seed:1"`}
	f.cache(pod)
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	c := f.bootstrapped(kvs)
	assert.Equal(t, ReasonBootstrapRunning, c.Reason)
	want := `bootstrap Job s-bootstrap-1 (attempt 1): its Pod s-bootstrap-1-x cannot start: ImagePullBackOff: Back-off pulling image "seed:1"`
	assert.Equal(t, want, c.Message)
	assert.Contains(t, f.events(), "Warning BootstrapRunning "+want)

	// The Job controller decides the deadline ran out (FailureTarget) and
	// terminates the Pod before it marks the Job Failed: the message stays
	// (found by review: it flipped back to "runs" for that second).
	job.Status.Active = 0
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}
	f.cache(job)
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.cache(pod)
	f.cache(f.stored(kvs))
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, want, f.bootstrapped(kvs).Message)
}

// A bootstrap whose Job cannot create its Pod (a ServiceAccount missing, a
// quota) says so in its condition, as a backup does, with a Warning event
// (found by review: it read "runs").
func TestABootstrapSaysWhyItsPodIsRefused(t *testing.T) {
	f, kvs, job := runningBootstrap(t)
	f.cache(failedCreate(job, testNow))
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	want := "bootstrap Job s-bootstrap-1 (attempt 1) cannot create its Pod: " + refusal
	assert.Equal(t, want, f.bootstrapped(kvs).Message)
	assert.Contains(t, f.events(), "Warning BootstrapRunning "+want)
}

// A backup keeps saying why its Pod could not start while the Job
// controller terminates it at the deadline (FailureTarget before Failed).
func TestABackupKeepsWhyItsPodCannotStartUntilItsAttemptFails(t *testing.T) {
	f, kvs, job := runningBackup(t)
	f.runJobPod(kvs, job, ComponentBackup, "b-1-x", waiting("ImagePullBackOff"))
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	want := "attempt 1: Job b-1: its Pod b-1-x cannot start: ImagePullBackOff"
	require.Equal(t, want, f.backup("b").Status.Message)

	job.Status.Active = 0
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}
	_, err = f.kube.BatchV1().Jobs(job.Namespace).UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refreshCache("ns")
	_, err = f.sync(f.stored(kvs))
	require.NoError(t, err)
	assert.Equal(t, want, f.backup("b").Status.Message)
}

// Once the deadline fails an attempt whose Pod never started, the
// backup's message keeps why (found by review: only "DeadlineExceeded" was
// left, and the reason lived on in events for an hour), also after the
// last attempt.
func TestAFailedAttemptKeepsWhyItsPodNeverStarted(t *testing.T) {
	f, kvs, job := runningBackup(t)
	var pod *corev1.Pod
	stuck := func(job *batchv1.Job) {
		if pod != nil { // the deadline's Pod is gone
			require.NoError(t, f.kubeInf.Core().V1().Pods().Informer().GetIndexer().Delete(pod))
		}
		pod = f.runJobPod(kvs, job, ComponentBackup, job.Name+"-x", waiting("ImagePullBackOff"))
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
	}
	stuck(job)
	f.finishJob("b-1", batchv1.JobFailed)
	f.passes(kvs, 2)
	msg := f.backup("b").Status.Message
	assert.True(t, strings.HasPrefix(msg, "attempt 1 failed (BackoffLimitExceeded, Job b-1; its Pod b-1-x cannot start: ImagePullBackOff); attempt 2 starts at "), msg)

	for attempt := 2; attempt <= backupAttemptLimit; attempt++ {
		f.now = f.now.Add(backupBackoff(attempt - 1))
		f.refreshCache("ns")
		_, err := f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
		name := backupJobName(f.backup("b"), attempt)
		stuck(f.job(name))
		f.finishJob(name, batchv1.JobFailed)
		f.refreshCache("ns")
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
	}
	b := f.backup("b")
	assert.Equal(t, v1alpha1.BackupPhaseFailed, b.Status.Phase)
	assert.Equal(t, "attempt 3 of 3 failed (BackoffLimitExceeded, Job b-3; its Pod b-3-x cannot start: ImagePullBackOff); no attempts left", b.Status.Message)
}

// An attempt whose Pod was held up, then ran and failed on its own exit
// code, is not blamed on what held it up (found by review: the stale
// "cannot start" reason was recorded as the failure's).
func TestAFailedAttemptWhosePodRanIsNotBlamedOnWhatHeldItUp(t *testing.T) {
	f, kvs, job := runningBackup(t)
	pod := f.runJobPod(kvs, job, ComponentBackup, "b-1-x", secretMissing())
	_, err := f.sync(f.stored(kvs))
	require.NoError(t, err)
	require.Contains(t, f.backup("b").Status.Message, "cannot start")

	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	f.cache(pod)
	f.finishJob("b-1", batchv1.JobFailed)
	f.passes(kvs, 2)
	msg := f.backup("b").Status.Message
	assert.True(t, strings.HasPrefix(msg, "attempt 1 failed (BackoffLimitExceeded, Job b-1); attempt 2 starts at "), msg)
}

// A bootstrap attempt failed while its Pod could not start keeps why in
// its failure message, as a backup does, through its backoff.
func TestAFailedBootstrapAttemptKeepsWhyItsPodNeverStarted(t *testing.T) {
	f, kvs, job := runningBootstrap(t)
	f.runJobPod(kvs, job, ComponentBootstrap, "s-bootstrap-1-x", waiting("ImagePullBackOff"))
	f.passes(kvs, 1)
	require.Equal(t, "bootstrap Job s-bootstrap-1 (attempt 1): its Pod s-bootstrap-1-x cannot start: ImagePullBackOff", f.bootstrapped(kvs).Message)

	f.finishJob("s-bootstrap-1", batchv1.JobFailed)
	f.passes(kvs, 3)
	c := f.bootstrapped(kvs)
	assert.Equal(t, ReasonBootstrapRetrying, c.Reason)
	assert.True(t, strings.HasPrefix(c.Message,
		"bootstrap attempt 1 failed (BackoffLimitExceeded, Job s-bootstrap-1; its Pod s-bootstrap-1-x cannot start: ImagePullBackOff); attempt 2 starts at "), c.Message)
}

// runningBootstrap is a store whose data tier is ready and whose first
// bootstrap Job was created and released, on refreshed caches, its events
// drained.
func runningBootstrap(t *testing.T) (*fixture, *v1alpha1.KeyValueStore, *batchv1.Job) {
	t.Helper()
	kvs := newStore(withBootstrap(""))
	f := newFixture(t, kvs)
	_, err := f.sync(kvs)
	require.NoError(t, err)
	f.markReady(kvs)
	for range 2 { // created held, then released
		_, err = f.sync(f.stored(kvs))
		require.NoError(t, err)
		f.refreshCache("ns")
	}
	job := f.job("s-bootstrap-1")
	require.False(t, heldByUs(job), "released")
	f.events()
	return f, kvs, job
}

// A Pod no node takes says what the scheduler said.
func TestWhyAnUnscheduledPodCannotStart(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}}}
	require.True(t, podCannotStart(p))
	assert.Equal(t, "Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", whyCannotStart(p))
}

// activeJob marks the Job as running one Pod, on the fake server and in
// the cache.
func (f *fixture) activeJob(job *batchv1.Job) {
	f.t.Helper()
	job.Status.Active = 1
	_, err := f.kube.BatchV1().Jobs(job.Namespace).UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	f.cache(job)
}

// jobPod is a Pod named name of the store's Job job, of component.
func jobPod(kvs *v1alpha1.KeyValueStore, job *batchv1.Job, component, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kvs.Namespace, Labels: labelsFor(kvs, component),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}}}
}

// bootstrapped is the store's stored Bootstrapped condition.
func (f *fixture) bootstrapped(kvs *v1alpha1.KeyValueStore) *metav1.Condition {
	f.t.Helper()
	c := meta.FindStatusCondition(f.stored(kvs).Status.Conditions, v1alpha1.ConditionBootstrapped)
	require.NotNil(f.t, c)
	return c
}

// runJobPod marks job, of the store's component, as running one Pod named
// name with statuses, on the fake server and in the cache, and returns the
// Pod.
func (f *fixture) runJobPod(kvs *v1alpha1.KeyValueStore, job *batchv1.Job, component, name string, statuses []corev1.ContainerStatus) *corev1.Pod {
	f.t.Helper()
	f.activeJob(job)
	pod := jobPod(kvs, job, component, name)
	pod.Status.ContainerStatuses = statuses
	f.addPod(pod)
	return pod
}

// secretMissing is a Job container waiting for the Secret of its envFrom.
func secretMissing() []corev1.ContainerStatus {
	return []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerConfigError", Message: `secret "s3" not found`}}}}
}
