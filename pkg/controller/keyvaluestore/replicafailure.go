package keyvaluestore

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// ReasonFailedCreate: a workload of the store cannot create its Pods.
const ReasonFailedCreate = "FailedCreate"

// FailedCreateEvents selects the events of a workload of kind that cannot
// create a Pod: the only events the controller caches, of StatefulSets and
// Jobs (failedCreateKinds), which have no status condition for it (a
// Deployment has ReplicaFailure). A field selector names one kind, so each
// kind has its informer.
func FailedCreateEvents(kind string) string {
	return fields.Set{"reason": "FailedCreate", "involvedObject.kind": kind}.AsSelector().String()
}

// failedCreateKinds are the kinds whose FailedCreate events are cached.
var failedCreateKinds = []string{"StatefulSet", "Job"}

// maxFailureMessage bounds what of a refusal the condition repeats.
const maxFailureMessage = 1024

// replicaFailure says why the store's workloads cannot create their Pods,
// "" when they can (or have not tried).
func (c *Controller) replicaFailure(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet, proxy *appsv1.Deployment) string {
	var why []string
	if msg := c.statefulSetFailure(kvs, sts); msg != "" {
		why = append(why, "StatefulSet "+sts.Name+": "+msg)
	}
	if proxy != nil {
		if cond := deploymentCondition(proxy, appsv1.DeploymentReplicaFailure); cond != nil && cond.Status == corev1.ConditionTrue {
			why = append(why, "Deployment "+proxy.Name+": "+cond.Message)
		}
	}
	for _, component := range []string{ComponentBootstrap, ComponentBackup} {
		jobs, err := componentObjects[*batchv1.Job](c.jobs, kvs, component)
		if err != nil {
			continue
		}
		slices.SortFunc(jobs, func(a, b *batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
		for _, j := range jobs {
			if msg := c.jobFailure(kvs, j, component); msg != "" {
				why = append(why, "Job "+j.Name+": "+msg)
			}
		}
	}
	return truncate(strings.Join(why, "; "), maxFailureMessage)
}

// statefulSetFailure is the refusal of sts's Pods (see refusal) while it
// lacks Pods and was not changed by the controller since: a scale-up or new
// template after the refusal is a new attempt (an old refusal, kept an hour
// as events are, would otherwise come back with the next Pod missing).
func (c *Controller) statefulSetFailure(kvs *v1alpha1.KeyValueStore, sts *appsv1.StatefulSet) string {
	if sts == nil || sts.Spec.Replicas == nil || sts.Status.Replicas >= *sts.Spec.Replicas {
		return ""
	}
	return c.refusal(kvs, sts, "StatefulSet", ComponentData, appliedAt(sts))
}

// jobFailure is the refusal of job's Pod (see refusal) while the Job has
// not finished, is not suspended, and runs no Pod. A Job's template does
// not change, so a refusal stands until a Pod is created.
func (c *Controller) jobFailure(kvs *v1alpha1.KeyValueStore, job *batchv1.Job, component string) string {
	if jobDecided(job) || ptr.Deref(job.Spec.Suspend, false) || job.Status.Active > 0 || ptr.Deref(job.Status.Terminating, 0) > 0 {
		return ""
	}
	return jobRefusal(c.refusal(kvs, job, "Job", component, time.Time{}), job.Name)
}

// combinedPrefix starts the message of an event the recorder aggregated
// from similar ones.
const combinedPrefix = "(combined from similar events): "

// jobRefusal is msg, a refusal of a Pod of Job job, the same for every
// retry: each names a new Pod (generated from the Job's name), and after
// ten the event recorder combines them. Otherwise every retry would
// rewrite the backup's status and the store's, with a Warning event.
func jobRefusal(msg, job string) string {
	if msg == "" {
		return "" // no refusal: nothing to compile a pattern for
	}
	msg = strings.TrimPrefix(msg, combinedPrefix)
	prefix := generatedNamePrefix(job + "-")
	return regexp.MustCompile(`pods "`+regexp.QuoteMeta(prefix)+`[a-z0-9]+"`).ReplaceAllLiteralString(msg, `pods "`+prefix+`…"`)
}

// maxGeneratedNamePrefix is how much of a generateName kube-apiserver keeps
// before the 5 random characters it adds (a name has at most 63).
const maxGeneratedNamePrefix = 58

// generatedNamePrefix is what kube-apiserver keeps of generateName, as
// the Job controller gives its Pods the Job's name and "-".
func generatedNamePrefix(generateName string) string {
	if len(generateName) > maxGeneratedNamePrefix {
		return generateName[:maxGeneratedNamePrefix]
	}
	return generateName
}

// refusal is the message of the newest FailedCreate event of owner, a
// workload of kind of the store whose Pods are of component, unless a Pod
// of it was created after that event (the refusal is over) or the
// controller changed it after (changedAt; zero if it does not count); ""
// if none.
func (c *Controller) refusal(kvs *v1alpha1.KeyValueStore, owner metav1.Object, kind, component string, changedAt time.Time) string {
	lister, ok := c.failedCreates[kind]
	if !ok {
		return ""
	}
	events, err := lister.Events(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return ""
	}
	var newest *corev1.Event
	for _, e := range events {
		if e.InvolvedObject.UID == owner.GetUID() && (newest == nil || lastSeen(e).After(lastSeen(newest))) {
			newest = e
		}
	}
	if newest == nil {
		return ""
	}
	seen := lastSeen(newest)
	if changedAt.After(seen) {
		return "" // changed since: the refusal was of what it ran before
	}
	pods, err := c.componentPods(kvs, component)
	if err != nil {
		return ""
	}
	for _, p := range pods {
		if metav1.IsControlledBy(p, owner) && p.CreationTimestamp.After(seen) {
			return ""
		}
	}
	return newest.Message
}

// appliedAt is when the controller last changed the StatefulSet's spec, by
// its managedFields entry; zero if it never did.
func appliedAt(sts *appsv1.StatefulSet) time.Time {
	for _, m := range sts.ManagedFields {
		if m.Manager == FieldManager && m.Operation == metav1.ManagedFieldsOperationApply && m.Subresource == "" && m.Time != nil {
			return m.Time.Time
		}
	}
	return time.Time{}
}

// lastSeen is when an event last happened, whichever API wrote it.
func lastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// setReplicaFailure records why, or removes the condition when there is
// nothing to say, as a Deployment does.
func setReplicaFailure(st *v1alpha1.KeyValueStoreStatus, why string, generation int64) {
	if why == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReplicaFailure)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue,
		Reason: ReasonFailedCreate, Message: why, ObservedGeneration: generation})
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // s[n] continues the character before the cut
	}
	return s[:n]
}

// enqueueStoreOfEvent queues the store named like the event's StatefulSet
// (a store's StatefulSet has its name; an event of another StatefulSet
// queues a key whose sync finds no store), or the store of the event's Job
// if the cache holds it (one of ours).
func (c *Controller) enqueueStoreOfEvent(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	e, ok := obj.(*corev1.Event)
	if !ok {
		return
	}
	switch e.InvolvedObject.Kind {
	case "StatefulSet":
		c.queue.Add(e.Namespace + "/" + e.InvolvedObject.Name)
	case "Job":
		if job, exists, err := c.jobs.GetByKey(e.Namespace + "/" + e.InvolvedObject.Name); err == nil && exists {
			c.enqueueOwner(job)
		}
	}
}
