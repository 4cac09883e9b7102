package kvstore

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KeyValueStoreBackup is one backup of a KeyValueStore's data, taken by a
// Job. The spec says which store and why, and cannot change after create;
// the status is written through /status by the controller that runs it.
type KeyValueStoreBackup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which store to back up and why. Immutable.
	Spec KeyValueStoreBackupSpec `json:"spec"`

	// Status is the progress of the backup, written through /status.
	// +optional
	Status KeyValueStoreBackupStatus `json:"status,omitempty"`
}

// KeyValueStoreBackupReason says why a backup was taken.
// +enum
type KeyValueStoreBackupReason string

const (
	// BackupReasonManual: asked for by a user.
	BackupReasonManual KeyValueStoreBackupReason = "Manual"
	// BackupReasonScheduled: made by a schedule.
	BackupReasonScheduled KeyValueStoreBackupReason = "Scheduled"
	// BackupReasonFinal: the last backup before a store's teardown.
	BackupReasonFinal KeyValueStoreBackupReason = "Final"
)

// KeyValueStoreBackupSpec is the desired backup. Every field is immutable.
type KeyValueStoreBackupSpec struct {
	// StoreName is the name of the KeyValueStore, in the backup's namespace,
	// to back up.
	StoreName string `json:"storeName"`

	// Reason is Manual, Scheduled or Final.
	// +optional
	Reason KeyValueStoreBackupReason `json:"reason,omitempty"`
}

// KeyValueStoreBackupPhase is where a backup is in its life.
// +enum
type KeyValueStoreBackupPhase string

const (
	// BackupPhasePending: accepted, no Job started yet.
	BackupPhasePending KeyValueStoreBackupPhase = "Pending"
	// BackupPhaseRunning: the backup Job runs.
	BackupPhaseRunning KeyValueStoreBackupPhase = "Running"
	// BackupPhaseCompleted: the backup Job succeeded.
	BackupPhaseCompleted KeyValueStoreBackupPhase = "Completed"
	// BackupPhaseFailed: the backup Job failed for good.
	BackupPhaseFailed KeyValueStoreBackupPhase = "Failed"
)

// KeyValueStoreBackupStatus is the observed progress of a backup.
type KeyValueStoreBackupStatus struct {
	// Phase is Pending, Running, Completed or Failed.
	// +optional
	Phase KeyValueStoreBackupPhase `json:"phase,omitempty"`

	// ObservedGeneration is the metadata.generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// StartTime is when the backup Job started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the backup finished, successfully or not.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// JobName is the name of the backup Job.
	// +optional
	JobName string `json:"jobName,omitempty"`

	// Attempts is how many times the backup was tried.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// Message is a human-readable detail of the phase.
	// +optional
	Message string `json:"message,omitempty"`

	// Conditions are the latest observations of the backup.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KeyValueStoreBackupList is a list of KeyValueStoreBackups.
type KeyValueStoreBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of KeyValueStoreBackups.
	Items []KeyValueStoreBackup `json:"items"`
}
