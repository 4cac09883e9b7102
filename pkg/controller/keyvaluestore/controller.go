// Package keyvaluestore is the controller that turns each KeyValueStore into
// running workloads (Services, a StatefulSet, a PodDisruptionBudget and an
// optional proxy Deployment), reports their state in status, and runs the
// ordered teardown the kvstore.io/teardown finalizer guards.
package keyvaluestore

import (
	"context"
	"fmt"
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
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	c.synced = append(c.synced, storeInformer.HasSynced)

	owned := []cache.SharedIndexInformer{
		kubeInformers.Apps().V1().StatefulSets().Informer(),
		kubeInformers.Apps().V1().Deployments().Informer(),
		kubeInformers.Core().V1().Services().Informer(),
		kubeInformers.Core().V1().Pods().Informer(),
		kubeInformers.Core().V1().PersistentVolumeClaims().Informer(),
		kubeInformers.Batch().V1().Jobs().Informer(),
		kubeInformers.Policy().V1().PodDisruptionBudgets().Informer(),
	}
	for _, inf := range owned {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueOwner,
			UpdateFunc: func(_, obj interface{}) { c.enqueueOwner(obj) },
			DeleteFunc: c.enqueueOwner,
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
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
func (c *Controller) enqueueOwner(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "KeyValueStore" && ref.APIVersion == v1alpha1.SchemeGroupVersion.String() {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
		return
	}
	if m.GetLabels()[LabelManagedBy] == ManagedBy {
		if name := m.GetLabels()[LabelInstance]; name != "" {
			c.queue.Add(m.GetNamespace() + "/" + name)
		}
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
