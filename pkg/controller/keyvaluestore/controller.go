// Package keyvaluestore is the controller that turns each KeyValueStore into
// running workloads (Services, a StatefulSet, a PodDisruptionBudget and an
// optional proxy Deployment), reports their state in status, and runs the
// ordered teardown the kvstore.io/teardown finalizer guards.
package keyvaluestore

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	kvsinformers "github.com/kvstore-io/kvstore-apiserver/pkg/generated/informers/externalversions"
	kvslisters "github.com/kvstore-io/kvstore-apiserver/pkg/generated/listers/kvstore/v1alpha1"
)

// FieldManager owns, through server-side apply, the fields the controller sets.
const FieldManager = "kvstore-controller"

// Controller reconciles KeyValueStores.
type Controller struct {
	kube     kubernetes.Interface
	kvs      versioned.Interface
	recorder record.EventRecorder

	stores  kvslisters.KeyValueStoreLister
	backups kvslisters.KeyValueStoreBackupLister
	// backupIndex finds a store's backups (index storeNameIndex).
	backupIndex cache.Indexer
	// Pods, claims and Jobs are read by store and component (index
	// componentIndex).
	pods, claims, jobs cache.Indexer
	// namespaces is unfiltered (namespaces carry no label of ours).
	namespaces corelisters.NamespaceLister
	// failedCreates holds, per kind of failedCreateKinds, only the
	// FailedCreate events of that kind (FailedCreateEvents).
	failedCreates map[string]corelisters.EventLister
	synced        []cache.InformerSynced

	// The kinds the controller applies, each with its cache, live read,
	// extraction of our applied fields and apply call.
	services     ownedKind[*corev1.Service, *corev1ac.ServiceApplyConfiguration]
	statefulSets ownedKind[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration]
	deployments  ownedKind[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]
	pdbs         ownedKind[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration]
	jobKind      ownedKind[*batchv1.Job, *batchv1ac.JobApplyConfiguration]

	queue workqueue.TypedRateLimitingInterface[string]
	// now is replaceable in tests.
	now func() metav1.Time
}

var applyOptions = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// newController wires a Controller to informers. Kube informers should be
// filtered to objects labelled app.kubernetes.io/managed-by=kvstore-apiserver;
// the namespace informer is not.
// failedCreates, one per kind of failedCreateKinds, should be filtered to
// FailedCreateEvents of their kind.
func newController(kube kubernetes.Interface, kvs versioned.Interface, kubeInformers kubeinformers.SharedInformerFactory, kvsInformers kvsinformers.SharedInformerFactory, namespaces coreinformers.NamespaceInformer, failedCreates map[string]coreinformers.EventInformer, recorder record.EventRecorder) (*Controller, error) {
	stsLister := kubeInformers.Apps().V1().StatefulSets().Lister()
	deployLister := kubeInformers.Apps().V1().Deployments().Lister()
	svcLister := kubeInformers.Core().V1().Services().Lister()
	pdbLister := kubeInformers.Policy().V1().PodDisruptionBudgets().Lister()
	jobLister := kubeInformers.Batch().V1().Jobs().Lister()
	c := &Controller{
		kube:          kube,
		kvs:           kvs,
		recorder:      preferredVersionRecorder{recorder},
		stores:        kvsInformers.Kvstore().V1alpha1().KeyValueStores().Lister(),
		backups:       kvsInformers.Kvstore().V1alpha1().KeyValueStoreBackups().Lister(),
		pods:          kubeInformers.Core().V1().Pods().Informer().GetIndexer(),
		claims:        kubeInformers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer(),
		jobs:          kubeInformers.Batch().V1().Jobs().Informer().GetIndexer(),
		namespaces:    namespaces.Lister(),
		failedCreates: map[string]corelisters.EventLister{},
		services: ownedKind[*corev1.Service, *corev1ac.ServiceApplyConfiguration]{
			kind:   "Service",
			memo:   newAppliedMemo(false),
			cached: func(ns, name string) (*corev1.Service, error) { return svcLister.Services(ns).Get(name) },
			live: func(ctx context.Context, ns, name string) (*corev1.Service, error) {
				return kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			},
			extract: func(o *corev1.Service) (*corev1ac.ServiceApplyConfiguration, error) {
				return corev1ac.ExtractService(o, FieldManager)
			},
			apply: func(ctx context.Context, ns string, ac *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
				return kube.CoreV1().Services(ns).Apply(ctx, ac, applyOptions)
			},
		},
		statefulSets: ownedKind[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration]{
			kind:   "StatefulSet",
			memo:   newAppliedMemo(true),
			cached: func(ns, name string) (*appsv1.StatefulSet, error) { return stsLister.StatefulSets(ns).Get(name) },
			live: func(ctx context.Context, ns, name string) (*appsv1.StatefulSet, error) {
				return kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
			},
			extract: func(o *appsv1.StatefulSet) (*appsv1ac.StatefulSetApplyConfiguration, error) {
				return appsv1ac.ExtractStatefulSet(o, FieldManager)
			},
			normalize: samePinnedImage,
			adapt:     keepClaimTemplate,
			apply: func(ctx context.Context, ns string, ac *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
				return kube.AppsV1().StatefulSets(ns).Apply(ctx, ac, applyOptions)
			},
		},
		deployments: ownedKind[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]{
			kind:   "Deployment",
			memo:   newAppliedMemo(true),
			cached: func(ns, name string) (*appsv1.Deployment, error) { return deployLister.Deployments(ns).Get(name) },
			live: func(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
				return kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			},
			extract: func(o *appsv1.Deployment) (*appsv1ac.DeploymentApplyConfiguration, error) {
				return appsv1ac.ExtractDeployment(o, FieldManager)
			},
			normalize: samePinnedProxyImage,
			apply: func(ctx context.Context, ns string, ac *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
				return kube.AppsV1().Deployments(ns).Apply(ctx, ac, applyOptions)
			},
		},
		pdbs: ownedKind[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration]{
			kind: "PodDisruptionBudget",
			memo: newAppliedMemo(true),
			cached: func(ns, name string) (*policyv1.PodDisruptionBudget, error) {
				return pdbLister.PodDisruptionBudgets(ns).Get(name)
			},
			live: func(ctx context.Context, ns, name string) (*policyv1.PodDisruptionBudget, error) {
				return kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
			},
			extract: func(o *policyv1.PodDisruptionBudget) (*policyv1ac.PodDisruptionBudgetApplyConfiguration, error) {
				return policyv1ac.ExtractPodDisruptionBudget(o, FieldManager)
			},
			apply: func(ctx context.Context, ns string, ac *policyv1ac.PodDisruptionBudgetApplyConfiguration) (*policyv1.PodDisruptionBudget, error) {
				return kube.PolicyV1().PodDisruptionBudgets(ns).Apply(ctx, ac, applyOptions)
			},
		},
		jobKind: ownedKind[*batchv1.Job, *batchv1ac.JobApplyConfiguration]{
			kind:   "Job",
			cached: func(ns, name string) (*batchv1.Job, error) { return jobLister.Jobs(ns).Get(name) },
			live: func(ctx context.Context, ns, name string) (*batchv1.Job, error) {
				return kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			},
			// Jobs are created once and never reapplied: nothing to extract.
			createOnly: true,
			apply: func(ctx context.Context, ns string, ac *batchv1ac.JobApplyConfiguration) (*batchv1.Job, error) {
				return kube.BatchV1().Jobs(ns).Apply(ctx, ac, applyOptions)
			},
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "keyvaluestore"}),
		now: metav1.Now,
	}

	// Read by every teardown reconcile that waits for Pods; no handler: a
	// namespace's deletion reaches the stores through their Pods' events.
	c.synced = append(c.synced, namespaces.Informer().HasSynced)
	// A StatefulSet that cannot create a Pod wakes the store of its name, a
	// Job of ours its store.
	for kind, inf := range failedCreates {
		c.failedCreates[kind] = inf.Lister()
		if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueStoreOfEvent,
			UpdateFunc: func(_, obj any) { c.enqueueStoreOfEvent(obj) },
			DeleteFunc: c.enqueueStoreOfEvent,
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.Informer().HasSynced)
	}

	// An object's memo entry goes with it.
	for _, o := range []struct {
		inf  cache.SharedIndexInformer
		memo *appliedMemo
	}{
		{kubeInformers.Core().V1().Services().Informer(), c.services.memo},
		{kubeInformers.Apps().V1().StatefulSets().Informer(), c.statefulSets.memo},
		{kubeInformers.Apps().V1().Deployments().Informer(), c.deployments.memo},
		{kubeInformers.Policy().V1().PodDisruptionBudgets().Informer(), c.pdbs.memo},
	} {
		if _, err := o.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: o.memo.forget}); err != nil {
			return nil, err
		}
	}
	for _, inf := range []cache.SharedIndexInformer{kubeInformers.Core().V1().Pods().Informer(),
		kubeInformers.Core().V1().PersistentVolumeClaims().Informer(), kubeInformers.Batch().V1().Jobs().Informer()} {
		if err := addIndex(inf, componentIndex, componentKeys); err != nil {
			return nil, err
		}
	}

	storeInformer := kvsInformers.Kvstore().V1alpha1().KeyValueStores().Informer()
	if _, err := storeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		// Not on a status-only change: status is ours, and each of our own
		// status writes would otherwise cost one more (idle) reconcile.
		UpdateFunc: func(old, obj interface{}) {
			if specOrMetadataChanged(old, obj) || !reflect.DeepEqual(old.(metav1.Object).GetFinalizers(), obj.(metav1.Object).GetFinalizers()) {
				c.enqueue(obj)
			}
		},
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	c.synced = append(c.synced, storeInformer.HasSynced)

	// A store's backups are reconciled with the store (see syncBackups).
	backupInformer := kvsInformers.Kvstore().V1alpha1().KeyValueStoreBackups().Informer()
	if err := addIndex(backupInformer, storeNameIndex, backupStoreKey); err != nil {
		return nil, err
	}
	c.backupIndex = backupInformer.GetIndexer()
	if _, err := backupInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueBackupStore,
		UpdateFunc: func(_, obj interface{}) { c.enqueueBackupStore(obj) },
		DeleteFunc: c.enqueueBackupStore,
	}); err != nil {
		return nil, err
	}
	c.synced = append(c.synced, backupInformer.HasSynced)

	// Owned objects. Status is computed from a few fields of the StatefulSet's
	// and the proxy Deployment's status (the workload controllers write
	// others, e.g. conditions and available counts, in separate updates that
	// would each cost an idle reconcile); a Service's status is never read;
	// backups and the teardown read every part of a Job.
	for _, w := range []struct {
		inf     cache.SharedIndexInformer
		changed func(old, new any) bool
	}{
		{kubeInformers.Apps().V1().StatefulSets().Informer(), statefulSetChanged},
		{kubeInformers.Apps().V1().Deployments().Informer(), deploymentChanged},
		{kubeInformers.Core().V1().Services().Informer(), serviceChanged},
		{kubeInformers.Batch().V1().Jobs().Informer(), nil},
	} {
		var opts []watchOption
		if w.changed != nil {
			opts = append(opts, withUpdateFilter(w.changed))
		}
		if err := c.watchOwned(w.inf, c.enqueueOwner, opts...); err != nil {
			return nil, err
		}
	}
	// A PodDisruptionBudget's status moves with every Pod; only its spec and
	// metadata are ours to repair.
	if err := c.watchOwned(kubeInformers.Policy().V1().PodDisruptionBudgets().Informer(), c.enqueueOwner,
		withUpdateFilter(specOrMetadataChanged)); err != nil {
		return nil, err
	}
	// Pods and claims matter mostly to a teardown (it waits for the Pods to
	// go, deletes the highest unready data Pod, and deletes claims); during
	// normal operation the StatefulSet's status already sums the Pods up,
	// and every Pod going Ready would otherwise cost a full reconcile. Even
	// in a teardown, only their going, their deletion starting and a Pod's
	// readiness count: a terminating Pod's other status updates do not.
	// Outside a teardown, a Pod that cannot start counts too: it may hold up
	// a rollout (replaceStuckPod).
	for _, w := range []struct {
		inf     cache.SharedIndexInformer
		enqueue func(any)
		changed func(old, new any) bool
	}{
		{kubeInformers.Core().V1().Pods().Informer(), c.enqueueOwnerOfPod, podChanged},
	} {
		if err := c.watchOwned(w.inf, w.enqueue, withUpdateHandler(c.podUpdated), withUpdateFilter(w.changed)); err != nil {
			return nil, err
		}
	}
	// A claim counts in a teardown as above, and while it grows (or should):
	// its binding, request and capacity are what resizeClaims reads, and the
	// update that completes a growth is judged on the claim before it.
	if err := c.watchOwned(kubeInformers.Core().V1().PersistentVolumeClaims().Informer(), c.enqueueOwnerOfClaim,
		func(h *cache.ResourceEventHandlerFuncs) {
			h.UpdateFunc = func(old, new any) {
				switch {
				case c.claimGrowing(old) || c.claimGrowing(new):
					c.enqueueOwner(new)
				case specOrMetadataChanged(old, new):
					c.enqueueOwnerIfTearingDown(new)
				}
			}
		}); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueOwnerOfClaim enqueues the owning store of a claim that grows (or
// should), and otherwise only while the store is being deleted.
func (c *Controller) enqueueOwnerOfClaim(obj any) {
	if c.claimGrowing(obj) {
		c.enqueueOwner(obj)
		return
	}
	c.enqueueOwnerIfTearingDown(obj)
}

// claimGrowing says obj is a claim of a store whose spec.storage it
// neither asks for nor holds, or a bound claim that holds less than it asks
// for: a growth resizeClaims has to ask for or report. A store never grown
// has neither (its claims ask for what the template gives, and bind with
// it).
func (c *Controller) claimGrowing(obj any) bool {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return false
	}
	ns, name := owner(pvc)
	if name == "" {
		return false
	}
	kvs, err := c.stores.KeyValueStores(ns).Get(name)
	if err != nil || kvs.DeletionTimestamp != nil {
		return false
	}
	requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	return holdsLessThan(pvc, kvs.Spec.Storage.VolumeSize) ||
		(pvc.Status.Phase == corev1.ClaimBound && requested.Cmp(capacity) > 0)
}

type watchOption func(*cache.ResourceEventHandlerFuncs)

// withUpdateFilter drops update events for which changed returns false.
// withUpdateHandler handles updates with update instead of the enqueue
// function given to watchOwned.
func withUpdateHandler(update func(old, new any)) watchOption {
	return func(h *cache.ResourceEventHandlerFuncs) { h.UpdateFunc = update }
}

func withUpdateFilter(changed func(old, new interface{}) bool) watchOption {
	return func(h *cache.ResourceEventHandlerFuncs) {
		next := h.UpdateFunc
		h.UpdateFunc = func(old, new interface{}) {
			if changed(old, new) {
				next(old, new)
			}
		}
	}
}

func (c *Controller) watchOwned(inf cache.SharedIndexInformer, enqueue func(interface{}), opts ...watchOption) error {
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
	for _, o := range opts {
		o(&h)
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		return err
	}
	c.synced = append(c.synced, inf.HasSynced)
	return nil
}

// specOrMetadataChanged is false for an update that changed only status
// (and with it resourceVersion and managedFields).
func specOrMetadataChanged(old, new interface{}) bool {
	o, ok1 := old.(metav1.Object)
	n, ok2 := new.(metav1.Object)
	if !ok1 || !ok2 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
		!reflect.DeepEqual(o.GetLabels(), n.GetLabels()) || !reflect.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
		!reflect.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences())
}

// serviceChanged is false for an update that changed only status. A
// Service has no metadata.generation: its spec is compared itself (a
// hand-edited selector went unrepaired until something else happened to the
// store).
func serviceChanged(old, new any) bool {
	o, ok1 := old.(*corev1.Service)
	n, ok2 := new.(*corev1.Service)
	if !ok1 || !ok2 {
		return true
	}
	return specOrMetadataChanged(old, new) || !apiequality.Semantic.DeepEqual(o.Spec, n.Spec)
}

// statefulSetStatusRead is the part of a StatefulSet's status that observe,
// statefulSetReady and the teardown read.
type statefulSetStatusRead struct {
	observedGeneration                       int64
	replicas, readyReplicas, updatedReplicas int32
	currentRevision, updateRevision          string
}

// statefulSetChanged is false for an update that changed only status fields
// the controller does not read.
func statefulSetChanged(old, new any) bool {
	o, ok1 := old.(*appsv1.StatefulSet)
	n, ok2 := new.(*appsv1.StatefulSet)
	if !ok1 || !ok2 {
		return true
	}
	read := func(s appsv1.StatefulSetStatus) statefulSetStatusRead {
		return statefulSetStatusRead{s.ObservedGeneration, s.Replicas, s.ReadyReplicas, s.UpdatedReplicas, s.CurrentRevision, s.UpdateRevision}
	}
	return specOrMetadataChanged(old, new) || read(o.Status) != read(n.Status)
}

// deploymentStatusRead is the part of a Deployment's status that observe
// and deploymentReady read.
type deploymentStatusRead struct {
	observedGeneration                                          int64
	replicas, updatedReplicas, readyReplicas, availableReplicas int32
	replicaFailure                                              corev1.ConditionStatus
	replicaFailureMessage                                       string
}

// deploymentChanged is false for an update that changed only status fields
// the controller does not read.
func deploymentChanged(old, new any) bool {
	o, ok1 := old.(*appsv1.Deployment)
	n, ok2 := new.(*appsv1.Deployment)
	if !ok1 || !ok2 {
		return true
	}
	read := func(d *appsv1.Deployment) deploymentStatusRead {
		s := d.Status
		r := deploymentStatusRead{observedGeneration: s.ObservedGeneration, replicas: s.Replicas, updatedReplicas: s.UpdatedReplicas,
			readyReplicas: s.ReadyReplicas, availableReplicas: s.AvailableReplicas}
		if c := deploymentCondition(d, appsv1.DeploymentReplicaFailure); c != nil {
			r.replicaFailure, r.replicaFailureMessage = c.Status, c.Message
		}
		return r
	}
	return specOrMetadataChanged(old, new) || read(o) != read(n)
}

// podChanged is false for an update that changed neither the Pod's
// metadata (its deletion starting included) nor its readiness.
func podChanged(old, new any) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := new.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return specOrMetadataChanged(old, new) || podReady(o) != podReady(n) || podCannotStart(o) != podCannotStart(n)
}

// enqueueOwnerOfPod enqueues the owning store of a Pod that cannot start
// (it may hold up a rollout), and otherwise only while the store is being
// deleted.
func (c *Controller) enqueueOwnerOfPod(obj any) {
	if p, ok := obj.(*corev1.Pod); ok && podCannotStart(p) {
		c.enqueueOwner(obj)
		return
	}
	c.enqueueOwnerIfTearingDown(obj)
}

// podUpdated wakes a Pod's store as enqueueOwnerOfPod does, and also when
// the Pod could not start and now can: a backup's or bootstrap's message
// that told why is then corrected at once.
func (c *Controller) podUpdated(old, new any) {
	if o, ok := old.(*corev1.Pod); ok && podCannotStart(o) {
		if n, ok := new.(*corev1.Pod); ok && !podCannotStart(n) {
			c.enqueueOwner(new)
			return
		}
	}
	c.enqueueOwnerOfPod(new)
}

// enqueueOwnerIfTearingDown enqueues the owning store only while it is
// being deleted.
func (c *Controller) enqueueOwnerIfTearingDown(obj interface{}) {
	if ns, name := owner(obj); name != "" {
		if kvs, err := c.stores.KeyValueStores(ns).Get(name); err == nil && kvs.DeletionTimestamp == nil {
			return
		}
	}
	c.enqueueOwner(obj)
}

// owner is the namespace and name of the store that owns obj (a tombstone's
// too); name is "" when no store does.
func owner(obj interface{}) (namespace, name string) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", ""
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "KeyValueStore" && inGroup(ref.APIVersion) {
		return m.GetNamespace(), ref.Name
	}
	if m.GetLabels()[LabelManagedBy] == ManagedBy {
		return m.GetNamespace(), m.GetLabels()[LabelInstance]
	}
	return "", ""
}

// inGroup says apiVersion is a version of kvstore.io: references written
// before the preferred version changed name an older one.
func inGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == v1alpha1.GroupName
}

func (c *Controller) enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// enqueueOwner maps an owned object, or a Pod or claim of one, to its store.
func (c *Controller) enqueueOwner(obj interface{}) {
	if ns, name := owner(obj); name != "" {
		c.queue.Add(ns + "/" + name)
	}
}

// Run starts workers and blocks until ctx ends. Informers must be started.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting KeyValueStore controller", "workers", workers)
	// It returns false only once ctx ended (a shutdown, or a Lease lost):
	// a stop, not a failure, which the callers would exit the process on.
	if !cache.WaitForNamedCacheSync("keyvaluestore", ctx.Done(), c.synced...) {
		logger.Info("Stopped before the caches synced")
		return nil
	}
	// The stores' state metrics come from this cache while it runs.
	leaderStores.Store(&c.stores)
	defer leaderStores.CompareAndSwap(&c.stores, nil)
	c.followPreferredVersion(ctx)
	go func() { // from one period on: the first read is above, before the workers
		_ = wait.PollUntilContextCancel(ctx, preferredVersionPeriod, false, func(ctx context.Context) (bool, error) {
			c.followPreferredVersion(ctx)
			return false, nil
		})
	}()
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping KeyValueStore controller")
	return nil
}

// preferredVersionPeriod is how often discovery is read for the group's
// preferred version (kube-apiserver's /api and /apis, aggregated).
const preferredVersionPeriod = 30 * time.Second

// followPreferredVersion keeps ownerAPIVersion on the group's preferred
// version. When it changes, every store is reconciled, which rewrites its
// objects' references in the new version.
func (c *Controller) followPreferredVersion(ctx context.Context) {
	if !refreshOwnerVersion(ctx, c.kube.Discovery()) {
		return
	}
	stores, err := c.stores.List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "List stores")
		return
	}
	for _, kvs := range stores {
		c.enqueue(kvs)
	}
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)

	start := time.Now()
	res, err := c.sync(ctx, key)
	observeReconcile(res, err, time.Since(start))
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed; will retry", "key", key)
		c.queue.AddRateLimited(key)
		if res.slot > 0 {
			// The backoff alone grows to minutes; the next scheduled slot
			// is kept (the sooner one wins). Shorter waits are not: a
			// failing sync asking for one would defeat the backoff.
			c.queue.AddAfter(key, res.slot)
		}
	case res.requeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.requeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// result says whether a sync wants to look again later without an error:
// a safety net for waits whose progress also arrives as events.
type result struct {
	requeueAfter time.Duration
	// slot is the wait until the store's next scheduled slot, kept even
	// when the sync fails (see processNext).
	slot time.Duration
}

// sooner is the earlier of two results' waits, each on its own.
func (r result) sooner(o result) result {
	return result{requeueAfter: soonest(r.requeueAfter, o.requeueAfter), slot: soonest(r.slot, o.slot)}
}

// soonest is the earlier of two waits; zero or less is none (a negative
// one must never win over a real wait and then be dropped).
func soonest(a, b time.Duration) time.Duration {
	switch {
	case b <= 0:
		return max(a, 0)
	case a <= 0 || b < a:
		return b
	}
	return a
}
