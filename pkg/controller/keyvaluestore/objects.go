package keyvaluestore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// Labels on every object the controller makes. Pods and claims inherit them
// from the templates, so one label selector finds everything of a store.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	ManagedBy = "kvstore-apiserver"

	// LabelStoreUID is on every data claim the store's StatefulSet makes (its
	// claim template carries it): which claims are the store's own is then
	// known without comparing clocks. Claims kept from an earlier store of
	// the same name carry that store's UID.
	LabelStoreUID = v1alpha1.GroupName + "/store-uid"

	ComponentData      = "data"
	ComponentProxy     = "proxy"
	ComponentBackup    = "backup"
	ComponentBootstrap = "bootstrap"

	dataVolumeName = "data"
	dataMountPath  = "/data"
)

// Annotations of the controller's Jobs and backups.
const (
	// attemptAnnotation numbers the attempts of a backup or bootstrap on their Jobs.
	attemptAnnotation = v1alpha1.GroupName + "/attempt"
	// backupAnnotation names the KeyValueStoreBackup a Job runs.
	backupAnnotation = v1alpha1.GroupName + "/backup"
	// storeUIDAnnotation ties a Final backup to the store it was taken for,
	// not to an earlier store of the same name.
	storeUIDAnnotation = v1alpha1.GroupName + "/store-uid"
	// backupUIDAnnotation is, on a bootstrap Job, the UID of the backup it
	// restores: a retry restores that backup or none.
	backupUIDAnnotation = v1alpha1.GroupName + "/backup-uid"
	// slotAnnotation is the schedule slot (RFC 3339, UTC) of a Scheduled backup.
	slotAnnotation = v1alpha1.GroupName + "/scheduled-at"
	// readyReplicasAnnotation is, on the data StatefulSet, how many of its
	// replicas hold data: those it last ran all ready on one revision, or
	// more that have run ready since (see rememberReadyReplicas).
	readyReplicasAnnotation = v1alpha1.GroupName + "/ready-replicas"
)

// appName is the value of LabelName on everything of a store's.
const appName = "keyvaluestore"

// labelsFor returns the labels of a store's component.
func labelsFor(kvs *v1alpha1.KeyValueStore, component string) map[string]string {
	return map[string]string{
		LabelName:      appName,
		LabelInstance:  kvs.Name,
		LabelComponent: component,
		LabelManagedBy: ManagedBy,
	}
}

// selectorLabels are the immutable selector of a component's Pods.
func selectorLabels(kvs *v1alpha1.KeyValueStore, component string) map[string]string {
	return map[string]string{LabelInstance: kvs.Name, LabelComponent: component}
}

// podSelector selects a component's Pods where the selector may change
// (Services, the PodDisruptionBudget): selectorLabels and the name label,
// so that another application's Pods labelled with the same common
// instance and component (a Helm release of the store's name) are not
// selected. Every Pod of a store has carried the name label from the
// first release.
func podSelector(kvs *v1alpha1.KeyValueStore, component string) map[string]string {
	sel := selectorLabels(kvs, component)
	sel[LabelName] = appName
	return sel
}

func ownerReference(kvs *v1alpha1.KeyValueStore) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(ownerAPIVersion()).
		WithKind("KeyValueStore").
		WithName(kvs.Name).
		WithUID(kvs.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// headlessService gives the data Pods stable DNS names.
func headlessService(kvs *v1alpha1.KeyValueStore) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(headlessServiceName(kvs), kvs.Namespace).
		WithLabels(labelsFor(kvs, ComponentData)).
		WithOwnerReferences(ownerReference(kvs)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(podSelector(kvs, ComponentData)).
			WithPorts(corev1ac.ServicePort().WithName("kv").WithPort(kvs.Spec.Port).WithTargetPort(intstr.FromString("kv"))))
}

// clientService is the address clients use: component is the proxy tier
// once it is ready (see clientComponent), otherwise the data replicas.
// Without spec.service it sets no type or annotations, so that those set
// by hand on a Service of an earlier release stay as they are.
func clientService(kvs *v1alpha1.KeyValueStore, component string) *corev1ac.ServiceApplyConfiguration {
	spec := corev1ac.ServiceSpec().
		WithSelector(podSelector(kvs, component)).
		WithPorts(corev1ac.ServicePort().WithName("kv").WithPort(kvs.Spec.Port).WithTargetPort(intstr.FromString("kv")))
	svc := corev1ac.Service(kvs.Name, kvs.Namespace).
		WithLabels(labelsFor(kvs, component)).
		WithOwnerReferences(ownerReference(kvs)).
		WithSpec(spec)
	if s := kvs.Spec.Service; s != nil {
		spec.WithType(corev1.ServiceType(s.Type)).WithLoadBalancerSourceRanges(s.LoadBalancerSourceRanges...)
		if len(s.Annotations) > 0 {
			svc.WithAnnotations(s.Annotations)
		}
	}
	return svc
}

// keepClaimTemplate makes desired's claim template carry LabelStoreUID and
// ask for storage exactly as the existing StatefulSet's does:
// volumeClaimTemplates is immutable, so one created before the label (or
// adopted by its labels from an earlier store) keeps its own, one created
// before the store grew keeps its size (resizeClaims grows the claims), and
// an apply of another is refused.
func keepClaimTemplate(cur *appsv1.StatefulSet, desired *appsv1ac.StatefulSetApplyConfiguration) {
	uid, labelled := claimTemplateUID(cur)
	size, sized := claimTemplateSize(cur)
	for i := range desired.Spec.VolumeClaimTemplates {
		t := &desired.Spec.VolumeClaimTemplates[i]
		if labelled {
			t.Labels[LabelStoreUID] = uid
		} else {
			delete(t.Labels, LabelStoreUID)
		}
		if sized {
			(*t.Spec.Resources.Requests)[corev1.ResourceStorage] = size
		}
	}
}

// claimTemplateUID is the LabelStoreUID of sts's data claim template, if it
// has one.
func claimTemplateUID(sts *appsv1.StatefulSet) (string, bool) {
	i := slices.IndexFunc(sts.Spec.VolumeClaimTemplates, func(t corev1.PersistentVolumeClaim) bool { return t.Name == dataVolumeName })
	if i < 0 {
		return "", false
	}
	uid := sts.Spec.VolumeClaimTemplates[i].Labels[LabelStoreUID]
	return uid, uid != ""
}

// statefulSet runs the data replicas with one volume each.
func statefulSet(kvs *v1alpha1.KeyValueStore, replicas int32) *appsv1ac.StatefulSetApplyConfiguration {
	labels := labelsFor(kvs, ComponentData)
	// volumeClaimTemplates is an atomic list: what the API server defaults in
	// it is stored as part of our applied value. The template carries those
	// defaults itself (volumeMode, status.phase) and no kind or namespace
	// (which the server drops), so that an unchanged StatefulSet is seen to
	// be unchanged and its apply skipped.
	claim := (&corev1ac.PersistentVolumeClaimApplyConfiguration{}).WithName(dataVolumeName).
		WithLabels(labels).
		WithLabels(map[string]string{LabelStoreUID: string(kvs.UID)}).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithVolumeMode(corev1.PersistentVolumeFilesystem).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: kvs.Spec.Storage.VolumeSize}))).
		WithStatus(corev1ac.PersistentVolumeClaimStatus().WithPhase(corev1.ClaimPending))
	if sc := kvs.Spec.Storage.StorageClassName; sc != nil {
		claim.Spec.WithStorageClassName(*sc)
	}
	// The StatefulSet never owns its claims: with whenDeleted: Delete its
	// controller would put an ownerReference on every claim, and deleting the
	// StatefulSet of a live store (by hand, a GitOps prune) would then
	// garbage-collect all data. Only the teardown deletes claims, after the
	// final backup and a fresh read of the store. Scale-down keeps claims too,
	// so scaling back up finds the data again.
	retention := appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
		WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
		WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)

	return appsv1ac.StatefulSet(kvs.Name, kvs.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(kvs)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(replicas).
			WithServiceName(headlessServiceName(kvs)).
			WithPodManagementPolicy(appsv1.OrderedReadyPodManagement).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(kvs, ComponentData))).
			WithPersistentVolumeClaimRetentionPolicy(retention).
			WithVolumeClaimTemplates(claim).
			WithTemplate(podTemplate(kvs, labels).
				WithSpec(storePodSpec(kvs).
					WithAffinity(antiAffinity(kvs, ComponentData)).
					WithTopologySpreadConstraints(spreadConstraints(kvs, ComponentData)...).
					WithSecurityContext(podSecurityContext(kvs)).
					WithContainers(dataContainerOf(kvs)))))
}

// dataContainerOf is the data replicas' container. spec.args and
// spec.envFrom are given only when set: an empty list would read back as
// unset and make every pass re-apply.
func dataContainerOf(kvs *v1alpha1.KeyValueStore) *corev1ac.ContainerApplyConfiguration {
	c := corev1ac.Container().
		WithName(dataContainerName).
		WithImage(kvs.Spec.Image).
		WithResources(containerResources(kvs.Spec.Resources)).
		WithSecurityContext(containerSecurityContext(kvs)).
		WithPorts(corev1ac.ContainerPort().WithName("kv").WithContainerPort(kvs.Spec.Port)).
		WithReadinessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString("kv"))).
			WithPeriodSeconds(5)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(dataVolumeName).WithMountPath(dataMountPath))
	if len(kvs.Spec.Args) > 0 {
		c.WithArgs(kvs.Spec.Args...)
	}
	for _, s := range kvs.Spec.EnvFrom {
		c.WithEnvFrom(envFromSource(s))
	}
	return c
}

// podDisruptionBudget lets voluntary disruptions take one data replica at a time.
func podDisruptionBudget(kvs *v1alpha1.KeyValueStore) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(kvs.Name, kvs.Namespace).
		WithLabels(labelsFor(kvs, ComponentData)).
		WithOwnerReferences(ownerReference(kvs)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(podSelector(kvs, ComponentData))))
}

// proxyDeployment runs the stateless proxy tier.
func proxyDeployment(kvs *v1alpha1.KeyValueStore, replicas int32) *appsv1ac.DeploymentApplyConfiguration {
	labels := labelsFor(kvs, ComponentProxy)
	image, resources := "", (*v1alpha1.Resources)(nil)
	if p := kvs.Spec.Proxy; p != nil {
		image, resources = p.Image, p.Resources
	}
	return appsv1ac.Deployment(proxyName(kvs), kvs.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(kvs)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(kvs, ComponentProxy))).
			WithTemplate(podTemplate(kvs, labels).
				WithSpec(storePodSpec(kvs).
					WithAffinity(antiAffinity(kvs, ComponentProxy)).
					WithTopologySpreadConstraints(spreadConstraints(kvs, ComponentProxy)...).
					WithSecurityContext(podSecurityContext(kvs)).
					WithContainers(corev1ac.Container().
						WithName(proxyContainerName).
						WithImage(image).
						WithResources(containerResources(resources)).
						WithSecurityContext(containerSecurityContext(kvs)).
						WithEnv(corev1ac.EnvVar().WithName("KVSTORE_UPSTREAM").WithValue(fmt.Sprintf("%s.%s.svc:%d", headlessServiceName(kvs), kvs.Namespace, kvs.Spec.Port))).
						WithPorts(corev1ac.ContainerPort().WithName("kv").WithContainerPort(kvs.Spec.Port)).
						WithReadinessProbe(corev1ac.Probe().
							WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString("kv"))).
							WithPeriodSeconds(5))))))
}

// storeEnv is what every Job of a store gets to find its first n data
// replicas.
func storeEnv(kvs *v1alpha1.KeyValueStore, n int32) []*corev1ac.EnvVarApplyConfiguration {
	return []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName("KVSTORE_NAME").WithValue(kvs.Name),
		corev1ac.EnvVar().WithName("KVSTORE_NAMESPACE").WithValue(kvs.Namespace),
		corev1ac.EnvVar().WithName("KVSTORE_PORT").WithValue(fmt.Sprint(kvs.Spec.Port)),
		corev1ac.EnvVar().WithName("KVSTORE_ENDPOINTS").WithValue(strings.Join(podDNSNames(kvs, n), ",")),
	}
}

// jobRun is what a backup or bootstrap Job runs, from its part of the
// store's spec.
type jobRun struct {
	image              string
	command            []string
	resources          *v1alpha1.Resources
	deadline           int64
	serviceAccountName string
	envFrom            []v1alpha1.EnvFromSource
}

func backupRun(spec *v1alpha1.BackupSpec) jobRun {
	return jobRun{spec.Image, spec.Command, spec.Resources, ptr.Deref(spec.ActiveDeadlineSeconds, 600), spec.ServiceAccountName, spec.EnvFrom}
}

func bootstrapRun(spec *v1alpha1.BootstrapSpec) jobRun {
	return jobRun{spec.Image, spec.Command, spec.Resources, ptr.Deref(spec.ActiveDeadlineSeconds, 600), spec.ServiceAccountName, spec.EnvFrom}
}

// jobSpec is a one-Pod Job that runs once: retries are the controller's,
// so a failure is seen, reported and backed off rather than retried blindly.
// The controller's env comes after run's envFrom, so its KVSTORE_ variables
// win over a Secret's keys of the same names.
func jobSpec(kvs *v1alpha1.KeyValueStore, podLabels map[string]string, run jobRun, env []*corev1ac.EnvVarApplyConfiguration) *batchv1ac.JobSpecApplyConfiguration {
	container := corev1ac.Container().WithName("main").WithImage(run.image).WithEnv(env...).
		WithResources(containerResources(run.resources)).
		WithSecurityContext(containerSecurityContext(kvs))
	if len(run.command) > 0 {
		container.WithCommand(run.command...)
	}
	for _, s := range run.envFrom {
		container.WithEnvFrom(envFromSource(s))
	}
	pod := storePodSpec(kvs).
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithSecurityContext(podSecurityContext(kvs)).
		WithContainers(container)
	if run.serviceAccountName != "" {
		pod.WithServiceAccountName(run.serviceAccountName)
	}
	return batchv1ac.JobSpec().
		WithBackoffLimit(0).
		WithActiveDeadlineSeconds(run.deadline).
		WithTemplate(podTemplate(kvs, podLabels).
			WithSpec(pod))
}

// podTemplate is the metadata of a Pod template of the store: its
// spec.podMetadata, with the controller's labels, which validation keeps
// apart from the store's.
func podTemplate(kvs *v1alpha1.KeyValueStore, labels map[string]string) *corev1ac.PodTemplateSpecApplyConfiguration {
	t := corev1ac.PodTemplateSpec()
	if m := kvs.Spec.PodMetadata; m != nil {
		t.WithLabels(m.Labels).WithAnnotations(m.Annotations)
	}
	return t.WithLabels(labels)
}

// envFromSource is s as a container's envFrom entry, its unset fields
// unset.
func envFromSource(s v1alpha1.EnvFromSource) *corev1ac.EnvFromSourceApplyConfiguration {
	out := corev1ac.EnvFromSource()
	if s.Prefix != "" {
		out.WithPrefix(s.Prefix)
	}
	if r := s.ConfigMapRef; r != nil {
		ref := corev1ac.ConfigMapEnvSource().WithName(r.Name)
		if r.Optional != nil {
			ref.WithOptional(*r.Optional)
		}
		out.WithConfigMapRef(ref)
	}
	if r := s.SecretRef; r != nil {
		ref := corev1ac.SecretEnvSource().WithName(r.Name)
		if r.Optional != nil {
			ref.WithOptional(*r.Optional)
		}
		out.WithSecretRef(ref)
	}
	return out
}

// backupJob runs attempt n of backup b of store kvs and names its first
// replicas data replicas in KVSTORE_ENDPOINTS. The backup controls it, so
// deleting the backup deletes its Jobs, and deleting the store does not.
func backupJob(kvs *v1alpha1.KeyValueStore, b *v1alpha1.KeyValueStoreBackup, attempt int, replicas int32) *batchv1ac.JobApplyConfiguration {
	env := append(storeEnv(kvs, replicas),
		corev1ac.EnvVar().WithName("KVSTORE_BACKUP_NAME").WithValue(b.Name),
		corev1ac.EnvVar().WithName("KVSTORE_BACKUP_UID").WithValue(string(b.UID)),
		corev1ac.EnvVar().WithName("KVSTORE_BACKUP_REASON").WithValue(string(b.Spec.Reason)))
	return batchv1ac.Job(backupJobName(b, attempt), kvs.Namespace).
		WithLabels(labelsFor(kvs, ComponentBackup)).
		WithAnnotations(map[string]string{attemptAnnotation: strconv.Itoa(attempt), backupAnnotation: b.Name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(ownerAPIVersion()).
			WithKind("KeyValueStoreBackup").
			WithName(b.Name).
			WithUID(b.UID).
			WithController(true).
			WithBlockOwnerDeletion(true)).
		WithSpec(jobSpec(kvs, labelsFor(kvs, ComponentBackup), backupRun(kvs.Spec.Backup), env))
}

// bootstrapJob runs attempt n of the store's bootstrap; the store controls
// it. A suspended Job starts no Pod until it is released.
func bootstrapJob(kvs *v1alpha1.KeyValueStore, from *v1alpha1.KeyValueStoreBackup, attempt int, suspend bool) *batchv1ac.JobApplyConfiguration {
	env := storeEnv(kvs, ptr.Deref(kvs.Spec.Replicas, 0))
	annotations := map[string]string{attemptAnnotation: strconv.Itoa(attempt)}
	if from != nil {
		env = append(env,
			corev1ac.EnvVar().WithName("KVSTORE_BACKUP_NAME").WithValue(from.Name),
			corev1ac.EnvVar().WithName("KVSTORE_BACKUP_UID").WithValue(string(from.UID)),
			corev1ac.EnvVar().WithName("KVSTORE_BACKUP_STORE").WithValue(from.Spec.StoreName))
		annotations[backupUIDAnnotation] = string(from.UID)
	}
	return batchv1ac.Job(bootstrapJobName(kvs, attempt), kvs.Namespace).
		WithLabels(labelsFor(kvs, ComponentBootstrap)).
		WithAnnotations(annotations).
		WithOwnerReferences(ownerReference(kvs)).
		WithSpec(jobSpec(kvs, labelsFor(kvs, ComponentBootstrap), bootstrapRun(kvs.Spec.Bootstrap), env).WithSuspend(suspend))
}

// podSecurityContext is the Pod half of spec.securityContext: the IDs, and
// what the Pod Security Standard "restricted" asks of a Pod. Nil when the
// store sets none, so the Pods of a store written before the field existed
// do not change.
func podSecurityContext(kvs *v1alpha1.KeyValueStore) *corev1ac.PodSecurityContextApplyConfiguration {
	sc := kvs.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	group := sc.RunAsGroup
	fsGroup := cmp.Or(sc.FSGroup, group, &sc.RunAsUser)
	pod := corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(sc.RunAsUser).
		WithFSGroup(*fsGroup).
		// A data volume already owned by the group is not walked again at
		// every start of its Pod.
		WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if group != nil {
		pod.WithRunAsGroup(*group)
	}
	return pod
}

// storePodSpec is the part of a Pod spec every Pod of the store shares:
// spec.imagePullSecrets and spec.scheduling, with only the fields set that
// the store sets (an empty one would read back as unset and make every
// pass re-apply).
func storePodSpec(kvs *v1alpha1.KeyValueStore) *corev1ac.PodSpecApplyConfiguration {
	spec := corev1ac.PodSpec()
	for _, r := range kvs.Spec.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(r.Name))
	}
	s := kvs.Spec.Scheduling
	if s == nil {
		return spec
	}
	if len(s.NodeSelector) > 0 {
		spec.WithNodeSelector(s.NodeSelector)
	}
	for _, t := range s.Tolerations {
		spec.WithTolerations(toleration(t))
	}
	if s.PriorityClassName != "" {
		spec.WithPriorityClassName(s.PriorityClassName)
	}
	return spec
}

// toleration is t as a Pod's toleration, its empty fields unset.
func toleration(t v1alpha1.Toleration) *corev1ac.TolerationApplyConfiguration {
	out := corev1ac.Toleration()
	if t.Key != "" {
		out.WithKey(t.Key)
	}
	if t.Operator != "" {
		out.WithOperator(corev1.TolerationOperator(t.Operator))
	}
	if t.Value != "" {
		out.WithValue(t.Value)
	}
	if t.Effect != "" {
		out.WithEffect(corev1.TaintEffect(t.Effect))
	}
	if t.TolerationSeconds != nil {
		out.WithTolerationSeconds(*t.TolerationSeconds)
	}
	return out
}

// containerSecurityContext is the container half: "restricted" allows no
// privilege escalation and no capability beyond NET_BIND_SERVICE.
func containerSecurityContext(kvs *v1alpha1.KeyValueStore) *corev1ac.SecurityContextApplyConfiguration {
	if kvs.Spec.SecurityContext == nil {
		return nil
	}
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// containerResources are a container's requests and limits; nil when the
// store sets none, so the Pods of a store written before the field existed
// do not change.
func containerResources(r *v1alpha1.Resources) *corev1ac.ResourceRequirementsApplyConfiguration {
	if r == nil || len(r.Requests) == 0 && len(r.Limits) == 0 {
		return nil
	}
	list := func(in map[string]resource.Quantity) corev1.ResourceList {
		out := make(corev1.ResourceList, len(in))
		for name, q := range in {
			q = q.DeepCopy()
			// As kube-apiserver stores it (SetDefaults_ResourceList), so
			// what runs is seen to be what is applied.
			q.RoundUp(resource.Milli)
			out[corev1.ResourceName(name)] = q
		}
		return out
	}
	// Only what is given: the builders would send an empty list as null.
	res := corev1ac.ResourceRequirements()
	if len(r.Requests) > 0 {
		res.WithRequests(list(r.Requests))
	}
	if len(r.Limits) > 0 {
		res.WithLimits(list(r.Limits))
	}
	return res
}

// podDNSNames are the stable names of the first n data replicas.
func podDNSNames(kvs *v1alpha1.KeyValueStore, n int32) []string {
	names := make([]string, 0, n)
	for i := int32(0); i < n; i++ {
		names = append(names, fmt.Sprintf("%s-%d.%s.%s.svc", kvs.Name, i, headlessServiceName(kvs), kvs.Namespace))
	}
	return names
}

// antiAffinity spreads a component's Pods over Nodes where it can.
func antiAffinity(kvs *v1alpha1.KeyValueStore, component string) *corev1ac.AffinityApplyConfiguration {
	return corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
		WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().
			WithWeight(100).
			WithPodAffinityTerm(corev1ac.PodAffinityTerm().
				WithTopologyKey(corev1.LabelHostname).
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(kvs, component))))))
}

// spreadConstraints are spec.scheduling's topology spread constraints for a
// component's Pods, each counting the component's Pods of this store (by
// podSelector: not another application's of the same instance name),
// whatever their revision. Not matchLabelKeys for the proxy's template
// hash: where kube-apiserver's MatchLabelKeysInPodTopologySpread gate is
// off it drops the field from the template, and every pass would apply
// the Deployment again.
func spreadConstraints(kvs *v1alpha1.KeyValueStore, component string) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	s := kvs.Spec.Scheduling
	if s == nil {
		return nil
	}
	out := make([]*corev1ac.TopologySpreadConstraintApplyConfiguration, 0, len(s.TopologySpreadConstraints))
	for _, c := range s.TopologySpreadConstraints {
		tsc := corev1ac.TopologySpreadConstraint().
			WithMaxSkew(c.MaxSkew).
			WithTopologyKey(c.TopologyKey).
			WithWhenUnsatisfiable(corev1.UnsatisfiableConstraintAction(c.WhenUnsatisfiable)).
			WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(podSelector(kvs, component)))
		if c.MinDomains != nil {
			tsc.WithMinDomains(*c.MinDomains)
		}
		out = append(out, tsc)
	}
	return out
}

func proxyReplicas(kvs *v1alpha1.KeyValueStore) int32 {
	if kvs.Spec.Proxy == nil {
		return 0
	}
	return ptr.Deref(kvs.Spec.Proxy.Replicas, 0)
}

// statefulSetReady is the revision-aware readiness test: the controller has
// seen the latest spec, every replica runs the update revision, and all are ready.
// An empty image skips the image check.
func statefulSetReady(sts *appsv1.StatefulSet, image string, want int32) bool {
	c := dataContainer(sts)
	if c == nil || image != "" && !sameImage(c.Image, image) {
		return false
	}
	s := sts.Status
	return s.ObservedGeneration >= sts.Generation &&
		ptr.Deref(sts.Spec.Replicas, 1) == want &&
		s.Replicas == want &&
		s.UpdatedReplicas == want &&
		s.ReadyReplicas == want &&
		s.CurrentRevision == s.UpdateRevision
}

// Names of the data tier's and the proxy tier's containers in their Pod templates.
const (
	dataContainerName  = "kvstore"
	proxyContainerName = "proxy"
)

// dataContainer is the data tier's container in the StatefulSet's template
// (nil if none): found by name, since admission may inject others before it.
func dataContainer(sts *appsv1.StatefulSet) *corev1.Container {
	if sts == nil {
		return nil
	}
	i := slices.IndexFunc(sts.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == dataContainerName })
	if i < 0 {
		return nil
	}
	return &sts.Spec.Template.Spec.Containers[i]
}

// sameImage says the running image is the spec's, also once an admission
// webhook pinned it to a digest (image policies do: "redis:7.2" becomes
// "redis:7.2@sha256:..."); otherwise such a store would never be Ready.
func sameImage(running, spec string) bool {
	name, _, pinned := strings.Cut(running, "@")
	return running == spec || pinned && name == spec
}

// samePinnedImage takes the data container's image as applied when an
// admission webhook pinned it to a digest in our own request (the stored
// value, ours in managedFields, is then "<image>@sha256:..."): otherwise
// every reconcile would apply the StatefulSet again, and tell so in an event.
func samePinnedImage(live, desired *appsv1ac.StatefulSetApplyConfiguration) {
	takePinnedImage(acDataContainer(live), acDataContainer(desired))
}

// samePinnedProxyImage does the same for the proxy Deployment's container.
func samePinnedProxyImage(live, desired *appsv1ac.DeploymentApplyConfiguration) {
	takePinnedImage(acProxyContainer(live), acProxyContainer(desired))
}

func takePinnedImage(live, desired *corev1ac.ContainerApplyConfiguration) {
	if live != nil && desired != nil && live.Image != nil && desired.Image != nil && sameImage(*live.Image, *desired.Image) {
		live.Image = desired.Image
	}
}

// acProxyContainer is the proxy container of a Deployment apply
// configuration (nil if none).
func acProxyContainer(d *appsv1ac.DeploymentApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	if d == nil || d.Spec == nil {
		return nil
	}
	return acContainer(d.Spec.Template, proxyContainerName)
}

// acDataContainer is the data container of a StatefulSet apply
// configuration (nil if none).
func acDataContainer(sts *appsv1ac.StatefulSetApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	if sts == nil || sts.Spec == nil {
		return nil
	}
	return acContainer(sts.Spec.Template, dataContainerName)
}

// acContainer is the named container of a Pod template (nil if none).
func acContainer(t *corev1ac.PodTemplateSpecApplyConfiguration, name string) *corev1ac.ContainerApplyConfiguration {
	if t == nil || t.Spec == nil {
		return nil
	}
	cs := t.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1ac.ContainerApplyConfiguration) bool { return ptr.Deref(c.Name, "") == name })
	if i < 0 {
		return nil
	}
	return &cs[i]
}

// deploymentReady says every proxy replica is updated and available.
func deploymentReady(d *appsv1.Deployment, want int32) bool {
	if d == nil {
		return want == 0
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation &&
		ptr.Deref(d.Spec.Replicas, 1) == want &&
		s.UpdatedReplicas == want &&
		s.AvailableReplicas == want &&
		s.Replicas == want
}
