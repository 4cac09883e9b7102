package keyvaluestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Teardown steps, in order; each is the Progressing reason while it runs.
const (
	StepStopBootstrap  = "TeardownStopBootstrap"
	StepCutOffClients  = "TeardownCutOffClients"
	StepScaleDownProxy = "TeardownScaleDownProxy"
	StepFinalBackup    = "TeardownFinalBackup"
	StepScaleDownData  = "TeardownScaleDownData"
	StepDeleteClaims   = "TeardownDeleteClaims"

	// ReasonPodsStuckTerminating replaces a step's reason while some of the
	// Pods it waits for have outlived their grace period by stuckAfter.
	ReasonPodsStuckTerminating = "PodsStuckTerminating"
)

const (
	// waitFallback re-checks a waiting step even if an event were missed; the
	// step's progress normally arrives as Pod or Job events first.
	waitFallback = 30 * time.Second
	// stuckAfter: a Pod still there this long after its deletion deadline
	// (deletionTimestamp already includes the grace period) is reported.
	stuckAfter = 2 * time.Minute
)

// teardownRun is one pass of the teardown over one store.
type teardownRun struct {
	c   *Controller
	kvs *v1alpha1.KeyValueStore
	// terminating says the store's namespace is being deleted. Asked only
	// where it changes something (a wait, a backup), so that a store with
	// nothing running costs no request to kube-apiserver.
	terminating func() bool
}

// teardownStep is one ordered step: done says whether its goal holds (from
// the cluster's state, so a restart or a new leader resumes where the last
// one stopped); run moves toward it and says what it then waits for.
type teardownStep struct {
	reason string
	done   func(t *teardownRun, ctx context.Context) (bool, error)
	run    func(t *teardownRun, ctx context.Context) (stepWait, error)
}

// stepWait is what a step waits for: its message, a reason that replaces
// the step's own, and when to look again if no event comes first.
type stepWait struct {
	reason, message string
	after           time.Duration
	// warn sends a Warning event with the message when it is first recorded.
	warn bool
}

// teardownSteps is the order that keeps data safe: a bootstrap still
// writing is stopped (its Pods gone), clients off (the client Service, then
// the proxy), a final backup while the data tier still runs, then the data
// tier, and the claims last and only when the store's policy says so.
var teardownSteps = []teardownStep{
	{reason: StepStopBootstrap, done: (*teardownRun).bootstrapStopped, run: (*teardownRun).stopBootstrap},
	{reason: StepCutOffClients, done: (*teardownRun).clientServiceGone, run: (*teardownRun).deleteClientService},
	{reason: StepScaleDownProxy, done: (*teardownRun).proxyGone, run: (*teardownRun).scaleDownProxy},
	{reason: StepFinalBackup, done: (*teardownRun).finalBackupDone, run: (*teardownRun).runFinalBackup},
	{reason: StepScaleDownData, done: (*teardownRun).dataGone, run: (*teardownRun).scaleDownData},
	{reason: StepDeleteClaims, done: (*teardownRun).claimsGone, run: (*teardownRun).deleteClaims},
}

// teardown runs the first step whose goal does not hold, and releases the
// finalizer once every step is done.
//
// In a namespace being deleted the namespace controller deletes every Pod
// and claim itself, in no particular order, and the StatefulSet controller
// cannot even scale down there (it may need to write a ControllerRevision,
// which is forbidden): waiting for Pods could hold the namespace for a long
// time and protects nothing. Teardown then only asks for the scale-downs,
// skips the backup and releases the store.
func (c *Controller) teardown(ctx context.Context, kvs *v1alpha1.KeyValueStore) (result, error) {
	if !slices.Contains(kvs.Finalizers, v1alpha1.TeardownFinalizer) {
		return result{}, nil
	}
	t := &teardownRun{c: c, kvs: kvs}
	t.terminating = sync.OnceValue(func() bool { return c.namespaceTerminating(kvs) })
	for _, s := range teardownSteps {
		if ok, err := s.done(t, ctx); err != nil || ok {
			if err != nil {
				return result{}, fmt.Errorf("%s: %w", s.reason, err)
			}
			continue
		}
		w, err := s.run(t, ctx)
		if err != nil {
			return t.stepFailed(ctx, s.reason, err)
		}
		// A step may finish within its run (a backup recorded as done).
		if ok, err := s.done(t, ctx); err == nil && ok {
			continue
		}
		return t.wait(ctx, s.reason, w)
	}
	return result{}, c.releaseFinalizer(ctx, kvs)
}

// stepFailed makes a failing step visible (status and one Warning event per
// distinct error) and retries it: with the workqueue's backoff, or every
// waitFallback for an object in the way, which only the user can remove.
func (t *teardownRun) stepFailed(ctx context.Context, reason string, err error) (result, error) {
	res, statusErr := t.wait(ctx, reason, stepWait{message: "failed: " + err.Error(), warn: true})
	var inTheWay *objectInTheWayError
	if errors.As(err, &inTheWay) && statusErr == nil {
		return res, nil
	}
	return result{}, fmt.Errorf("%s: %w", reason, err)
}

// wait records the running step in status and waits for the next event.
func (t *teardownRun) wait(ctx context.Context, reason string, w stepWait) (result, error) {
	if w.reason != "" {
		reason = w.reason
	}
	if w.after == 0 {
		w.after = waitFallback
	}
	// The Final backup's Job, or one still running, may be refused its Pod
	// meanwhile, or no longer be: ReplicaFailure keeps saying so.
	failure := t.c.replicaFailure(t.kvs, t.c.ownedStatefulSet(t.kvs), t.c.ownedProxy(t.kvs))
	was, err := t.c.updateStatus(ctx, t.kvs, func(k *v1alpha1.KeyValueStore) v1alpha1.KeyValueStoreStatus {
		st := *k.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseTerminating
		st.NextBackupTime = nil // a store being deleted takes no scheduled backup
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: reason, Message: w.message, ObservedGeneration: k.Generation})
		setReplicaFailure(&st, failure, k.Generation)
		st.ObservedGeneration = k.Generation
		return st
	})
	if err == nil {
		t.c.recordPhaseChange(t.kvs, was.Phase)
		before := meta.FindStatusCondition(was.Conditions, v1alpha1.ConditionProgressing)
		if now := meta.FindStatusCondition(t.kvs.Status.Conditions, v1alpha1.ConditionProgressing); w.warn && !tellsTheSame(before, now) {
			t.c.recorder.Event(t.kvs, corev1.EventTypeWarning, reason, w.message)
		}
	}
	return result{requeueAfter: w.after}, err
}

// releaseFinalizer removes only our finalizer, and only from the version we
// examined, so a concurrent change is seen before the object can go. A
// patch, not an update: the informer's copy is trimmed (see CacheTransform)
// and must never be written back whole. No status write for this step: the
// object is about to disappear.
func (c *Controller) releaseFinalizer(ctx context.Context, kvs *v1alpha1.KeyValueStore) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      slices.DeleteFunc(slices.Clone(kvs.Finalizers), func(f string) bool { return f == v1alpha1.TeardownFinalizer }),
		"resourceVersion": kvs.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	if _, err := c.kvs.KvstoreV1alpha1().KeyValueStores(kvs.Namespace).Patch(ctx, kvs.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove finalizer: %w", err)
	}
	klog.FromContext(ctx).Info("Teardown finished; finalizer released")
	return nil
}

// Step 1: the client Service goes, so that no new client connection
// reaches the store while its final backup runs: without a proxy the
// Service selects the data Pods themselves, and writes accepted after the
// backup would be lost with the claims. The backup Job reaches the data
// Pods through the headless Service. Connections opened before stay up
// until their Pods stop (a proxy's in the next step).

func (t *teardownRun) clientServiceGone(ctx context.Context) (bool, error) {
	svc, err := t.clientService(ctx)
	// Being deleted counts once it selects no Pod: a finalizer on the
	// Service (a cloud load balancer's cleanup) must not hold the teardown,
	// but until it is gone its ClusterIP, Node ports and load balancer
	// still take clients to what it selects.
	return svc == nil || svc.DeletionTimestamp != nil && cutOff(svc), err
}

// labelClientsCutOff is the client Service's whole selector once the
// teardown cut clients off: it selects no Pod, and the EndpointSlice
// controller empties the Service's endpoints (it leaves those of a
// Service without a selector as they are).
const labelClientsCutOff = v1alpha1.GroupName + "/clients-cut-off"

func cutOff(svc *corev1.Service) bool {
	return len(svc.Spec.Selector) == 1 && svc.Spec.Selector[labelClientsCutOff] == "true"
}

// clientService is the store's client Service, nil if there is none of
// its own. The cache holds only objects labelled as ours: a miss is
// confirmed on the server (a Service unlabelled by hand still takes
// clients), until the store's status records a later step, which a pass
// recorded only after that confirmation.
func (t *teardownRun) clientService(ctx context.Context) (*corev1.Service, error) {
	svc, err := t.c.services.cached(t.kvs.Namespace, t.kvs.Name)
	if apierrors.IsNotFound(err) && !t.pastCutOff() {
		svc, err = t.c.services.live(ctx, t.kvs.Namespace, t.kvs.Name)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case !ours(svc, t.kvs):
		return nil, nil
	}
	return svc, nil
}

// pastCutOff: the store's status records a teardown step after the
// clients' cut-off (a reason that replaced a step's, such as
// PodsStuckTerminating, does not tell which step: it does not count).
func (t *teardownRun) pastCutOff() bool {
	c := meta.FindStatusCondition(t.kvs.Status.Conditions, v1alpha1.ConditionProgressing)
	return t.kvs.Status.Phase == v1alpha1.PhaseTerminating && c != nil &&
		slices.Contains([]string{StepScaleDownProxy, StepFinalBackup, StepScaleDownData, StepDeleteClaims}, c.Reason)
}

// cutOffClients makes the Service judged select no Pod, patched at the
// version of a fresh read: the cache's copy may be stale.
func (t *teardownRun) cutOffClients(ctx context.Context, svc *corev1.Service) error {
	services := t.c.kube.CoreV1().Services(t.kvs.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case live.UID != svc.UID:
			return fmt.Errorf("replaced since it was read (uid %s, now %s); looking again", svc.UID, live.UID)
		case cutOff(live):
			return nil
		}
		// The selector replaced whole, at the version read.
		selector := map[string]any{labelClientsCutOff: "true"}
		for k := range live.Spec.Selector {
			if k != labelClientsCutOff {
				selector[k] = nil
			}
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": live.ResourceVersion},
			"spec":     map[string]any{"selector": selector},
		})
		if err != nil {
			return err
		}
		_, err = services.Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		return err
	})
}

func (t *teardownRun) deleteClientService(ctx context.Context) (stepWait, error) {
	svc, err := t.clientService(ctx)
	if err != nil || svc == nil {
		return stepWait{}, err
	}
	var cutErr error
	if !cutOff(svc) {
		cutErr = t.cutOffClients(ctx, svc)
		if apierrors.IsNotFound(cutErr) {
			return stepWait{message: "client Service " + svc.Name + " deleted"}, nil
		}
		if cutErr != nil {
			// Deleted all the same (a webhook may refuse the selector's
			// change): one without a finalizer then goes, and counts as gone.
			cutErr = fmt.Errorf("cut client Service %s/%s off its Pods (it is deleted all the same, and counts as gone once it is: "+
				"a finalizer on it waits for this change): %w", t.kvs.Namespace, svc.Name, cutErr)
		}
	}
	if svc.DeletionTimestamp == nil {
		err = t.c.kube.CoreV1().Services(t.kvs.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(svc.UID))})
		if err != nil && !apierrors.IsNotFound(err) {
			return stepWait{}, errors.Join(cutErr, fmt.Errorf("delete client Service %s/%s: %w", t.kvs.Namespace, svc.Name, err))
		}
	}
	if cutErr != nil {
		return stepWait{}, cutErr
	}
	return stepWait{message: "client Service " + svc.Name + " deleted"}, nil
}

// Step 2: the proxy tier goes to zero and its Pods go.

func (t *teardownRun) proxyGone(context.Context) (bool, error) {
	d := t.c.ownedProxy(t.kvs)
	if d != nil && ptr.Deref(d.Spec.Replicas, 1) != 0 {
		return false, nil
	}
	return t.podsGone(ComponentProxy)
}

func (t *teardownRun) scaleDownProxy(ctx context.Context) (stepWait, error) {
	d, ok, err := ownedLive(ctx, t.c.deployments, t.kvs, proxyName(t.kvs))
	if err != nil {
		return stepWait{}, err
	}
	if ok && ptr.Deref(d.Spec.Replicas, 1) != 0 {
		if err := scaleToZero(ctx, t.c.kube.AppsV1().Deployments(t.kvs.Namespace).Patch, d.Name, d.UID); err != nil {
			return stepWait{}, fmt.Errorf("scale proxy Deployment %s/%s to 0: %w", t.kvs.Namespace, d.Name, err)
		}
	}
	w, err := t.waitForPods(ComponentProxy)
	if err != nil || ok || w.warn {
		return w, err
	}
	// No Deployment of the store's, yet proxy Pods run: their ReplicaSet
	// outlived it (deleted with --cascade=orphan) and keeps them. The
	// controller does not touch ReplicaSets; the user is told which.
	active, err := t.activePods(ComponentProxy)
	if err != nil {
		return stepWait{}, err
	}
	var sets []string
	for _, p := range active {
		// A Pod being deleted is going: the garbage collector removes a
		// Deployment's ReplicaSet and Pods after it.
		if ref := metav1.GetControllerOfNoCopy(p); p.DeletionTimestamp == nil && ref != nil && ref.Kind == "ReplicaSet" && !slices.Contains(sets, ref.Name) {
			sets = append(sets, ref.Name)
		}
	}
	if len(sets) > 0 {
		slices.Sort(sets)
		w.warn = true
		w.message += fmt.Sprintf("; the proxy Deployment is gone but its ReplicaSet %s keeps them running (deleted with --cascade=orphan?): delete it, kubectl delete replicaset -n %s %s",
			strings.Join(sets, ", "), t.kvs.Namespace, strings.Join(sets, " "))
	}
	return w, nil
}

// Step 4: the data tier goes to zero (the StatefulSet removes Pods highest
// ordinal first) and its Pods go.

func (t *teardownRun) dataGone(context.Context) (bool, error) {
	sts := t.c.ownedStatefulSet(t.kvs)
	if sts != nil && ptr.Deref(sts.Spec.Replicas, 1) != 0 {
		return false, nil
	}
	return t.podsGone(ComponentData)
}

func (t *teardownRun) scaleDownData(ctx context.Context) (stepWait, error) {
	sts, ok, err := ownedLive(ctx, t.c.statefulSets, t.kvs, t.kvs.Name)
	if err != nil {
		return stepWait{}, err
	}
	switch {
	case ok && ptr.Deref(sts.Spec.Replicas, 1) != 0:
		// A backup that still reads the data (a Manual one, with the Final
		// backup skipped) would fail, and with the claims deleted next the
		// data would have no copy: the data tier waits for it, as long as
		// its activeDeadlineSeconds.
		if j, err := t.backupReadingData(); err != nil || j != nil {
			if err != nil {
				return stepWait{}, err
			}
			return stepWait{message: backupReadingMessage(j), after: waitFallback}, nil
		}
		if err := scaleToZero(ctx, t.c.kube.AppsV1().StatefulSets(t.kvs.Namespace).Patch, sts.Name, sts.UID); err != nil {
			return stepWait{}, fmt.Errorf("scale StatefulSet %s/%s to 0: %w", t.kvs.Namespace, sts.Name, err)
		}
	case !ok:
		// Its Pods outlived it (deleted with --cascade=orphan): nothing
		// else removes them, and the final backup is behind us.
		if err := t.unblockScaleDown(ctx, true); err != nil {
			return stepWait{}, err
		}
	case sts.Status.ObservedGeneration >= sts.Generation:
		if err := t.unblockScaleDown(ctx, false); err != nil {
			return stepWait{}, err
		}
	}
	return t.waitForPods(ComponentData)
}

// backupReadingMessage says which backup the data tier waits for, and
// what ends the wait.
func backupReadingMessage(j *batchv1.Job) string {
	msg := "backup Job " + j.Name + " still reads the data; the data tier stays until it ends (after its activeDeadlineSeconds at the latest)"
	if backup := backupOfJob(j); backup != "" {
		msg += fmt.Sprintf(", or until its backup is gone (kubectl delete kvsbackup %s)", backup)
	}
	return msg
}

// backupOfJob is the name of the KeyValueStoreBackup that controls j, ""
// if none does.
func backupOfJob(j *batchv1.Job) string {
	if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == "KeyValueStoreBackup" {
		return ref.Name
	}
	return ""
}

// backupReadingData is a backup Job of the store whose Pod may read the
// data (nil if none): one not decided yet, whose Pod runs or may (also one
// whose Pod cannot start or be created for now: the scale-down may free
// what it waits for). Not one decided whose Pod only terminates (its Node
// gone, say), suspended or being deleted, nor the Final backup's own once
// the user skipped it, nor any in a namespace being deleted (the namespace
// controller removes them). The job controller decides a Job after its
// activeDeadlineSeconds at the latest; its backup gone, it goes too.
func (t *teardownRun) backupReadingData() (*batchv1.Job, error) {
	if t.terminating() {
		return nil, nil
	}
	jobs, err := componentObjects[*batchv1.Job](t.c.jobs, t.kvs, ComponentBackup)
	if err != nil {
		return nil, fmt.Errorf("list backup Jobs: %w", err)
	}
	final, skipped := finalBackupName(t.kvs), t.kvs.Annotations[v1alpha1.SkipFinalBackupAnnotation] == "true"
	for _, j := range jobs {
		if skipped && backupOfJob(j) == final {
			continue
		}
		if jobDecided(j) || ptr.Deref(j.Spec.Suspend, false) || j.DeletionTimestamp != nil {
			continue
		}
		return j, nil
	}
	return nil, nil
}

// ownedLive is the store's object of kind k named name, read with k.get (a
// teardown does not re-apply the label the cache selects on); ok is false
// when there is none of the store's.
func ownedLive[T metav1.Object, AC any](ctx context.Context, k ownedKind[T, AC], kvs *v1alpha1.KeyValueStore, name string) (obj T, ok bool, err error) {
	obj, err = k.get(ctx, kvs.Namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return obj, false, nil
	case err != nil:
		return obj, false, fmt.Errorf("get %s %s: %w", k.kind, name, err)
	}
	return obj, ours(obj, kvs), nil
}

// unblockScaleDown: an OrderedReady StatefulSet does not scale down while
// any of its Pods is not ready, so a store with a crash-looping replica
// would never finish its teardown. Once the StatefulSet has seen the scale
// to zero (the final backup is behind us), the highest ordinal left is
// deleted here, one Pod at a time, in the order the StatefulSet would use;
// orphaned Pods, which no StatefulSet removes, ready or not.
func (t *teardownRun) unblockScaleDown(ctx context.Context, orphaned bool) error {
	pods, err := t.c.componentPods(t.kvs, ComponentData)
	if err != nil {
		return err
	}
	if orphaned { // the garbage collector removed their controller reference
		pods = slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return metav1.GetControllerOfNoCopy(p) != nil })
	}
	var next *corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return nil // one at a time
		}
		if next == nil || ordinal(p) > ordinal(next) {
			next = p
		}
	}
	if next == nil || (!orphaned && !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return !podReady(p) })) {
		return nil // nothing left, or the StatefulSet controller can go on by itself
	}
	err = t.c.kube.CoreV1().Pods(next.Namespace).Delete(ctx, next.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &next.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete data Pod %s: %w", next.Name, err)
	}
	why := "the StatefulSet does not scale down while a Pod is not ready"
	if orphaned {
		why = "its StatefulSet is gone and nothing else removes it"
	}
	t.c.recorder.Eventf(t.kvs, corev1.EventTypeNormal, StepScaleDownData, "Deleted data Pod %s: %s", next.Name, why)
	return nil
}

// ordinal is a StatefulSet Pod's ordinal (-1 if its name has none).
func ordinal(p *corev1.Pod) int {
	n, err := strconv.Atoi(p.Name[strings.LastIndex(p.Name, "-")+1:])
	if err != nil {
		return -1
	}
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// patchFunc is the Patch method of a typed client.
type patchFunc[T any] func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)

// scaleToZero sets spec.replicas to 0; the uid in the patch is a
// precondition, so an object replaced under the same name is left alone.
func scaleToZero[T any](ctx context.Context, patch patchFunc[T], name string, uid types.UID) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "spec": map[string]any{"replicas": 0}})
	if err != nil {
		return err
	}
	_, err = patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podsGone fails closed: a failed list is an error, never "no Pods". In a
// terminating namespace Pods are the namespace controller's to delete.
func (t *teardownRun) podsGone(component string) (bool, error) {
	pods, err := t.activePods(component)
	if err != nil {
		return false, err
	}
	return len(pods) == 0 || t.terminating(), nil
}

// activePods are a component's Pods that may still run. A Pod that
// Succeeded or Failed runs nothing, and nothing may ever delete it: a
// ReplicaSet leaves its evicted Pods, scaled to zero or not, until the
// ReplicaSet itself goes (after the teardown).
func (t *teardownRun) activePods(component string) ([]*corev1.Pod, error) {
	pods, err := t.c.componentPods(t.kvs, component)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pods, podEnded), nil
}

func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// waitForPods says which Pods the step waits for, naming those stuck
// terminating (a Node that is gone never confirms their deletion).
func (t *teardownRun) waitForPods(component string) (stepWait, error) {
	pods, err := t.c.componentPods(t.kvs, component)
	if err != nil {
		return stepWait{}, err
	}
	// Any Pod stuck terminating is named, one that already ended too: held
	// by a finalizer, it still holds up its StatefulSet's scale-down.
	now := t.c.now()
	active := 0
	var stuck []string
	for _, p := range pods {
		if !podEnded(p) {
			active++
		}
		if p.DeletionTimestamp != nil && now.After(p.DeletionTimestamp.Add(stuckAfter)) {
			stuck = append(stuck, p.Name)
		}
	}
	w := stepWait{message: fmt.Sprintf("waiting for %d %s Pods to terminate", active, component)}
	if len(stuck) > 0 {
		slices.Sort(stuck)
		w.reason, w.warn = ReasonPodsStuckTerminating, true
		w.message += fmt.Sprintf("; stuck terminating for over %s past their grace period: %s. Their Node may be gone: "+
			"see \"A teardown that does not finish\" in docs/controller.md", stuckAfter, strings.Join(stuck, ", "))
	}
	return w, nil
}

// componentPods lists a component's Pods from the cache.
func (c *Controller) componentPods(kvs *v1alpha1.KeyValueStore, component string) ([]*corev1.Pod, error) {
	pods, err := componentObjects[*corev1.Pod](c.pods, kvs, component)
	if err != nil {
		return nil, fmt.Errorf("list %s Pods: %w", component, err)
	}
	return pods, nil
}

// Step 5: claims are deleted only when the policy says Delete; by default
// data outlives the store. (In a terminating namespace they go with it.)

func (t *teardownRun) claimsGone(context.Context) (bool, error) {
	if !deletesClaims(t.kvs) {
		return true, nil
	}
	claims, err := t.liveClaims()
	if err != nil {
		return false, err
	}
	return len(claims) == 0 || t.terminating(), nil
}

// deleteClaims re-reads the store from the server, not the cache, right
// before deleting: only a store that is still this one, still being deleted
// and still asking for its claims to go loses them.
func (t *teardownRun) deleteClaims(ctx context.Context) (stepWait, error) {
	fresh, err := t.c.kvs.KvstoreV1alpha1().KeyValueStores(t.kvs.Namespace).Get(ctx, t.kvs.Name, metav1.GetOptions{})
	if err != nil {
		return stepWait{}, fmt.Errorf("re-read the store before deleting claims: %w", err)
	}
	if fresh.UID != t.kvs.UID || fresh.DeletionTimestamp == nil || !deletesClaims(fresh) {
		return stepWait{message: "the store changed; looking again before deleting claims", after: time.Second}, nil
	}
	claims, err := t.liveClaims()
	if err != nil {
		return stepWait{}, err
	}
	for _, pvc := range claims {
		// Only the version judged from the cache: a claim changed since
		// (unlabelled to keep it, say) is judged again when the cache has it.
		err := t.c.kube.CoreV1().PersistentVolumeClaims(t.kvs.Namespace).Delete(ctx, pvc.Name, metav1.DeleteOptions{Preconditions: claimPreconditions(pvc)})
		switch {
		case apierrors.IsConflict(err):
			return stepWait{message: "claim " + pvc.Name + " changed; looking again before deleting it", after: time.Second}, nil
		case err != nil && !apierrors.IsNotFound(err):
			return stepWait{}, fmt.Errorf("delete claim %s: %w", pvc.Name, err)
		}
	}
	t.c.recorder.Eventf(t.kvs, corev1.EventTypeNormal, StepDeleteClaims, "Deleted %d PersistentVolumeClaims (persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)", len(claims))
	return stepWait{message: fmt.Sprintf("deleted %d PersistentVolumeClaims", len(claims))}, nil
}

// claimPreconditions pin a claim's deletion to the object judged: its UID,
// and its resourceVersion when it has one (an empty one would never match).
func claimPreconditions(pvc *corev1.PersistentVolumeClaim) *metav1.Preconditions {
	p := &metav1.Preconditions{UID: &pvc.UID}
	if pvc.ResourceVersion != "" {
		p.ResourceVersion = &pvc.ResourceVersion
	}
	return p
}

// liveClaims are the store's data claims not yet being deleted.
func (t *teardownRun) liveClaims() ([]*corev1.PersistentVolumeClaim, error) {
	claims, err := componentObjects[*corev1.PersistentVolumeClaim](t.c.claims, t.kvs, ComponentData)
	if err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	// A claim the store's StatefulSet did not make was kept (Retain) by an
	// earlier store of the same name, or made by hand: the policy of this
	// one does not reach it.
	sts := t.c.ownedStatefulSet(t.kvs)
	return slices.DeleteFunc(claims, func(c *corev1.PersistentVolumeClaim) bool {
		return c.DeletionTimestamp != nil || !claimOfStore(c, t.kvs, sts)
	}), nil
}

func deletesClaims(kvs *v1alpha1.KeyValueStore) bool {
	p := kvs.Spec.PersistentVolumeClaimRetentionPolicy
	return p != nil && p.WhenDeleted == v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType
}

// namespaceTerminating reads the store's namespace from the cache (a
// teardown asks at every reconcile while Pods remain). A namespace never
// stops terminating, and an error counts as "not terminating", the careful
// answer. The one stale "terminating" is a deleted namespace still cached
// after one of the same name was created: a terminating namespace admits
// no new objects, so a store created after that deletion began lives in
// the new one.
func (c *Controller) namespaceTerminating(kvs *v1alpha1.KeyValueStore) bool {
	ns, err := c.namespaces.Get(kvs.Namespace)
	if err != nil || ns.DeletionTimestamp == nil && ns.Status.Phase != corev1.NamespaceTerminating {
		return false
	}
	return ns.DeletionTimestamp == nil || !kvs.CreationTimestamp.After(ns.DeletionTimestamp.Time)
}

// Step 0: a bootstrap Job still running is stopped, and its Pods are gone,
// before anything else: it may be writing into the data tier.

func (t *teardownRun) activeBootstrapJobs() ([]*batchv1.Job, error) {
	jobs, err := t.c.bootstrapJobs(t.kvs)
	return slices.DeleteFunc(jobs, func(j *batchv1.Job) bool {
		return jobCondition(j, batchv1.JobComplete) || jobCondition(j, batchv1.JobFailed)
	}), err
}

func (t *teardownRun) bootstrapStopped(context.Context) (bool, error) {
	if t.kvs.Spec.Bootstrap == nil {
		return true, nil
	}
	jobs, err := t.activeBootstrapJobs()
	if err != nil || len(jobs) == 0 {
		return err == nil, err
	}
	// In a terminating namespace the namespace controller deletes the
	// Pods: once every Job's deletion is asked for, nothing is waited for.
	return t.terminating() && !slices.ContainsFunc(jobs, func(j *batchv1.Job) bool { return j.DeletionTimestamp == nil }), nil
}

func (t *teardownRun) stopBootstrap(ctx context.Context) (stepWait, error) {
	jobs, err := t.activeBootstrapJobs()
	if err != nil {
		return stepWait{}, err
	}
	// Foreground: the Job goes only after its Pods, so "no Job" means
	// nothing of the bootstrap runs any more.
	propagation := metav1.DeletePropagationForeground
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		err := t.c.kube.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
			PropagationPolicy: &propagation, Preconditions: &metav1.Preconditions{UID: &j.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return stepWait{}, fmt.Errorf("stop bootstrap Job %s: %w", j.Name, err)
		}
		t.c.recorder.Eventf(t.kvs, corev1.EventTypeNormal, "Deleted", "Stopped bootstrap Job %s: the store is being deleted", j.Name)
	}
	// The Jobs go once their Pods have: those stuck terminating are named.
	w, err := t.waitForPods(ComponentBootstrap)
	if err != nil {
		return stepWait{}, err
	}
	w.message = fmt.Sprintf("stopping %d bootstrap Job(s), %s", len(jobs), w.message)
	return w, nil
}
