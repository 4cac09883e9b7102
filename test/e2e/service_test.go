package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// A store's client Service takes spec.service through the real
// kube-apiserver: a LoadBalancer with its annotations and source ranges,
// applied once; changed in place to a NodePort (an annotation and the
// ranges removed, with the warning of an open Node port); and, with
// spec.service removed, back to a plain ClusterIP Service without Node
// ports. Without spec.service, a type set on the Service by hand stays.
// A quota that refuses the load balancer is told on the store, which
// reads Failed (its spec cannot be realised) and Available, with the
// Service left as it was until the quota goes. Bad input gets a 422
// naming the field. Deleted, with a finalizer holding its Service, the
// store's Service selects no Pod and has no endpoints before the Final
// backup is taken.
func TestClientServiceIsExposedAsTheStoreSays(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("exposed", 1)
	obj.Spec.Service = &v1alpha1.ClientService{Type: v1alpha1.ServiceTypeLoadBalancer,
		Annotations:              map[string]string{"example.com/internal": "true", "example.com/tier": "gold"},
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "exposed", "Ready", isReady)
	svc := waitService(t, kube, ns, "exposed", "a LoadBalancer", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeLoadBalancer
	})
	assert.Equal(t, "true", svc.Annotations["example.com/internal"])
	assert.Equal(t, "gold", svc.Annotations["example.com/tier"])
	assert.Equal(t, []string{"10.0.0.0/8"}, svc.Spec.LoadBalancerSourceRanges)
	require.Len(t, svc.Spec.Ports, 1)
	assert.NotZero(t, svc.Spec.Ports[0].NodePort, "a LoadBalancer gets a Node port")

	// Applied once: a field read back differently would apply the Service
	// on every pass.
	updated := storeEvents(t, kube, ns, "exposed", "Updated")
	mustKubectl(t, "label", "kvs", "exposed", "-n", ns, "resync=1")
	time.Sleep(3 * time.Second)
	assert.Equal(t, updated, storeEvents(t, kube, ns, "exposed", "Updated"), "no apply after the store settled")

	r := kubectl(t, "patch", "keyvaluestores.v1beta1.kvstore.io", "exposed", "-n", ns, "--type=merge", "-p",
		`{"spec":{"service":{"type":"NodePort","loadBalancerSourceRanges":null,"annotations":{"example.com/internal":null}}}}`)
	require.NoError(t, r.Err, "%v", r)
	assert.Contains(t, r.Stderr, "spec.service.type: NodePort opens the store's port on every Node's addresses")
	svc = waitService(t, kube, ns, "exposed", "a NodePort without the removed annotation and ranges", func(s *corev1.Service) bool {
		_, removed := s.Annotations["example.com/internal"]
		return s.Spec.Type == corev1.ServiceTypeNodePort && !removed && len(s.Spec.LoadBalancerSourceRanges) == 0
	})
	assert.Equal(t, "gold", svc.Annotations["example.com/tier"])
	assert.NotZero(t, svc.Spec.Ports[0].NodePort)

	mustKubectl(t, "patch", "kvs", "exposed", "-n", ns, "--type=merge", "-p", `{"spec":{"service":null}}`)
	svc = waitService(t, kube, ns, "exposed", "a ClusterIP Service again", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeClusterIP
	})
	assert.NotContains(t, svc.Annotations, "example.com/tier")
	assert.Zero(t, svc.Spec.Ports[0].NodePort, "its Node port is released")

	// Unset, the type is whoever set it: the controller does not take it
	// back from a Service exposed by hand before spec.service existed.
	mustKubectl(t, "patch", "service", "exposed", "-n", ns, "--type=merge", "-p", `{"spec":{"type":"NodePort"}}`)
	mustKubectl(t, "label", "kvs", "exposed", "-n", ns, "resync=2", "--overwrite")
	time.Sleep(3 * time.Second)
	svc, err = kube.CoreV1().Services(ns).Get(ctx, "exposed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ServiceTypeNodePort, svc.Spec.Type)

	// A quota that refuses the load balancer is told on the store, and the
	// Service stays as it was until the quota allows it.
	quota, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-load-balancers"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServicesLoadBalancers: resource.MustParse("0")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	mustKubectl(t, "patch", "kvs", "exposed", "-n", ns, "--type=merge", "-p",
		`{"spec":{"service":{"type":"LoadBalancer","loadBalancerSourceRanges":["10.0.0.0/8"]}}}`)
	refused := waitStore(t, kvs, ns, "exposed", "told of the refused Service", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionProgressing)
		return k.Status.ObservedGeneration == k.Generation && c != nil && c.Reason == "ApplyFailed" && strings.Contains(c.Message, "no-load-balancers")
	})
	assert.Equal(t, v1alpha1.PhaseFailed, refused.Status.Phase, "its spec cannot be realised")
	assert.True(t, meta.IsStatusConditionTrue(refused.Status.Conditions, v1alpha1.ConditionAvailable), "its replicas still serve")
	svc, err = kube.CoreV1().Services(ns).Get(ctx, "exposed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ServiceTypeNodePort, svc.Spec.Type)
	require.NoError(t, kube.CoreV1().ResourceQuotas(ns).Delete(ctx, quota.Name, metav1.DeleteOptions{}))
	waitService(t, kube, ns, "exposed", "a LoadBalancer once the quota is gone", func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeLoadBalancer
	})
	waitStore(t, kvs, ns, "exposed", "Ready again", isReady)

	requireFails(t, kubectl(t, "patch", "kvs", "exposed", "-n", ns, "--type=merge", "-p", `{"spec":{"service":{"type":"ExternalName"}}}`),
		`spec.service.type: Unsupported value: "ExternalName"`)
	requireFails(t, kubectl(t, "patch", "kvs", "exposed", "-n", ns, "--type=merge", "-p",
		`{"spec":{"service":{"type":"LoadBalancer","loadBalancerSourceRanges":["10.0.0.1/8"]}}}`),
		`spec.service.loadBalancerSourceRanges[0]: Invalid value: "10.0.0.1/8"`)

	// Deleted, its teardown cuts clients off before the Final backup also
	// while a finalizer (a cloud load balancer's cleanup) holds the
	// Service: it selects no Pod, and kube-controller-manager empties its
	// endpoints, though it is not gone.
	mustKubectl(t, "patch", "service", "exposed", "-n", ns, "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
	mustKubectl(t, "patch", "kvs", "exposed", "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"backup":{"image":%q}}}`, backupImageOK))
	waitStore(t, kvs, ns, "exposed", "Ready with backups", isReady)
	require.NotEmpty(t, readyEndpoints(t, kube, ns, "exposed"), "the Service takes clients before the teardown")
	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, "exposed", metav1.DeleteOptions{}))
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		backups, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, b := range backups.Items {
			if b.Spec.Reason == v1alpha1.BackupReasonFinal {
				return nil
			}
		}
		return fmt.Errorf("no Final backup yet")
	}))
	svc, err = kube.CoreV1().Services(ns).Get(ctx, "exposed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, svc.DeletionTimestamp)
	assert.Equal(t, map[string]string{"kvstore.io/clients-cut-off": "true"}, svc.Spec.Selector, "cut off before the Final backup")
	require.NoError(t, framework.WaitFor(ctx, readyTimeout, func(ctx context.Context) error {
		if n := len(readyEndpoints(t, kube, ns, "exposed")); n > 0 {
			return fmt.Errorf("%d endpoints left", n)
		}
		return nil
	}))
	mustKubectl(t, "patch", "service", "exposed", "-n", ns, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	waitGone(t, kvs, ns, "exposed")
}

// readyEndpoints are the addresses the Service ns/name sends clients to.
func readyEndpoints(t *testing.T, kube kubernetes.Interface, ns, name string) []string {
	t.Helper()
	slices, err := kube.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	require.NoError(t, err)
	var out []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Conditions.Ready, false) {
				out = append(out, e.Addresses...)
			}
		}
	}
	return out
}

// waitService polls the Service ns/name until cond accepts it.
func waitService(t *testing.T, kube kubernetes.Interface, ns, name, what string, cond func(*corev1.Service) bool) *corev1.Service {
	t.Helper()
	var last *corev1.Service
	err := framework.WaitFor(context.Background(), readyTimeout, func(ctx context.Context) error {
		s, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if last = s; !cond(s) {
			return fmt.Errorf("Service %s/%s not %s yet", ns, name, what)
		}
		return nil
	})
	require.NoError(t, err, "last seen: %+v", last)
	return last
}
