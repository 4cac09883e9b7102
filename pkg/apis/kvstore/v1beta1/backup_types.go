package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KeyValueStoreBackup is one backup of a KeyValueStore's data, taken by a
// Job. The spec says which store and why, and cannot change after create;
// the status is written through the /status subresource by the controller
// that runs the backup.
type KeyValueStoreBackup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec says which store to back up and why. Immutable after creation.
	Spec KeyValueStoreBackupSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`

	// Status is the progress of the backup. It is written by the controller
	// through the /status subresource and is read-only here.
	// +optional
	Status KeyValueStoreBackupStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// KeyValueStoreBackupReason says why a backup was taken.
// +enum
type KeyValueStoreBackupReason string

const (
	// BackupReasonManual: asked for by a user (the default).
	BackupReasonManual KeyValueStoreBackupReason = "Manual"
	// BackupReasonScheduled: made by a schedule.
	BackupReasonScheduled KeyValueStoreBackupReason = "Scheduled"
	// BackupReasonFinal: the last backup before a store's teardown.
	BackupReasonFinal KeyValueStoreBackupReason = "Final"
)

// KeyValueStoreBackupSpec is the desired backup. Every field is immutable
// after creation: a backup of another store, or for another reason, is
// another KeyValueStoreBackup.
type KeyValueStoreBackupSpec struct {
	// StoreName is the name of the KeyValueStore to back up, in the backup's
	// own namespace: a DNS-1035 label of at most 52 characters. Required and
	// immutable.
	StoreName string `json:"storeName" protobuf:"bytes,1,opt,name=storeName"`

	// Reason says why the backup was taken: Manual (the default), Scheduled
	// or Final (the last backup before a store's teardown). It is set by
	// whoever creates the backup. Immutable.
	// +optional
	// +default="Manual"
	Reason KeyValueStoreBackupReason `json:"reason,omitempty" protobuf:"bytes,2,opt,name=reason,casttype=KeyValueStoreBackupReason"`
}

// KeyValueStoreBackupPhase is where a backup is in its life.
// +enum
type KeyValueStoreBackupPhase string

const (
	// BackupPhasePending: accepted, no backup Job started yet.
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
	// Phase summarises the backup's progress: Pending, Running, Completed or
	// Failed.
	// +optional
	Phase KeyValueStoreBackupPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=KeyValueStoreBackupPhase"`

	// ObservedGeneration is the metadata.generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,2,opt,name=observedGeneration"`

	// StartTime is when the backup Job started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,3,opt,name=startTime"`

	// CompletionTime is when the backup finished, successfully or not. It is
	// never before startTime.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,4,opt,name=completionTime"`

	// JobName is the name of the Job that takes the backup, in the backup's
	// namespace.
	// +optional
	JobName string `json:"jobName,omitempty" protobuf:"bytes,5,opt,name=jobName"`

	// Attempts is how many times the backup Job has been started, zero or more.
	// +optional
	Attempts int32 `json:"attempts,omitempty" protobuf:"varint,6,opt,name=attempts"`

	// Message is a human-readable detail of the phase, such as why the
	// backup failed, at most 32768 bytes.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,7,opt,name=message"`

	// Conditions are the latest observations of the backup's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,8,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KeyValueStoreBackupList is a list of KeyValueStoreBackups.
type KeyValueStoreBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items is the list of KeyValueStoreBackups.
	Items []KeyValueStoreBackup `json:"items" protobuf:"bytes,2,rep,name=items"`
}
