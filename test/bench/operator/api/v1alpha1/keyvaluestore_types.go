package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The JSON shape mirrors kvstore.io/v1alpha1 (pkg/apis/kvstore/v1alpha1);
// see that package for what each field means. kvsbench checks the CRD
// against those types; these mirror the CRD.

// KeyValueStore is a replicated key-value store: a StatefulSet of data
// replicas, an optional proxy Deployment, and a teardown with a final backup.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type KeyValueStore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KeyValueStoreSpec   `json:"spec,omitempty"`
	Status KeyValueStoreStatus `json:"status,omitempty"`
}

// KeyValueStoreSpec is the desired state of a store.
type KeyValueStoreSpec struct {
	// Replicas is the number of data replicas.
	Replicas *int32 `json:"replicas,omitempty"`
	// Image runs the data replicas.
	Image string `json:"image"`
	// Port is the client port.
	Port int32 `json:"port,omitempty"`
	// Storage is each replica's volume.
	Storage StorageSpec `json:"storage,omitempty"`
	// Proxy is the optional proxy tier.
	Proxy *ProxySpec `json:"proxy,omitempty"`
	// Backup is how a backup runs; the teardown takes a final one.
	Backup *BackupSpec `json:"backup,omitempty"`
	// PersistentVolumeClaimRetentionPolicy says whether claims go with the store.
	PersistentVolumeClaimRetentionPolicy *PersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// Paused stops reconciling workloads.
	Paused bool `json:"paused,omitempty"`
	// Bootstrap runs once after the data tier is ready. This operator
	// does not implement it (kvsbench never sets it).
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// StorageSpec is a replica's volume.
type StorageSpec struct {
	// VolumeSize is the size of each claim.
	VolumeSize resource.Quantity `json:"size,omitempty"`
	// StorageClassName is the claims' class.
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ProxySpec is the proxy tier.
type ProxySpec struct {
	// Replicas of the proxy Deployment.
	Replicas *int32 `json:"replicas,omitempty"`
	// Image runs the proxy.
	Image string `json:"image,omitempty"`
}

// BackupSpec is how a backup Job runs.
type BackupSpec struct {
	// Image runs the backup.
	Image string `json:"image"`
	// Command overrides the image's entrypoint.
	Command []string `json:"command,omitempty"`
	// ActiveDeadlineSeconds bounds a backup Job.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// Schedule of scheduled backups (not implemented by this operator).
	Schedule string `json:"schedule,omitempty"`
	// TimeZone of the schedule.
	TimeZone *string `json:"timeZone,omitempty"`
	// Keep is how many scheduled backups are kept.
	Keep *int32 `json:"keep,omitempty"`
}

// BootstrapSpec is a one-off Job after the data tier is first ready.
type BootstrapSpec struct {
	// Image runs the bootstrap.
	Image string `json:"image"`
	// Command overrides the image's entrypoint.
	Command []string `json:"command,omitempty"`
	// FromBackup names a backup to restore.
	FromBackup string `json:"fromBackup,omitempty"`
	// ActiveDeadlineSeconds bounds the Job.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// PersistentVolumeClaimRetentionPolicyType is Retain or Delete.
type PersistentVolumeClaimRetentionPolicyType string

// The retention policies.
const (
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// PersistentVolumeClaimRetentionPolicy says what happens to claims.
type PersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the store is deleted.
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
}

// KeyValueStorePhase summarises a store's state.
type KeyValueStorePhase string

// The phases.
const (
	PhasePending     KeyValueStorePhase = "Pending"
	PhaseCreating    KeyValueStorePhase = "Creating"
	PhaseReady       KeyValueStorePhase = "Ready"
	PhaseUpgrading   KeyValueStorePhase = "Upgrading"
	PhaseDegraded    KeyValueStorePhase = "Degraded"
	PhaseTerminating KeyValueStorePhase = "Terminating"
	PhaseFailed      KeyValueStorePhase = "Failed"
)

// Condition types.
const (
	ConditionAvailable       = "Available"
	ConditionProgressing     = "Progressing"
	ConditionDegraded        = "Degraded"
	ConditionBackupSucceeded = "BackupSucceeded"
)

// TeardownFinalizer holds a store until its teardown is done.
const TeardownFinalizer = "bench.kvstore.io/teardown"

// KeyValueStoreStatus is the observed state of a store.
type KeyValueStoreStatus struct {
	// Phase summarises the conditions.
	Phase KeyValueStorePhase `json:"phase,omitempty"`
	// ObservedGeneration is the generation this status reflects.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the data replicas that exist.
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the data replicas that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// UpdatedReplicas run the current spec.
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// ProxyReadyReplicas is the ready proxy replicas.
	ProxyReadyReplicas int32 `json:"proxyReadyReplicas,omitempty"`
	// CurrentImage is the image of the last fully ready rollout.
	CurrentImage string `json:"currentImage,omitempty"`
	// LastBackupTime is when the last backup completed.
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`
	// NextBackupTime is when the next scheduled backup is due.
	NextBackupTime *metav1.Time `json:"nextBackupTime,omitempty"`
	// Selector of the data Pods, for the scale subresource.
	Selector string `json:"selector,omitempty"`
	// Conditions are Available, Progressing, Degraded and BackupSucceeded.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KeyValueStoreList is a list of stores.
// +kubebuilder:object:root=true
type KeyValueStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KeyValueStore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KeyValueStore{}, &KeyValueStoreList{})
}
