package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	benchv1alpha1 "github.com/kvstore-io/kvstore-apiserver/test/bench/operator/api/v1alpha1"
)

// The operator's objects mirror kvstore-apiserver's controller
// (pkg/controller/keyvaluestore/objects.go): the same names, labels, specs
// and owner references, with a managed-by label of its own.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "kvsbench-operator"

	componentData   = "data"
	componentProxy  = "proxy"
	componentBackup = "backup"
)

func labelsFor(kvs *benchv1alpha1.KeyValueStore, component string) map[string]string {
	return map[string]string{labelName: "keyvaluestore", labelInstance: kvs.Name, labelComponent: component, labelManagedBy: managedBy}
}

func selectorLabels(kvs *benchv1alpha1.KeyValueStore, component string) map[string]string {
	return map[string]string{labelInstance: kvs.Name, labelComponent: component}
}

func headlessServiceName(kvs *benchv1alpha1.KeyValueStore) string { return kvs.Name + "-headless" }
func proxyName(kvs *benchv1alpha1.KeyValueStore) string           { return kvs.Name + "-proxy" }

// finalBackupName carries the store's UID so that a store of the same name
// created later gets a backup of its own.
func finalBackupName(kvs *benchv1alpha1.KeyValueStore) string {
	uid := string(kvs.UID)
	return fmt.Sprintf("%s-final-%s", kvs.Name, uid[:min(8, len(uid))])
}

func proxyReplicas(kvs *benchv1alpha1.KeyValueStore) int32 {
	if kvs.Spec.Proxy == nil {
		return 0
	}
	return ptr.Deref(kvs.Spec.Proxy.Replicas, 0)
}

func kvPorts(kvs *benchv1alpha1.KeyValueStore) []corev1.ServicePort {
	return []corev1.ServicePort{{Name: "kv", Protocol: corev1.ProtocolTCP, Port: kvs.Spec.Port, TargetPort: intstr.FromString("kv")}}
}

// mutateHeadlessService sets the fields this operator owns, in place.
func mutateHeadlessService(kvs *benchv1alpha1.KeyValueStore, svc *corev1.Service) {
	svc.Labels = labelsFor(kvs, componentData)
	if svc.CreationTimestamp.IsZero() {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	svc.Spec.PublishNotReadyAddresses = true
	svc.Spec.Selector = selectorLabels(kvs, componentData)
	svc.Spec.Ports = kvPorts(kvs)
}

// mutateClientService points clients at component.
func mutateClientService(kvs *benchv1alpha1.KeyValueStore, svc *corev1.Service, component string) {
	svc.Labels = labelsFor(kvs, component)
	svc.Spec.Selector = selectorLabels(kvs, component)
	svc.Spec.Ports = kvPorts(kvs)
}

func readinessProbe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("kv")}},
		PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
}

func antiAffinity(kvs *benchv1alpha1.KeyValueStore, component string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(kvs, component)},
		}}},
	}}
}

// mutateStatefulSet builds the StatefulSet on create; afterwards it keeps
// only the fields a spec change can move (replicas, image, port), in place,
// so that server defaults never look like drift and an unchanged object is
// not written.
func mutateStatefulSet(kvs *benchv1alpha1.KeyValueStore, sts *appsv1.StatefulSet, replicas int32) {
	labels := labelsFor(kvs, componentData)
	sts.Labels = labels
	sts.Spec.Replicas = ptr.To(replicas)
	if sts.CreationTimestamp.IsZero() {
		claim := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: labels},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: kvs.Spec.Storage.VolumeSize}},
			},
		}
		claim.Spec.StorageClassName = kvs.Spec.Storage.StorageClassName
		sts.Spec.ServiceName = headlessServiceName(kvs)
		sts.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: selectorLabels(kvs, componentData)}
		sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim}
		sts.Spec.Template = corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Affinity: antiAffinity(kvs, componentData),
				Containers: []corev1.Container{{
					Name:           "kvstore",
					VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					ReadinessProbe: readinessProbe(),
				}},
			},
		}
	}
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Image = kvs.Spec.Image
	c.Ports = []corev1.ContainerPort{{Name: "kv", ContainerPort: kvs.Spec.Port, Protocol: corev1.ProtocolTCP}}
}

// mutatePodDisruptionBudget: one data replica at a time.
func mutatePodDisruptionBudget(kvs *benchv1alpha1.KeyValueStore, pdb *policyv1.PodDisruptionBudget) {
	pdb.Labels = labelsFor(kvs, componentData)
	pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: selectorLabels(kvs, componentData)}
}

// mutateProxyDeployment builds the proxy tier, as mutateStatefulSet.
func mutateProxyDeployment(kvs *benchv1alpha1.KeyValueStore, d *appsv1.Deployment, replicas int32) {
	labels := labelsFor(kvs, componentProxy)
	d.Labels = labels
	d.Spec.Replicas = ptr.To(replicas)
	if d.CreationTimestamp.IsZero() {
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: selectorLabels(kvs, componentProxy)}
		d.Spec.Template = corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Affinity:   antiAffinity(kvs, componentProxy),
				Containers: []corev1.Container{{Name: "proxy", ReadinessProbe: readinessProbe()}},
			},
		}
	}
	c := &d.Spec.Template.Spec.Containers[0]
	if kvs.Spec.Proxy != nil {
		c.Image = kvs.Spec.Proxy.Image
	}
	c.Env = []corev1.EnvVar{{Name: "KVSTORE_UPSTREAM", Value: fmt.Sprintf("%s.%s.svc:%d", headlessServiceName(kvs), kvs.Namespace, kvs.Spec.Port)}}
	c.Ports = []corev1.ContainerPort{{Name: "kv", ContainerPort: kvs.Spec.Port, Protocol: corev1.ProtocolTCP}}
}

// finalBackupJob runs the final backup. Not owned by the store: like
// kvstore-apiserver's Final KeyValueStoreBackup it outlives the store, so
// its outcome can be read afterwards.
func finalBackupJob(kvs *benchv1alpha1.KeyValueStore) *batchv1.Job {
	spec := kvs.Spec.Backup
	env := []corev1.EnvVar{
		{Name: "KVSTORE_NAME", Value: kvs.Name},
		{Name: "KVSTORE_NAMESPACE", Value: kvs.Namespace},
		{Name: "KVSTORE_PORT", Value: fmt.Sprint(kvs.Spec.Port)},
		{Name: "KVSTORE_BACKUP_REASON", Value: "Final"},
	}
	labels := labelsFor(kvs, componentBackup)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: finalBackupName(kvs), Namespace: kvs.Namespace, Labels: labels,
			Annotations: map[string]string{"bench.kvstore.io/store-uid": string(kvs.UID)}},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(ptr.Deref(spec.ActiveDeadlineSeconds, 600)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: spec.Image, Command: spec.Command, Env: env}},
				},
			},
		},
	}
}

// statefulSetReady: the controller has seen the spec, every replica runs
// the update revision and is ready.
func statefulSetReady(sts *appsv1.StatefulSet, image string, want int32) bool {
	if sts == nil || len(sts.Spec.Template.Spec.Containers) == 0 {
		return false
	}
	if image != "" && sts.Spec.Template.Spec.Containers[0].Image != image {
		return false
	}
	s := sts.Status
	return s.ObservedGeneration >= sts.Generation && ptr.Deref(sts.Spec.Replicas, 1) == want &&
		s.Replicas == want && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.CurrentRevision == s.UpdateRevision
}

// deploymentReady: every proxy replica is updated and available.
func deploymentReady(d *appsv1.Deployment, want int32) bool {
	if d == nil {
		return want == 0
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && ptr.Deref(d.Spec.Replicas, 1) == want &&
		s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}
