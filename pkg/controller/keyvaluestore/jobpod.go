package keyvaluestore

import (
	"cmp"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// ReasonPodCannotStart is the Warning event of a backup whose Job's Pod
// was created but cannot start.
const ReasonPodCannotStart = "PodCannotStart"

// jobPodStuck says why the Pod of job, a Job of the store's component that
// has not finished, was created but cannot start: its image cannot be
// pulled, a Secret or ConfigMap of its envFrom is missing
// (CreateContainerConfigError), no node takes it. "" when it runs or may
// still start. The Job's deadline fails such an attempt in the end; until
// then the backup or bootstrap would only read "runs".
func (c *Controller) jobPodStuck(kvs *v1alpha1.KeyValueStore, job *batchv1.Job, component string) string {
	if jobDecided(job) || job.Status.Active == 0 {
		return ""
	}
	pods := slices.DeleteFunc(c.jobPods(kvs, job, component), func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil || !podCannotStart(p)
	})
	if len(pods) == 0 {
		return ""
	}
	p := slices.MinFunc(pods, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	return truncate(fmt.Sprintf("its Pod %s cannot start: %s", p.Name, whyCannotStart(p)), maxFailureMessage)
}

// jobPodRan says a Pod of job ran a container (one terminated): what
// held it up before, if anything, did not fail it.
func (c *Controller) jobPodRan(kvs *v1alpha1.KeyValueStore, job *batchv1.Job, component string) bool {
	return slices.ContainsFunc(c.jobPods(kvs, job, component), func(p *corev1.Pod) bool {
		return slices.ContainsFunc(slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses),
			func(cs corev1.ContainerStatus) bool {
				return cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil
			})
	})
}

// jobPods are the cached Pods of job, a Job of the store's component
// (none if the cache cannot be read).
func (c *Controller) jobPods(kvs *v1alpha1.KeyValueStore, job *batchv1.Job, component string) []*corev1.Pod {
	pods, err := c.componentPods(kvs, component)
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return !metav1.IsControlledBy(p, job) })
}

// jobDecided: the Job has ended, or the Job controller has decided how
// (FailureTarget, SuccessCriteriaMet: it then terminates its Pods, and
// Complete or Failed follows). What held its Pod up is no longer news.
func jobDecided(job *batchv1.Job) bool {
	return slices.ContainsFunc([]batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet},
		func(t batchv1.JobConditionType) bool { return jobCondition(job, t) })
}

// whyCannotStart is the reason and message of what keeps p, a Pod that
// cannot start, from starting.
func whyCannotStart(p *corev1.Pod) string {
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && slices.Contains(cannotStartReasons, w.Reason) {
			return joinReason(w.Reason, w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return joinReason(c.Reason, c.Message)
		}
	}
	return "unschedulable"
}

func joinReason(reason, message string) string {
	if message == "" {
		return reason
	}
	return reason + ": " + message
}
