package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KeyValueStore is a replicated key-value store: a StatefulSet of data
// replicas with persistent volumes, optionally fronted by a stateless proxy
// Deployment. The kvstore-apiserver controller creates and repairs those
// workloads and runs an ordered teardown before the object is removed.
type KeyValueStore struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired state of the store.
	// +optional
	Spec KeyValueStoreSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is the most recently observed state of the store. It is written
	// by the controller through the /status subresource and is read-only here.
	// +optional
	Status KeyValueStoreStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// KeyValueStoreSpec is the desired state of a KeyValueStore.
type KeyValueStoreSpec struct {
	// Replicas is the number of data replicas (StatefulSet Pods), from 1 to 9.
	// An odd number is recommended: an even one adds no quorum.
	// +optional
	// +default=3
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`

	// Image is the container image of the data replicas, for example
	// "redis:7.2", at most 512 bytes. Changing it rolls the StatefulSet one
	// Pod at a time.
	Image string `json:"image" protobuf:"bytes,2,opt,name=image"`

	// Port is the TCP port the data replicas listen on, from 1 to 65535.
	// +optional
	// +default=6379
	Port int32 `json:"port,omitempty" protobuf:"varint,3,opt,name=port"`

	// Storage is the persistent volume each data replica gets.
	// Its capacity may change (the claims grow, never shrink); its class is
	// immutable.
	// +optional
	Storage StorageSpec `json:"storage,omitempty" protobuf:"bytes,4,opt,name=storage"`

	// Proxy configures the optional stateless proxy tier, a Deployment named
	// <name>-proxy created once the data replicas are ready.
	// +optional
	Proxy *ProxySpec `json:"proxy,omitempty" protobuf:"bytes,5,opt,name=proxy"`

	// Backup configures how the store is backed up: the image and command of
	// every backup Job (KeyValueStoreBackups, on demand or on a schedule),
	// and the final backup run before the data replicas are torn down on
	// deletion. Without it no backup is taken.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty" protobuf:"bytes,6,opt,name=backup"`

	// PersistentVolumeClaimRetentionPolicy says what happens to the data
	// replicas' PersistentVolumeClaims when the store is deleted.
	// +optional
	PersistentVolumeClaimRetentionPolicy *PersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty" protobuf:"bytes,7,opt,name=persistentVolumeClaimRetentionPolicy"`

	// Paused stops the controller from changing the store's workloads.
	// Status is still reported, judged on what runs: a change made while
	// paused waits, and the store reads Pending until it is unpaused. Deletion of a paused store still runs the
	// teardown, since the finalizer must eventually be released.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,8,opt,name=paused"`

	// Bootstrap is a Job run once, after the data replicas are first ready
	// and before the proxy tier is created: to seed data, configure
	// replication or restore a backup. Set at create only; immutable.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty" protobuf:"bytes,9,opt,name=bootstrap"`

	// SecurityContext runs every Pod of the store (data replicas, proxy,
	// backup and bootstrap Jobs) as a non-root user under the Pod Security
	// Standard "restricted": privilege escalation off, every capability
	// dropped, the container runtime's default seccomp profile. Choose IDs
	// the images run with. Unset: the Pods set no security context and meet
	// "baseline" only. Changing it rolls the data replicas one Pod at a time,
	// and the proxy.
	// +optional
	SecurityContext *SecurityContext `json:"securityContext,omitempty" protobuf:"bytes,10,opt,name=securityContext"`

	// Resources are the compute resources of each data replica's container.
	// Unset: none, and the replicas are in the BestEffort QoS class, the
	// first evicted when a Node runs short. Changing them rolls the data
	// replicas one Pod at a time.
	// +optional
	Resources *Resources `json:"resources,omitempty" protobuf:"bytes,11,opt,name=resources"`

	// Scheduling constrains which nodes every Pod of the store runs on: the
	// data replicas, the proxy, and the backup and bootstrap Jobs. Unset:
	// any node the scheduler picks. Changing it rolls the data replicas one
	// Pod at a time, and the proxy.
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty" protobuf:"bytes,12,opt,name=scheduling"`

	// PodMetadata is labels and annotations put on every Pod of the store:
	// the data replicas, the proxy, and the backup and bootstrap Jobs (for a
	// service mesh, a metrics scraper, cost allocation). Unset: none but the
	// controller's. Changing it rolls the data replicas one Pod at a time,
	// and the proxy; Jobs created after it use it.
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty" protobuf:"bytes,13,opt,name=podMetadata"`

	// ImagePullSecrets name Secrets of the store's namespace (of type
	// kubernetes.io/dockerconfigjson) that every Pod of the store pulls its
	// images with: the data replicas, the proxy, and the backup and
	// bootstrap Jobs. As on a Pod, they replace its ServiceAccount's pull
	// secrets (which kube-apiserver adds only to a Pod that names none):
	// list every Secret the store's images need. At most 16, each a
	// DNS-1123 subdomain. Changing them rolls the data replicas one Pod at
	// a time, and the proxy.
	// +optional
	// +listType=atomic
	ImagePullSecrets []LocalSecretReference `json:"imagePullSecrets,omitempty" protobuf:"bytes,14,rep,name=imagePullSecrets"`

	// Args are the data container's arguments, after its image's
	// entrypoint (the store's configuration: --maxmemory 1gb, say), as a
	// container's args: $(VAR) is replaced by the variable VAR of envFrom.
	// Everyone who may read the store reads them: keep secrets in envFrom.
	// At most 64 entries, each at most 4096 bytes and 32768 bytes in all;
	// each entry is UTF-8 text without control characters other than tab,
	// newline and carriage return, and without U+FFFE or U+FFFF. Unset: the
	// image's default arguments. Changing them rolls the data replicas one
	// Pod at a time.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty" protobuf:"bytes,15,rep,name=args"`

	// EnvFrom fills the data container's environment from Secrets or
	// ConfigMaps of the store's namespace (a password args names as
	// $(VAR), say), as a container's envFrom does: later sources win over
	// earlier ones. At most 16 entries. A source that is missing, and not
	// optional, keeps a replica from starting. Changing the list rolls the
	// data replicas one Pod at a time; a change of a Secret's or
	// ConfigMap's contents does not (replicas read them when they start).
	// +optional
	// +listType=atomic
	EnvFrom []EnvFromSource `json:"envFrom,omitempty" protobuf:"bytes,16,rep,name=envFrom"`

	// Service configures the store's client Service, named as the store:
	// the address clients use (the proxy once it is ready, otherwise the
	// data replicas). Unset: a ClusterIP Service, reachable inside the
	// cluster only, whose type and annotations the controller leaves to
	// whoever set them. Set: the controller keeps its type, annotations
	// and loadBalancerSourceRanges to these.
	// +optional
	Service *ClientService `json:"service,omitempty" protobuf:"bytes,17,opt,name=service"`
}

// SecurityContext is the identity the store's Pods run as.
type SecurityContext struct {
	// RunAsUser is the user ID every container runs as, from 1 to
	// 2147483647 (not root).
	RunAsUser int64 `json:"runAsUser" protobuf:"varint,1,opt,name=runAsUser"`

	// RunAsGroup is the primary group ID of every container, from 0 to
	// 2147483647. When unset, the image's.
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty" protobuf:"varint,2,opt,name=runAsGroup"`

	// FSGroup is the group that owns the data volumes, from 0 to
	// 2147483647: the kubelet makes a volume writable to it when the
	// volume's root does not already belong to it. When unset, runAsGroup,
	// or else runAsUser.
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty" protobuf:"varint,3,opt,name=fsGroup"`
}

// Resources are the compute resources of a container: "cpu", "memory" and
// "ephemeral-storage". In a namespace whose ResourceQuota limits one of
// them, every Pod must give it, and the Pods of a store are refused
// without.
type Resources struct {
	// Requests is what the scheduler sets aside for the container, per
	// resource; each at most its limit. Requests equal to the limits for
	// both cpu and memory put the Pod in the Guaranteed QoS class.
	// +optional
	Requests map[string]resource.Quantity `json:"requests,omitempty" protobuf:"bytes,1,rep,name=requests"`

	// Limits is the most the container may use, per resource.
	// +optional
	Limits map[string]resource.Quantity `json:"limits,omitempty" protobuf:"bytes,2,rep,name=limits"`
}

// ServiceType is how a store's client Service is exposed.
// +enum
type ServiceType string

const (
	// ServiceTypeClusterIP: a virtual IP reachable inside the cluster only.
	ServiceTypeClusterIP ServiceType = "ClusterIP"
	// ServiceTypeNodePort: also a port on every Node's addresses.
	ServiceTypeNodePort ServiceType = "NodePort"
	// ServiceTypeLoadBalancer: also a load balancer of the cloud provider,
	// reached from outside the cluster.
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
)

// ClientService is how the store's client Service is exposed.
type ClientService struct {
	// Type is ClusterIP (inside the cluster only), NodePort (also on a port
	// of every Node) or LoadBalancer (also through the cloud provider's load
	// balancer). NodePort and LoadBalancer reach the store from outside
	// the cluster: give the store a password (args and envFrom) and, for a
	// LoadBalancer, loadBalancerSourceRanges. Changing it changes the
	// Service in place; no Pod restarts.
	// +optional
	// +default="ClusterIP"
	Type ServiceType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=ServiceType"`

	// Annotations are set on the Service, for the cloud provider's load
	// balancer (an internal load balancer, say): keys as in any
	// annotation, at most 64 KiB of keys and values together; keys under
	// kvstore.io/ are refused, and so is
	// service.beta.kubernetes.io/load-balancer-source-ranges (use
	// loadBalancerSourceRanges), and service.kubernetes.io/topology-aware-hints
	// must equal service.kubernetes.io/topology-mode when both are set.
	// Removing one removes it from the Service.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`

	// LoadBalancerSourceRanges are the client address ranges (CIDRs, such
	// as 10.0.0.0/8) a LoadBalancer accepts, where the cloud provider
	// supports it; only with type LoadBalancer. At most 64, each once, in
	// canonical form (no bits set after the prefix length). Unset: every
	// source.
	// +optional
	// +listType=atomic
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty" protobuf:"bytes,3,rep,name=loadBalancerSourceRanges"`
}

// LocalSecretReference names a Secret of the store's namespace.
type LocalSecretReference struct {
	// Name of the Secret.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
}

// PodMetadata is what a store adds to the metadata of its Pods.
type PodMetadata struct {
	// Labels are added to the Pods' labels, at most 64; keys and values as
	// in any label. The keys the controller sets (app.kubernetes.io/name,
	// app.kubernetes.io/instance, app.kubernetes.io/component,
	// app.kubernetes.io/managed-by), those Kubernetes' controllers set on
	// their Pods (controller-revision-hash, pod-template-hash,
	// statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index,
	// controller-uid, job-name, batch.kubernetes.io/...) and keys under
	// kvstore.io/ are refused.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`

	// Annotations are added to the Pods' annotations: keys as in any
	// annotation, at most 64 KiB of keys and values together. Keys under
	// kvstore.io/ and batch.kubernetes.io/ are refused, and so are those
	// kube-apiserver checks against a Pod's spec, which the controller
	// sets: the seccomp and AppArmor annotations,
	// scheduler.alpha.kubernetes.io/tolerations,
	// kubernetes.io/config.mirror and
	// controller.kubernetes.io/pod-deletion-cost.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`
}

// Scheduling constrains which nodes a store's Pods run on, as the same
// fields of a Pod do.
type Scheduling struct {
	// NodeSelector: the Pods run only on nodes that carry every one of these
	// labels. At most 64 entries; keys and values as in a label.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty" protobuf:"bytes,1,rep,name=nodeSelector"`

	// Tolerations let the Pods run on nodes whose taints they match (nodes
	// set aside for stores, say). At most 64.
	// +optional
	// +listType=atomic
	Tolerations []Toleration `json:"tolerations,omitempty" protobuf:"bytes,2,rep,name=tolerations"`

	// PriorityClassName is the PriorityClass of the Pods, a DNS-1123
	// subdomain of at most 253 characters. The PriorityClass must exist
	// when a Pod is created, or the Pod is refused (see the ReplicaFailure
	// condition). Unset: the cluster's default priority.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty" protobuf:"bytes,3,opt,name=priorityClassName"`

	// TopologySpreadConstraints spread the data replicas over the domains
	// of a node label (zones, say), as a Pod's topologySpreadConstraints
	// do; the proxy's Pods spread among themselves the same way. The
	// controller fills in which Pods count: the same component of the same
	// store. At most 8; no two with the same topologyKey and
	// whenUnsatisfiable. Set, they replace the scheduler's cluster-wide
	// default spreading for these Pods. Unset: the replicas prefer one per
	// node, and nothing keeps them apart across zones.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty" protobuf:"bytes,4,rep,name=topologySpreadConstraints"`
}

// UnsatisfiableConstraintAction is what the scheduler does with a Pod that
// no domain can take without breaking a spread constraint's maxSkew.
type UnsatisfiableConstraintAction string

const (
	// DoNotSchedule keeps the Pod Pending until a domain can take it.
	DoNotSchedule UnsatisfiableConstraintAction = "DoNotSchedule"
	// ScheduleAnyway schedules it, preferring the domains that reduce the
	// skew.
	ScheduleAnyway UnsatisfiableConstraintAction = "ScheduleAnyway"
)

// TopologySpreadConstraint spreads a component's Pods over the domains of a
// node label, as a Pod's topology spread constraint does.
type TopologySpreadConstraint struct {
	// MaxSkew is how many more of the component's Pods one domain may run
	// than the domain with the fewest, at least 1.
	MaxSkew int32 `json:"maxSkew" protobuf:"varint,1,opt,name=maxSkew"`

	// TopologyKey is the node label whose values are the domains
	// (topology.kubernetes.io/zone, kubernetes.io/hostname), a qualified
	// name. With DoNotSchedule, nodes without the label run none of the
	// Pods.
	TopologyKey string `json:"topologyKey" protobuf:"bytes,2,opt,name=topologyKey"`

	// WhenUnsatisfiable is DoNotSchedule (a Pod stays Pending rather than
	// break maxSkew) or ScheduleAnyway (the scheduler only prefers the
	// domains that reduce the skew).
	WhenUnsatisfiable UnsatisfiableConstraintAction `json:"whenUnsatisfiable" protobuf:"bytes,3,opt,name=whenUnsatisfiable,casttype=UnsatisfiableConstraintAction"`

	// MinDomains, with DoNotSchedule only, is how many domains the Pods
	// must spread over: while fewer domains have eligible nodes, the
	// missing ones count as running none of the Pods, so a Pod stays
	// Pending rather than double up (until, say, a cluster autoscaler adds
	// a node in another domain). At least 1. Unset: the domains there are.
	// +optional
	MinDomains *int32 `json:"minDomains,omitempty" protobuf:"varint,4,opt,name=minDomains"`
}

// TolerationOperator is how a toleration compares a taint's value.
type TolerationOperator string

const (
	// TolerationOpEqual: the taint's value must be the toleration's value.
	TolerationOpEqual TolerationOperator = "Equal"
	// TolerationOpExists: any value of the taint's key.
	TolerationOpExists TolerationOperator = "Exists"
)

// TaintEffect is what a taint does to Pods that do not tolerate it.
type TaintEffect string

const (
	// TaintEffectNoSchedule: no new Pod is scheduled on the node.
	TaintEffectNoSchedule TaintEffect = "NoSchedule"
	// TaintEffectPreferNoSchedule: the scheduler avoids the node.
	TaintEffectPreferNoSchedule TaintEffect = "PreferNoSchedule"
	// TaintEffectNoExecute: running Pods are evicted from the node too.
	TaintEffectNoExecute TaintEffect = "NoExecute"
)

// Toleration tolerates the taints it matches, as a Pod's toleration does.
type Toleration struct {
	// Key is the taint key to match, a qualified name (as a label key).
	// Empty matches every key, and then operator must be Exists.
	// +optional
	Key string `json:"key,omitempty" protobuf:"bytes,1,opt,name=key"`

	// Operator is Equal (also when empty: the taint's value must be value)
	// or Exists (any value; value must then be empty).
	// +optional
	Operator TolerationOperator `json:"operator,omitempty" protobuf:"bytes,2,opt,name=operator,casttype=TolerationOperator"`

	// Value is the taint value to match with operator Equal, as a label
	// value.
	// +optional
	Value string `json:"value,omitempty" protobuf:"bytes,3,opt,name=value"`

	// Effect is the taint effect to match: NoSchedule, PreferNoSchedule or
	// NoExecute. Empty matches every effect.
	// +optional
	Effect TaintEffect `json:"effect,omitempty" protobuf:"bytes,4,opt,name=effect,casttype=TaintEffect"`

	// TolerationSeconds, with effect NoExecute only, is how long a Pod stays
	// on a node after the taint is added (zero or less: evicted at once).
	// Unset: for ever.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty" protobuf:"varint,5,opt,name=tolerationSeconds"`
}

// StorageSpec describes the persistent volume of each data replica.
type StorageSpec struct {
	// Capacity is the requested capacity of each replica's volume (default
	// 1Gi); it must be greater than zero. Raising it grows each data
	// replica's claim to it, which needs a StorageClass with
	// allowVolumeExpansion (see the StorageResized condition); lowering it
	// shrinks no claim. It is v1alpha1's spec.storage.size under a name
	// that the Go field can carry too.
	// +optional
	Capacity resource.Quantity `json:"capacity,omitempty" protobuf:"bytes,1,opt,name=capacity"`

	// StorageClassName is the StorageClass of the volumes, a DNS-1123
	// subdomain of at most 253 characters. When unset the cluster's default
	// StorageClass is used. Immutable.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty" protobuf:"bytes,2,opt,name=storageClassName"`
}

// ProxySpec describes the stateless proxy tier.
type ProxySpec struct {
	// Replicas is the number of proxy Pods, from 0 to 20. Zero means no proxy
	// tier.
	// +optional
	// +default=0
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`

	// Image is the proxy's container image, at most 512 bytes. Required when
	// replicas > 0.
	// +optional
	Image string `json:"image,omitempty" protobuf:"bytes,2,opt,name=image"`

	// Resources are the compute resources of each proxy container.
	// +optional
	Resources *Resources `json:"resources,omitempty" protobuf:"bytes,3,opt,name=resources"`
}

// BackupSpec describes the store's backup Jobs and their schedule.
type BackupSpec struct {
	// Image is the container image of the backup Job, at most 512 bytes.
	Image string `json:"image" protobuf:"bytes,1,opt,name=image"`

	// Command is the entrypoint of the backup container. When empty the
	// image's own entrypoint runs. The container gets the environment
	// variables KVSTORE_NAME, KVSTORE_NAMESPACE, KVSTORE_PORT,
	// KVSTORE_ENDPOINTS (comma-separated Pod DNS names of the data replicas),
	// KVSTORE_BACKUP_NAME and KVSTORE_BACKUP_UID (the KeyValueStoreBackup
	// being taken: key its data by namespace, name and UID) and
	// KVSTORE_BACKUP_REASON (Manual, Scheduled or Final).
	// At most 64 entries, each at most 4096 bytes and 32768 bytes in all;
	// each entry is UTF-8 text without control characters other than tab,
	// newline and carriage return, and without U+FFFE or U+FFFF.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty" protobuf:"bytes,2,rep,name=command"`

	// ActiveDeadlineSeconds bounds how long the backup Job may run, in
	// seconds. After it the backup counts as failed.
	// +optional
	// +default=600
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,3,opt,name=activeDeadlineSeconds"`

	// Schedule takes a backup (a KeyValueStoreBackup with reason Scheduled)
	// at each slot of this standard 5-field cron expression, for example
	// "0 3 * * *"; the @hourly/@daily/@weekly/@monthly/@yearly forms are
	// accepted. Printable ASCII, its fields separated by spaces or tabs.
	// After downtime at most one backup catches up on missed slots. Empty:
	// no scheduled backups.
	// +optional
	Schedule string `json:"schedule,omitempty" protobuf:"bytes,4,opt,name=schedule"`

	// TimeZone is the IANA time zone name the schedule is read in, for
	// example "Europe/Berlin". Empty: UTC.
	// +optional
	TimeZone *string `json:"timeZone,omitempty" protobuf:"bytes,5,opt,name=timeZone"`

	// Keep is how many Completed scheduled backups are kept, from 1 to 100
	// (default 7); older ones are deleted. Manual and Final backups are
	// never deleted by the controller.
	// +optional
	// +default=7
	Keep *int32 `json:"keep,omitempty" protobuf:"varint,6,opt,name=keep"`

	// Resources are the compute resources of the backup Job's container.
	// +optional
	Resources *Resources `json:"resources,omitempty" protobuf:"bytes,7,opt,name=resources"`

	// ServiceAccountName is the ServiceAccount of the backup Job's Pod, in
	// the store's namespace: one whose identity may write where the backups
	// go (a cloud's workload identity), say. A DNS-1123 subdomain of at most 253
	// characters. It must exist when the Pod is created, or the Pod is
	// refused (the store's ReplicaFailure condition says so). Unset: the
	// namespace's default ServiceAccount. Jobs created after a change use it.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty" protobuf:"bytes,8,opt,name=serviceAccountName"`

	// EnvFrom fills the backup container's environment from Secrets or
	// ConfigMaps of the store's namespace (the object store's address and
	// credentials, say), as a container's envFrom does: later sources win
	// over earlier ones, and the KVSTORE_ variables the controller sets win
	// over all of them. At most 16 entries. Jobs created after a change use
	// it.
	// +optional
	// +listType=atomic
	EnvFrom []EnvFromSource `json:"envFrom,omitempty" protobuf:"bytes,9,rep,name=envFrom"`
}

// BootstrapSpec is the Job that prepares a new store's data.
type BootstrapSpec struct {
	// Image is the container image of the bootstrap Job, at most 512 bytes.
	Image string `json:"image" protobuf:"bytes,1,opt,name=image"`

	// Command is the entrypoint of the bootstrap container. When empty the
	// image's own entrypoint runs. The container gets the same environment
	// as a backup Job (without KVSTORE_BACKUP_REASON); when restoring,
	// KVSTORE_BACKUP_NAME and KVSTORE_BACKUP_UID name the backup to restore
	// and KVSTORE_BACKUP_STORE the store it was taken of. At most 64 entries,
	// each at most 4096 bytes and 32768 bytes in all; each entry is UTF-8
	// text without control characters other than tab, newline and carriage
	// return, and without U+FFFE or U+FFFF.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty" protobuf:"bytes,2,rep,name=command"`

	// FromBackup is the name of a Completed KeyValueStoreBackup in the
	// store's namespace to restore. It is checked when the bootstrap runs:
	// a backup that is missing or not Completed fails the store.
	// +optional
	FromBackup string `json:"fromBackup,omitempty" protobuf:"bytes,3,opt,name=fromBackup"`

	// ActiveDeadlineSeconds bounds how long the bootstrap Job may run, in
	// seconds.
	// +optional
	// +default=600
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,4,opt,name=activeDeadlineSeconds"`

	// Resources are the compute resources of the bootstrap Job's container.
	// +optional
	Resources *Resources `json:"resources,omitempty" protobuf:"bytes,5,opt,name=resources"`

	// ServiceAccountName is the ServiceAccount of the bootstrap Job's Pod,
	// in the store's namespace: one whose identity may read the backup it
	// restores (a cloud's workload identity), say. A DNS-1123 subdomain of at most 253
	// characters. It must exist when the Pod is created, or the Pod is
	// refused (the store's ReplicaFailure condition says so). Unset: the
	// namespace's default ServiceAccount. Immutable, with the rest of
	// bootstrap.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty" protobuf:"bytes,6,opt,name=serviceAccountName"`

	// EnvFrom fills the bootstrap container's environment from Secrets or
	// ConfigMaps of the store's namespace (the object store's address and
	// credentials, say), as a container's envFrom does: later sources win
	// over earlier ones, and the KVSTORE_ variables the controller sets win
	// over all of them. At most 16 entries. Immutable, with the rest of
	// bootstrap.
	// +optional
	// +listType=atomic
	EnvFrom []EnvFromSource `json:"envFrom,omitempty" protobuf:"bytes,7,rep,name=envFrom"`
}

// EnvFromSource is one Secret or ConfigMap whose keys become environment
// variables of a container. Exactly one of configMapRef and secretRef is
// set.
type EnvFromSource struct {
	// Prefix is put before each key to make the variable's name: printable
	// ASCII without "=", at most 253 characters.
	// +optional
	Prefix string `json:"prefix,omitempty" protobuf:"bytes,1,opt,name=prefix"`

	// ConfigMapRef is the ConfigMap to take the variables from.
	// +optional
	ConfigMapRef *EnvSourceReference `json:"configMapRef,omitempty" protobuf:"bytes,2,opt,name=configMapRef"`

	// SecretRef is the Secret to take the variables from.
	// +optional
	SecretRef *EnvSourceReference `json:"secretRef,omitempty" protobuf:"bytes,3,opt,name=secretRef"`
}

// EnvSourceReference names a Secret or ConfigMap of the store's namespace.
type EnvSourceReference struct {
	// Name of the Secret or ConfigMap, a DNS-1123 subdomain of at most 253
	// characters.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Optional: when true a missing Secret or ConfigMap is skipped; when
	// unset or false the Pod does not start until it exists.
	// +optional
	Optional *bool `json:"optional,omitempty" protobuf:"varint,2,opt,name=optional"`
}

// PersistentVolumeClaimRetentionPolicyType is what happens to the data
// replicas' PersistentVolumeClaims on deletion.
// +enum
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the claims (and so
	// the data) after the store is deleted.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the claims as the
	// last step of teardown.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// PersistentVolumeClaimRetentionPolicy says what happens to the claims.
type PersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted is Retain (the default: claims and data survive the store)
	// or Delete (claims are deleted after the data replicas are gone).
	// +optional
	// +default="Retain"
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty" protobuf:"bytes,1,opt,name=whenDeleted,casttype=PersistentVolumeClaimRetentionPolicyType"`
}

// KeyValueStorePhase is a coarse summary of where a store is in its life.
// +enum
type KeyValueStorePhase string

const (
	// PhasePending: paused before anything was created (or with its data
	// tier deleted while paused), or paused with changes to the spec that
	// wait until it is unpaused.
	PhasePending KeyValueStorePhase = "Pending"
	// PhaseCreating: workloads exist but are not yet all ready.
	PhaseCreating KeyValueStorePhase = "Creating"
	// PhaseBootstrapping: the data replicas are ready and the bootstrap Job
	// runs; the proxy tier waits for it.
	PhaseBootstrapping KeyValueStorePhase = "Bootstrapping"
	// PhaseReady: every data replica (and proxy replica) is ready at the current spec.
	PhaseReady KeyValueStorePhase = "Ready"
	// PhaseUpgrading: a change of the store's workloads (image, replicas,
	// arguments, environment, resources, scheduling, security context, Pod
	// metadata, pull secrets, proxy) is rolling out on a store that was
	// Ready before.
	PhaseUpgrading KeyValueStorePhase = "Upgrading"
	// PhaseDegraded: the store was ready and has lost ready replicas.
	PhaseDegraded KeyValueStorePhase = "Degraded"
	// PhaseTerminating: the store is being deleted and teardown runs.
	PhaseTerminating KeyValueStorePhase = "Terminating"
	// PhaseFailed: the spec cannot be realised; see the conditions.
	PhaseFailed KeyValueStorePhase = "Failed"
)

// Condition types reported in status.conditions.
const (
	// ConditionReady is True exactly while status.phase is Ready; its
	// reason is the phase otherwise. The server keeps it in step with the
	// phase on every status write, so `kubectl wait --for=condition=Ready`
	// works whichever version the controller writes status in. Compare its
	// observedGeneration with metadata.generation to know it is current.
	ConditionReady = "Ready"
	// ConditionAvailable is True while every data replica is ready.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the workloads move toward the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when ready replicas were lost.
	ConditionDegraded = "Degraded"
	// ConditionBackupSucceeded reports the final backup before deletion.
	ConditionBackupSucceeded = "BackupSucceeded"
	// ConditionScheduledBackupSucceeded reports the outcome of the last
	// finished scheduled backup.
	ConditionScheduledBackupSucceeded = "ScheduledBackupSucceeded"
	// ConditionBootstrapped is True once the bootstrap Job succeeded; False
	// while it runs or after it failed for good.
	ConditionBootstrapped = "Bootstrapped"
	// ConditionReplicaFailure is True while the data StatefulSet, the proxy
	// Deployment, or a bootstrap or backup Job cannot create its Pods
	// (refused by a quota, a Pod Security level, an admission webhook); the
	// message says why. Absent otherwise, as on a Deployment.
	ConditionReplicaFailure = "ReplicaFailure"
	// ConditionStorageResized reports the growth of spec.storage to the data
	// replicas' claims: False while a claim holds less (the reason says
	// whether it is Resizing, ResizeRefused, ResizeInfeasible or
	// ClaimOfAnotherStore), True (Resized) once every claim holds it.
	// Absent until a claim is first asked to grow; kept from then on.
	ConditionStorageResized = "StorageResized"
)

const (
	// TeardownFinalizer is added by the server to every KeyValueStore at
	// create; the controller removes it once teardown has finished.
	TeardownFinalizer = "kvstore.io/teardown"
	// SkipFinalBackupAnnotation set to "true" lets teardown go on without the
	// final backup, the documented way out of a backup that keeps failing.
	SkipFinalBackupAnnotation = "kvstore.io/skip-final-backup"
)

// KeyValueStoreStatus is the observed state of a KeyValueStore.
type KeyValueStoreStatus struct {
	// Phase summarises the store's state: Pending, Creating, Bootstrapping, Ready,
	// Upgrading, Degraded, Terminating or Failed.
	// +optional
	Phase KeyValueStorePhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=KeyValueStorePhase"`

	// ObservedGeneration is the metadata.generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,2,opt,name=observedGeneration"`

	// Replicas is the number of data replica Pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty" protobuf:"varint,3,opt,name=replicas"`

	// ReadyReplicas is the number of data replica Pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty" protobuf:"varint,4,opt,name=readyReplicas"`

	// UpdatedReplicas is the number of data replica Pods at the current spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty" protobuf:"varint,5,opt,name=updatedReplicas"`

	// ProxyReadyReplicas is the number of proxy Pods that are ready.
	// +optional
	ProxyReadyReplicas int32 `json:"proxyReadyReplicas,omitempty" protobuf:"varint,6,opt,name=proxyReadyReplicas"`

	// LastBackupTime is when the store's newest Completed backup
	// (of any reason) completed.
	// +optional
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty" protobuf:"bytes,8,opt,name=lastBackupTime"`

	// NextBackupTime is the next slot of spec.backup.schedule; unset without
	// a schedule or while the store is paused.
	// +optional
	NextBackupTime *metav1.Time `json:"nextBackupTime,omitempty" protobuf:"bytes,11,opt,name=nextBackupTime"`

	// Selector is the label selector of the data replica Pods, in string form.
	// +optional
	Selector string `json:"selector,omitempty" protobuf:"bytes,9,opt,name=selector"`

	// Conditions are the latest observations of the store's state:
	// Ready, Available, Progressing, Degraded, Bootstrapped,
	// ScheduledBackupSucceeded, BackupSucceeded, ReplicaFailure and
	// StorageResized.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,10,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KeyValueStoreList is a list of KeyValueStores.
type KeyValueStoreList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items is the list of KeyValueStores.
	Items []KeyValueStore `json:"items" protobuf:"bytes,2,rep,name=items"`
}
