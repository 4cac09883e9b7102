package keyvaluestore

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/install"
	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

func TestStatefulSetBuilder(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Storage.StorageClassName = ptr.To("fast")
	withClaimsDeleted(kvs)

	sts := statefulSet(kvs, 3)
	assert.Equal(t, "s", *sts.Name)
	assert.Equal(t, int32(3), *sts.Spec.Replicas)
	assert.Equal(t, "s-headless", *sts.Spec.ServiceName)
	assert.Equal(t, map[string]string{LabelInstance: "s", LabelComponent: ComponentData}, sts.Spec.Selector.MatchLabels)
	require.Len(t, sts.OwnerReferences, 1)
	assert.True(t, *sts.OwnerReferences[0].Controller)
	assert.Equal(t, types.UID("uid-1"), *sts.OwnerReferences[0].UID)

	c := sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "redis:7.2", *c.Image)
	assert.Equal(t, int32(6379), *c.Ports[0].ContainerPort)
	require.NotNil(t, c.ReadinessProbe.TCPSocket)
	require.NotNil(t, sts.Spec.Template.Spec.Affinity.PodAntiAffinity)

	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	claim := sts.Spec.VolumeClaimTemplates[0]
	assert.Equal(t, "fast", *claim.Spec.StorageClassName)
	assert.Equal(t, ManagedBy, claim.Labels[LabelManagedBy], "claims carry the labels the controller finds them by")
	assert.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, *sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted,
		"only the teardown deletes claims")
}

// The Services, the PodDisruptionBudget and status.selector select the
// store's Pods, not another application's that carry the same common
// instance and component labels (a Helm release named like the store):
// before the fix the store's budget also covered them, a Pod with two
// budgets cannot be evicted, and an autoscaler averaged over them (found
// by review).
func TestSelectorsTakeOnlyTheStoresPods(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoy:1"}
	for component, sel := range map[string]map[string]string{
		"headless Service": headlessService(kvs).Spec.Selector,
		"client Service":   clientService(kvs, ComponentData).Spec.Selector,
		"proxy Service":    clientService(kvs, ComponentProxy).Spec.Selector,
		"budget":           podDisruptionBudget(kvs).Spec.Selector.MatchLabels,
	} {
		s := labels.SelectorFromSet(sel)
		ours := labelsFor(kvs, sel[LabelComponent])
		assert.True(t, s.Matches(labels.Set(ours)), component)
		foreign := map[string]string{LabelName: "elasticsearch", LabelInstance: kvs.Name, LabelComponent: sel[LabelComponent]}
		assert.False(t, s.Matches(labels.Set(foreign)), component)
	}
	// status.selector, which /scale serves to autoscalers, the same.
	s, err := labels.Parse(observe(kvs, nil, nil, nil, bootstrapState{}, nil).Selector)
	require.NoError(t, err)
	assert.True(t, s.Matches(labels.Set(labelsFor(kvs, ComponentData))))
	assert.False(t, s.Matches(labels.Set{LabelName: "elasticsearch", LabelInstance: kvs.Name, LabelComponent: ComponentData}))
}

// The client Service takes spec.service's type, annotations and source
// ranges; without spec.service it sets none of them, so that a type or an
// annotation set by hand on an earlier release's Service stays.
func TestClientServiceExposure(t *testing.T) {
	kvs := newStore()
	svc := clientService(kvs, ComponentData)
	assert.Nil(t, svc.Spec.Type)
	assert.Nil(t, svc.Annotations)
	assert.Nil(t, svc.Spec.LoadBalancerSourceRanges)

	kvs.Spec.Service = &v1alpha1.ClientService{Type: v1alpha1.ServiceTypeLoadBalancer,
		Annotations:              map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
	svc = clientService(kvs, ComponentData)
	assert.Equal(t, corev1.ServiceTypeLoadBalancer, *svc.Spec.Type)
	assert.Equal(t, map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, svc.Annotations)
	assert.Equal(t, []string{"10.0.0.0/8"}, svc.Spec.LoadBalancerSourceRanges)
	assert.Equal(t, labelsFor(kvs, ComponentData), svc.Labels, "annotations leave the labels as they are")

	kvs.Spec.Service = &v1alpha1.ClientService{Type: v1alpha1.ServiceTypeClusterIP}
	svc = clientService(kvs, ComponentData)
	assert.Equal(t, corev1.ServiceTypeClusterIP, *svc.Spec.Type, "set: the type is kept, also ClusterIP")
	assert.Nil(t, svc.Annotations)
}

func TestServicesFollowTheProxyTier(t *testing.T) {
	kvs := newStore()
	assert.Equal(t, ComponentData, clientService(kvs, ComponentData).Spec.Selector[LabelComponent])
	headless := headlessService(kvs)
	assert.Equal(t, corev1.ClusterIPNone, *headless.Spec.ClusterIP)
	assert.True(t, *headless.Spec.PublishNotReadyAddresses)

	kvs.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](2), Image: "envoy:1"}
	assert.Equal(t, ComponentProxy, clientService(kvs, ComponentProxy).Spec.Selector[LabelComponent])
	d := proxyDeployment(kvs, 2)
	assert.Equal(t, "s-proxy", *d.Name)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	assert.Equal(t, "envoy:1", *d.Spec.Template.Spec.Containers[0].Image)
}

func TestBackupJobContract(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Backup = &v1alpha1.BackupSpec{Image: "backup:1", Command: []string{"/backup", "--all"}, ActiveDeadlineSeconds: ptr.To[int64](120)}
	b := newBackup("nightly", v1alpha1.BackupReasonScheduled)
	job := backupJob(kvs, b, 2, 3)
	assert.Equal(t, "nightly-2", *job.Name)
	ref := job.OwnerReferences[0]
	assert.Equal(t, "KeyValueStoreBackup", *ref.Kind, "the backup controls its Jobs, not the store: backups outlive their store")
	assert.Equal(t, b.UID, *ref.UID)
	assert.Equal(t, "2", job.Annotations[attemptAnnotation])
	assert.Equal(t, int32(0), *job.Spec.BackoffLimit, "retries belong to the controller")
	assert.Equal(t, int64(120), *job.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, corev1.RestartPolicyNever, *job.Spec.Template.Spec.RestartPolicy)
	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"/backup", "--all"}, c.Command)
	env := map[string]string{}
	for _, e := range c.Env {
		env[*e.Name] = *e.Value
	}
	assert.Equal(t, map[string]string{
		"KVSTORE_NAME":          "s",
		"KVSTORE_NAMESPACE":     "ns",
		"KVSTORE_PORT":          "6379",
		"KVSTORE_ENDPOINTS":     "s-0.s-headless.ns.svc,s-1.s-headless.ns.svc,s-2.s-headless.ns.svc",
		"KVSTORE_BACKUP_NAME":   "nightly",
		"KVSTORE_BACKUP_UID":    "uid-nightly",
		"KVSTORE_BACKUP_REASON": "Scheduled",
	}, env)
}

func TestBootstrapJobContract(t *testing.T) {
	kvs := newStore()
	kvs.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "restore:1", Command: []string{"/restore"}, FromBackup: "nightly"}
	job := bootstrapJob(kvs, newBackup("nightly", v1alpha1.BackupReasonScheduled, func(b *v1alpha1.KeyValueStoreBackup) { b.Spec.StoreName = "old" }), 1, false)
	assert.Equal(t, "s-bootstrap-1", *job.Name)
	assert.Equal(t, "KeyValueStore", *job.OwnerReferences[0].Kind)
	assert.Equal(t, int64(600), *job.Spec.ActiveDeadlineSeconds)
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[*e.Name] = *e.Value
	}
	assert.Equal(t, "nightly", env["KVSTORE_BACKUP_NAME"])
	assert.Equal(t, "uid-nightly", env["KVSTORE_BACKUP_UID"])
	assert.Equal(t, "old", env["KVSTORE_BACKUP_STORE"])
	assert.Equal(t, "s", env["KVSTORE_NAME"])
}

// A backup or bootstrap Job runs as its spec's ServiceAccount and reads its
// envFrom sources, with only the fields set; the controller's KVSTORE_
// variables come in env, which wins over envFrom. The data and proxy Pods
// get neither, and Jobs of a store without them are as before the fields
// existed.
func TestJobsRunWithTheirServiceAccountAndEnvFrom(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, pod := range templates(kvs) {
		assert.Nil(t, pod.ServiceAccountName, name)
		assert.Empty(t, pod.Containers[0].EnvFrom, name)
	}

	kvs.Spec.Backup.ServiceAccountName = "backup-writer"
	kvs.Spec.Backup.EnvFrom = []v1alpha1.EnvFromSource{
		{Prefix: "S3_", SecretRef: &v1alpha1.EnvSourceReference{Name: "s3"}},
		{ConfigMapRef: &v1alpha1.EnvSourceReference{Name: "endpoints", Optional: ptr.To(true)}},
	}
	kvs.Spec.Bootstrap.ServiceAccountName = "backup-reader"
	kvs.Spec.Bootstrap.EnvFrom = []v1alpha1.EnvFromSource{{SecretRef: &v1alpha1.EnvSourceReference{Name: "s3-read", Optional: ptr.To(false)}}}
	pods := templates(kvs)
	assert.Nil(t, pods["data"].ServiceAccountName)
	assert.Nil(t, pods["proxy"].ServiceAccountName)
	assert.Empty(t, pods["data"].Containers[0].EnvFrom)

	assert.Equal(t, "backup-writer", *pods["backup"].ServiceAccountName)
	assert.Equal(t, []corev1ac.EnvFromSourceApplyConfiguration{
		{Prefix: ptr.To("S3_"), SecretRef: &corev1ac.SecretEnvSourceApplyConfiguration{LocalObjectReferenceApplyConfiguration: corev1ac.LocalObjectReferenceApplyConfiguration{Name: ptr.To("s3")}}},
		{ConfigMapRef: &corev1ac.ConfigMapEnvSourceApplyConfiguration{LocalObjectReferenceApplyConfiguration: corev1ac.LocalObjectReferenceApplyConfiguration{Name: ptr.To("endpoints")}, Optional: ptr.To(true)}},
	}, pods["backup"].Containers[0].EnvFrom)
	assert.NotEmpty(t, pods["backup"].Containers[0].Env, "the KVSTORE_ variables stay in env, which wins over envFrom")

	assert.Equal(t, "backup-reader", *pods["bootstrap"].ServiceAccountName)
	assert.Equal(t, []corev1ac.EnvFromSourceApplyConfiguration{
		{SecretRef: &corev1ac.SecretEnvSourceApplyConfiguration{LocalObjectReferenceApplyConfiguration: corev1ac.LocalObjectReferenceApplyConfiguration{Name: ptr.To("s3-read")}, Optional: ptr.To(false)}},
	}, pods["bootstrap"].Containers[0].EnvFrom)
}

// Every Pod of a store with spec.securityContext runs as its user under
// what the Pod Security Standard "restricted" asks; a store without one
// keeps Pods with no security context, as before the field existed (the
// e2e test checks the Pods against kube-apiserver's PodSecurity admission).
func TestPodsRunUnderTheStoresSecurityContext(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, pod := range templates(kvs) {
		assert.Nil(t, pod.SecurityContext, name)
		assert.Nil(t, pod.Containers[0].SecurityContext, name)
	}

	kvs.Spec.SecurityContext = &v1alpha1.SecurityContext{RunAsUser: 999}
	for name, pod := range templates(kvs) {
		require.NotNil(t, pod.SecurityContext, name)
		assert.True(t, *pod.SecurityContext.RunAsNonRoot, name)
		assert.Equal(t, int64(999), *pod.SecurityContext.RunAsUser, name)
		assert.Nil(t, pod.SecurityContext.RunAsGroup, name+": the image's group")
		assert.Equal(t, int64(999), *pod.SecurityContext.FSGroup, name+": the user's ID when no group is given")
		assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, *pod.SecurityContext.SeccompProfile.Type, name)
		c := pod.Containers[0].SecurityContext
		require.NotNil(t, c, name)
		assert.False(t, *c.AllowPrivilegeEscalation, name)
		assert.Equal(t, []corev1.Capability{"ALL"}, c.Capabilities.Drop, name)
	}

	kvs.Spec.SecurityContext.RunAsGroup = ptr.To[int64](1000)
	assert.Equal(t, int64(1000), *templates(kvs)["data"].SecurityContext.FSGroup, "the group when one is given")
	kvs.Spec.SecurityContext.FSGroup = ptr.To[int64](2000)
	data := templates(kvs)["data"].SecurityContext
	assert.Equal(t, int64(1000), *data.RunAsGroup)
	assert.Equal(t, int64(2000), *data.FSGroup)
}

// podTemplates are the Pod templates of every workload of kvs.
func podTemplates(kvs *v1alpha1.KeyValueStore) map[string]*corev1ac.PodTemplateSpecApplyConfiguration {
	return map[string]*corev1ac.PodTemplateSpecApplyConfiguration{
		"data":      statefulSet(kvs, 3).Spec.Template,
		"proxy":     proxyDeployment(kvs, 2).Spec.Template,
		"backup":    backupJob(kvs, newBackup("b", v1alpha1.BackupReasonManual), 1, 3).Spec.Template,
		"bootstrap": bootstrapJob(kvs, nil, 1, false).Spec.Template,
	}
}

// templates are the Pod specs of every workload of kvs.
func templates(kvs *v1alpha1.KeyValueStore) map[string]*corev1ac.PodSpecApplyConfiguration {
	specs := map[string]*corev1ac.PodSpecApplyConfiguration{}
	for name, t := range podTemplates(kvs) {
		specs[name] = t.Spec
	}
	return specs
}

// Every Pod of a store pulls its images with spec.imagePullSecrets; a
// store without them keeps Pods without, as before the field existed.
func TestPodsPullWithTheStoresSecrets(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, pod := range templates(kvs) {
		assert.Nil(t, pod.ImagePullSecrets, name)
	}
	kvs.Spec.ImagePullSecrets = []v1alpha1.LocalSecretReference{{Name: "registry"}, {Name: "mirror"}}
	for name, pod := range templates(kvs) {
		assert.Equal(t, []corev1ac.LocalObjectReferenceApplyConfiguration{{Name: ptr.To("registry")}, {Name: ptr.To("mirror")}}, pod.ImagePullSecrets, name)
	}
}

// Every Pod of a store carries its spec.podMetadata beside the
// controller's labels; a store without it keeps Pods with the controller's
// labels alone and no annotations, as before the field existed.
func TestPodsCarryTheStoresMetadata(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, tmpl := range podTemplates(kvs) {
		assert.Nil(t, tmpl.Annotations, name)
		assert.Len(t, tmpl.Labels, 4, name)
	}
	kvs.Spec.PodMetadata = &v1alpha1.PodMetadata{
		Labels:      map[string]string{"team": "payments"},
		Annotations: map[string]string{"sidecar.istio.io/inject": "false"},
	}
	for name, tmpl := range podTemplates(kvs) {
		assert.Equal(t, map[string]string{"sidecar.istio.io/inject": "false"}, tmpl.Annotations, name)
		assert.Equal(t, "payments", tmpl.Labels["team"], name)
		assert.Equal(t, name, tmpl.Labels[LabelComponent], name)
		assert.Len(t, tmpl.Labels, 5, name)
	}
}

// Validation refuses in spec.podMetadata.labels every label the controller
// sets on a store's Pods: a store's own value would change what selects
// them.
func TestTheControllersPodLabelsAreReserved(t *testing.T) {
	for name, tmpl := range podTemplates(storeOfEveryPod()) {
		for k := range tmpl.Labels {
			assert.True(t, validation.ReservedPodLabel(k), "%s: %s", name, k)
		}
	}
}

// storeOfEveryPod is a store with a proxy, backups and a bootstrap.
func storeOfEveryPod() *v1alpha1.KeyValueStore {
	return newStore(withProxy(2), withBackup, func(k *v1alpha1.KeyValueStore) {
		k.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "seed:1"}
	})
}

// Every Pod of a store runs where spec.scheduling says, with only the
// toleration fields it sets (an empty one would read back as unset and be
// applied again on every pass); a store without it keeps Pods without, as
// before the field existed.
func TestPodsAreScheduledAsTheStoreSays(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, pod := range templates(kvs) {
		assert.Nil(t, pod.NodeSelector, name)
		assert.Nil(t, pod.Tolerations, name)
		assert.Nil(t, pod.PriorityClassName, name)
	}
	kvs.Spec.Scheduling = &v1alpha1.Scheduling{
		NodeSelector: map[string]string{"pool": "stores"},
		Tolerations: []v1alpha1.Toleration{
			{Key: "dedicated", Value: "stores", Effect: v1alpha1.TaintEffectNoSchedule},
			{Operator: v1alpha1.TolerationOpExists, Effect: v1alpha1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)},
		},
		PriorityClassName: "stores",
	}
	for name, pod := range templates(kvs) {
		assert.Equal(t, map[string]string{"pool": "stores"}, pod.NodeSelector, name)
		assert.Equal(t, []corev1ac.TolerationApplyConfiguration{
			{Key: ptr.To("dedicated"), Value: ptr.To("stores"), Effect: ptr.To(corev1.TaintEffectNoSchedule)},
			{Operator: ptr.To(corev1.TolerationOpExists), Effect: ptr.To(corev1.TaintEffectNoExecute), TolerationSeconds: ptr.To[int64](60)},
		}, pod.Tolerations, name)
		assert.Equal(t, "stores", *pod.PriorityClassName, name)
	}
}

// The data container runs with spec.args and reads spec.envFrom; no other
// container does. A store without them keeps a container without, as
// before the fields existed.
func TestTheDataContainerRunsWithTheStoresConfiguration(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, pod := range templates(kvs) {
		assert.Nil(t, pod.Containers[0].Args, name)
		assert.Nil(t, pod.Containers[0].EnvFrom, name)
	}
	kvs.Spec.Args = []string{"--maxmemory", "1gb", "--requirepass", "$(PASSWORD)"}
	kvs.Spec.EnvFrom = []v1alpha1.EnvFromSource{{SecretRef: &v1alpha1.EnvSourceReference{Name: "redis"}}}
	for name, pod := range templates(kvs) {
		c := pod.Containers[0]
		if name != "data" {
			assert.Nil(t, c.Args, name)
			assert.Nil(t, c.EnvFrom, name)
			continue
		}
		assert.Equal(t, []string{"--maxmemory", "1gb", "--requirepass", "$(PASSWORD)"}, c.Args)
		assert.Equal(t, []corev1ac.EnvFromSourceApplyConfiguration{{SecretRef: &corev1ac.SecretEnvSourceApplyConfiguration{
			LocalObjectReferenceApplyConfiguration: corev1ac.LocalObjectReferenceApplyConfiguration{Name: ptr.To("redis")}}}}, c.EnvFrom)
	}
}

// The data replicas and the proxy's Pods spread as spec.scheduling's
// topology spread constraints say, each counting its own component of this
// store. Jobs do not spread.
// A store without constraints keeps Pods without, as before the field
// existed.
func TestPodsSpreadAsTheStoreSays(t *testing.T) {
	kvs := storeOfEveryPod()
	for name, pod := range templates(kvs) {
		assert.Nil(t, pod.TopologySpreadConstraints, name)
	}
	kvs.Spec.Scheduling = &v1alpha1.Scheduling{TopologySpreadConstraints: []v1alpha1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: v1alpha1.DoNotSchedule, MinDomains: ptr.To[int32](3)},
		{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: v1alpha1.ScheduleAnyway},
	}}
	spread := func(component string) []corev1ac.TopologySpreadConstraintApplyConfiguration {
		selector := metav1ac.LabelSelector().WithMatchLabels(map[string]string{
			LabelName: appName, LabelInstance: kvs.Name, LabelComponent: component})
		return []corev1ac.TopologySpreadConstraintApplyConfiguration{
			{MaxSkew: ptr.To[int32](1), TopologyKey: ptr.To(corev1.LabelTopologyZone), WhenUnsatisfiable: ptr.To(corev1.DoNotSchedule),
				MinDomains: ptr.To[int32](3), LabelSelector: selector},
			{MaxSkew: ptr.To[int32](2), TopologyKey: ptr.To(corev1.LabelHostname), WhenUnsatisfiable: ptr.To(corev1.ScheduleAnyway),
				LabelSelector: selector},
		}
	}
	pods := templates(kvs)
	assert.Equal(t, spread(ComponentData), pods["data"].TopologySpreadConstraints)
	assert.Equal(t, spread(ComponentProxy), pods["proxy"].TopologySpreadConstraints)
	assert.Nil(t, pods["backup"].TopologySpreadConstraints)
	assert.Nil(t, pods["bootstrap"].TopologySpreadConstraints)
}

// Each container gets the resources its part of the spec gives, and a
// store without any keeps containers without, as before the field existed.
func TestContainersGetTheirResources(t *testing.T) {
	kvs := newStore(withProxy(2), withBackup, func(k *v1alpha1.KeyValueStore) {
		k.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "seed:1"}
	})
	containers := func() map[string]*corev1ac.ContainerApplyConfiguration {
		return map[string]*corev1ac.ContainerApplyConfiguration{
			"data":      &statefulSet(kvs, 3).Spec.Template.Spec.Containers[0],
			"proxy":     &proxyDeployment(kvs, 2).Spec.Template.Spec.Containers[0],
			"backup":    &backupJob(kvs, newBackup("b", v1alpha1.BackupReasonManual), 1, 3).Spec.Template.Spec.Containers[0],
			"bootstrap": &bootstrapJob(kvs, nil, 1, false).Spec.Template.Spec.Containers[0],
		}
	}
	for name, c := range containers() {
		assert.Nil(t, c.Resources, name)
	}

	quantities := func(cpu string) map[string]resource.Quantity {
		return map[string]resource.Quantity{"cpu": resource.MustParse(cpu)}
	}
	kvs.Spec.Resources = &v1alpha1.Resources{Requests: quantities("1"), Limits: quantities("2")}
	kvs.Spec.Proxy.Resources = &v1alpha1.Resources{Requests: quantities("100m")}
	kvs.Spec.Backup.Resources = &v1alpha1.Resources{Limits: quantities("200m")}
	kvs.Spec.Bootstrap.Resources = &v1alpha1.Resources{Requests: quantities("300m")}
	got := containers()
	assert.Equal(t, "1", ptr.To((*got["data"].Resources.Requests)["cpu"]).String())
	assert.Equal(t, "2", ptr.To((*got["data"].Resources.Limits)["cpu"]).String())
	assert.Equal(t, "100m", ptr.To((*got["proxy"].Resources.Requests)["cpu"]).String())
	assert.Nil(t, got["proxy"].Resources.Limits, "a list not given is not sent (the builder would send null)")
	assert.Equal(t, "200m", ptr.To((*got["backup"].Resources.Limits)["cpu"]).String())
	assert.Nil(t, got["backup"].Resources.Requests)
	assert.Equal(t, "300m", ptr.To((*got["bootstrap"].Resources.Requests)["cpu"]).String())

	// kube-apiserver rounds every quantity of a Pod template up to milli
	// (SetDefaults_ResourceList): applied finer, the StatefulSet never
	// matched what the controller applies, which then applied it and told
	// "Updated" on every sync, and a paused store read Pending for ever
	// (found by review).
	kvs.Spec.Resources = &v1alpha1.Resources{Requests: quantities("1n"), Limits: quantities("1.0001")}
	data := containers()["data"].Resources
	assert.Equal(t, "1m", ptr.To((*data.Requests)["cpu"]).String())
	assert.Equal(t, "1001m", ptr.To((*data.Limits)["cpu"]).String())
	assert.Equal(t, "1n", ptr.To(kvs.Spec.Resources.Requests["cpu"]).String(), "the store's own spec is not changed")
}

func readySts(image string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: dataContainerName, Image: image}}}},
		},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 2, Replicas: replicas, ReadyReplicas: replicas, UpdatedReplicas: replicas,
			CurrentRevision: "r2", UpdateRevision: "r2",
		},
	}
}

func TestStatefulSetReadyIsRevisionAware(t *testing.T) {
	digest := strings.Repeat("0", 64)
	tests := []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		image  string
		want   bool
	}{
		{"ready", func(*appsv1.StatefulSet) {}, "redis:7.2", true},
		{"image check skipped", func(*appsv1.StatefulSet) {}, "", true},
		{"other image", func(*appsv1.StatefulSet) {}, "redis:7.4", false},
		{"pinned to a digest", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image += "@sha256:" + digest }, "redis:7.2", true},
		{"other image pinned to a digest", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image += "@sha256:" + digest }, "redis:7.4", false},
		{"a sidecar injected first", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "mesh", Image: "proxy:1"}}, s.Spec.Template.Spec.Containers...)
		}, "redis:7.2", true},
		{"generation not observed", func(s *appsv1.StatefulSet) { s.Status.ObservedGeneration = 1 }, "redis:7.2", false},
		{"revision rolling", func(s *appsv1.StatefulSet) { s.Status.CurrentRevision = "r1" }, "redis:7.2", false},
		{"not all updated", func(s *appsv1.StatefulSet) { s.Status.UpdatedReplicas = 2 }, "redis:7.2", false},
		{"not all ready", func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 2 }, "redis:7.2", false},
		{"spec replicas differ", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](5) }, "redis:7.2", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sts := readySts("redis:7.2", 3)
			tc.mutate(sts)
			assert.Equal(t, tc.want, statefulSetReady(sts, tc.image, 3))
		})
	}
	assert.False(t, statefulSetReady(nil, "", 3))
}

// Owner references name the version the server prefers: the garbage
// collector observes owners in it, and reads back through the aggregator the
// owner of every dependent whose reference names another (found by the
// benchmark: 5 GETs per store).
func TestOwnerReferencesNameThePreferredVersion(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	preferred := scheme.PrioritizedVersionsForGroup(v1alpha1.GroupName)[0].String()
	kvs := newStore()
	assert.Equal(t, preferred, *ownerReference(kvs).APIVersion)
	b := newBackup("b", v1alpha1.BackupReasonManual)
	withBackup(kvs)
	assert.Equal(t, preferred, *backupJob(kvs, b, 1, 3).OwnerReferences[0].APIVersion)
}

// During an upgrade, until the APIService of v1beta1 exists, kube-apiserver
// cannot map kvstore.io/v1beta1: references and events name the version its
// discovery prefers and serves in full, and follow it when it changes.
// Before the fix they named v1beta1 regardless (found by review: every
// backup started in that window failed where
// OwnerReferencesPermissionEnforcement is on); a review of the fix found it
// flipping to v1alpha1 and back while v1beta1 was stale for a moment.
func TestOwnerVersionFollowsDiscovery(t *testing.T) {
	t.Cleanup(func() { preferredVersion.Store(ptr.To("kvstore.io/v1beta1")) })
	kvs := newStore(withBackup)
	b := newBackup("b", v1alpha1.BackupReasonManual)
	names := func() []string {
		return []string{*ownerReference(kvs).APIVersion, *backupJob(kvs, b, 1, 3).OwnerReferences[0].APIVersion,
			inPreferredVersion(kvs).(*corev1.ObjectReference).APIVersion}
	}
	d := &fakediscovery.FakeDiscovery{Fake: &core.Fake{}}
	// serves lists group versions in priority order; those in empty are
	// listed without resources.
	serves := func(versions []string, empty ...string) {
		d.Resources = nil
		for _, v := range versions {
			l := &metav1.APIResourceList{GroupVersion: v}
			if !slices.Contains(empty, v) {
				l.APIResources = []metav1.APIResource{{Name: "keyvaluestores"}, {Name: "keyvaluestorebackups"}}
			}
			d.Resources = append(d.Resources, l)
		}
	}
	fails := func(err error) {
		d.ReactionChain = nil
		if err != nil {
			d.PrependReactor("get", "resource", func(core.Action) (bool, runtime.Object, error) { return true, nil, err })
		}
	}
	stale := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "kvstore.io", Version: "v1beta1"}: errors.New("stale")}}
	both := []string{"kvstore.io/v1beta1", "kvstore.io/v1alpha1"}
	ctx := t.Context()

	// A v1beta1 only stale for a moment is kept: switching would rewrite
	// every store's objects to v1alpha1 and back.
	serves(both)
	fails(stale)
	assert.False(t, refreshOwnerVersion(ctx, d))
	assert.Equal(t, "kvstore.io/v1beta1", ownerAPIVersion())

	// Upgrade steps 1-2: v1beta1 not served at all.
	fails(nil)
	serves([]string{"v1", "kvstore.io/v1alpha1"})
	assert.True(t, refreshOwnerVersion(ctx, d))
	assert.Equal(t, []string{"kvstore.io/v1alpha1", "kvstore.io/v1alpha1", "kvstore.io/v1alpha1"}, names())
	assert.False(t, refreshOwnerVersion(ctx, d), "no change")

	// v1beta1 listed before its Service serves it (current, but empty), or
	// stale: not taken.
	serves(both, "kvstore.io/v1beta1")
	assert.False(t, refreshOwnerVersion(ctx, d))
	serves(both)
	fails(stale)
	assert.False(t, refreshOwnerVersion(ctx, d))
	// The group's APIServices unavailable, or discovery failing: kept.
	fails(nil)
	serves([]string{"v1"})
	assert.False(t, refreshOwnerVersion(ctx, d))
	fails(errors.New("connection refused"))
	assert.False(t, refreshOwnerVersion(ctx, d))
	assert.Equal(t, "kvstore.io/v1alpha1", ownerAPIVersion())

	// Step 3: v1beta1 served.
	fails(nil)
	serves(both)
	assert.True(t, refreshOwnerVersion(ctx, d))
	assert.Equal(t, []string{"kvstore.io/v1beta1", "kvstore.io/v1beta1", "kvstore.io/v1beta1"}, names())
}

// References written by an earlier release name v1alpha1; their objects
// still belong to the store.
func TestOwnerAcceptsEveryVersionOfTheGroup(t *testing.T) {
	for _, apiVersion := range []string{"kvstore.io/v1alpha1", "kvstore.io/v1beta1"} {
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: "KeyValueStore", Name: "s", UID: "uid-1", Controller: ptr.To(true)}}}}
		ns, name := owner(sts)
		assert.Equal(t, "ns/s", ns+"/"+name, apiVersion)
	}
	foreign := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "example.com/v1", Kind: "KeyValueStore", Name: "s", UID: "uid-2", Controller: ptr.To(true)}}}}
	_, name := owner(foreign)
	assert.Empty(t, name)
}
