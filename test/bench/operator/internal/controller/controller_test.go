package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	benchv1alpha1 "github.com/kvstore-io/kvstore-apiserver/test/bench/operator/api/v1alpha1"
)

func store() *benchv1alpha1.KeyValueStore {
	return &benchv1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "0123456789abcdef", Generation: 2},
		Spec: benchv1alpha1.KeyValueStoreSpec{
			Replicas: ptr.To[int32](3), Image: "kv:1", Port: 6379,
			Storage: benchv1alpha1.StorageSpec{VolumeSize: resource.MustParse("1Gi")},
			Proxy:   &benchv1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "proxy:1"},
		},
	}
}

// An existing object mutated again must not change, or CreateOrUpdate
// would write it on every reconcile.
func TestMutateIsStableOnExistingObjects(t *testing.T) {
	kvs := store()
	sts := &appsv1.StatefulSet{}
	mutateStatefulSet(kvs, sts, 3)
	sts.CreationTimestamp = metav1.Now()
	before := sts.DeepCopy()
	mutateStatefulSet(kvs, sts, 3)
	if !apiequality.Semantic.DeepEqual(before, sts) {
		t.Errorf("StatefulSet changed on a second mutate")
	}
	d := &appsv1.Deployment{}
	mutateProxyDeployment(kvs, d, 1)
	d.CreationTimestamp = metav1.Now()
	beforeD := d.DeepCopy()
	mutateProxyDeployment(kvs, d, 1)
	if !apiequality.Semantic.DeepEqual(beforeD, d) {
		t.Errorf("Deployment changed on a second mutate")
	}
	svc := &corev1.Service{}
	mutateHeadlessService(kvs, svc)
	svc.CreationTimestamp = metav1.Now()
	beforeS := svc.DeepCopy()
	mutateHeadlessService(kvs, svc)
	if !apiequality.Semantic.DeepEqual(beforeS, svc) {
		t.Errorf("Service changed on a second mutate")
	}
}

func TestObservePhases(t *testing.T) {
	kvs := store()
	if st := observe(kvs, nil, nil, nil); st.Phase != benchv1alpha1.PhaseCreating || st.ObservedGeneration != 2 {
		t.Errorf("no StatefulSet: phase %s, observedGeneration %d", st.Phase, st.ObservedGeneration)
	}
	sts := &appsv1.StatefulSet{}
	mutateStatefulSet(kvs, sts, 3)
	sts.Status = appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "r", UpdateRevision: "r"}
	if st := observe(kvs, sts, nil, nil); st.Phase != benchv1alpha1.PhaseCreating {
		t.Errorf("data ready, proxy missing: phase %s", st.Phase)
	}
	d := &appsv1.Deployment{}
	mutateProxyDeployment(kvs, d, 1)
	d.Status = appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}
	st := observe(kvs, sts, d, nil)
	if st.Phase != benchv1alpha1.PhaseReady || st.ReadyReplicas != 3 || st.CurrentImage != "kv:1" {
		t.Errorf("all ready: %+v", st)
	}
	kvs.Status = st
	sts.Status.ReadyReplicas = 2
	if st := observe(kvs, sts, d, nil); st.Phase != benchv1alpha1.PhaseDegraded {
		t.Errorf("a replica lost after Ready: phase %s", st.Phase)
	}
}
