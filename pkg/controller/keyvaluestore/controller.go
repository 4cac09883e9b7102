// Package keyvaluestore is the controller that turns each KeyValueStore into
// running workloads (Services, a StatefulSet, a PodDisruptionBudget and an
// optional proxy Deployment), reports their state in status, and runs the
// ordered teardown the kvstore.io/teardown finalizer guards.
package keyvaluestore

import (
	"context"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
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

	stores       kvslisters.KeyValueStoreLister
	statefulSets appslisters.StatefulSetLister
	deployments  appslisters.DeploymentLister
	services     corelisters.ServiceLister
	pdbs         policylisters.PodDisruptionBudgetLister
	pods         corelisters.PodLister
	claims       corelisters.PersistentVolumeClaimLister
	jobs         batchlisters.JobLister
	synced       []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// now is replaceable in tests.
	now func() metav1.Time
}

// New wires a Controller to informers. Kube informers should be filtered to
// objects labelled app.kubernetes.io/managed-by=kvstore-apiserver.
func New(kube kubernetes.Interface, kvs versioned.Interface, kubeInformers kubeinformers.SharedInformerFactory, kvsInformers kvsinformers.SharedInformerFactory) (*Controller, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	broadcaster := record.NewBroadcaster()
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})

	c := &Controller{
		kube:         kube,
		kvs:          kvs,
		recorder:     broadcaster.NewRecorder(scheme, corev1.EventSource{Component: FieldManager}),
		stores:       kvsInformers.Kvstore().V1alpha1().KeyValueStores().Lister(),
		statefulSets: kubeInformers.Apps().V1().StatefulSets().Lister(),
		deployments:  kubeInformers.Apps().V1().Deployments().Lister(),
		services:     kubeInformers.Core().V1().Services().Lister(),
		pdbs:         kubeInformers.Policy().V1().PodDisruptionBudgets().Lister(),
		pods:         kubeInformers.Core().V1().Pods().Lister(),
		claims:       kubeInformers.Core().V1().PersistentVolumeClaims().Lister(),
		jobs:         kubeInformers.Batch().V1().Jobs().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "keyvaluestore"}),
		now: metav1.Now,
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

	// Owned objects whose every change matters: status is computed from the
	// StatefulSet and the proxy Deployment, teardown waits on the backup Job,
	// and a Service may drift at any time.
	for _, inf := range []cache.SharedIndexInformer{
		kubeInformers.Apps().V1().StatefulSets().Informer(),
		kubeInformers.Apps().V1().Deployments().Informer(),
		kubeInformers.Core().V1().Services().Informer(),
		kubeInformers.Batch().V1().Jobs().Informer(),
	} {
		if err := c.watchOwned(inf, c.enqueueOwner); err != nil {
			return nil, err
		}
	}
	// A PodDisruptionBudget's status moves with every Pod; only its spec and
	// metadata are ours to repair.
	if err := c.watchOwned(kubeInformers.Policy().V1().PodDisruptionBudgets().Informer(), c.enqueueOwner,
		withUpdateFilter(specOrMetadataChanged)); err != nil {
		return nil, err
	}
	// Pods and claims matter only to a teardown (it waits for the Pods to go
	// and deletes claims); during normal operation the StatefulSet's status
	// already sums the Pods up, and every Pod going Ready would otherwise
	// cost a full reconcile.
	for _, inf := range []cache.SharedIndexInformer{
		kubeInformers.Core().V1().Pods().Informer(),
		kubeInformers.Core().V1().PersistentVolumeClaims().Informer(),
	} {
		if err := c.watchOwned(inf, c.enqueueOwnerIfTearingDown); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type watchOption func(*cache.ResourceEventHandlerFuncs)

// withUpdateFilter drops update events for which changed returns false.
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
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "KeyValueStore" && ref.APIVersion == v1alpha1.SchemeGroupVersion.String() {
		return m.GetNamespace(), ref.Name
	}
	if m.GetLabels()[LabelManagedBy] == ManagedBy {
		return m.GetNamespace(), m.GetLabels()[LabelInstance]
	}
	return "", ""
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
// The instance label is on all of them (templates carry it to Pods and claims).
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
	if !cache.WaitForNamedCacheSync("keyvaluestore", ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync")
	}
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping KeyValueStore controller")
	return nil
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
}
