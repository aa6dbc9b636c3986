package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// VolumeReclaim says what happens to members' volumes when the Mgors is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type VolumeReclaim string

const (
	// VolumeRetain keeps the volumes (the default): data outlives the Mgors.
	VolumeRetain VolumeReclaim = "Retain"
	// VolumeDelete deletes the volumes with the Mgors.
	VolumeDelete VolumeReclaim = "Delete"
)

// StorageSpec is each member's data volume.
//
// +kubebuilder:validation:XValidation:rule="!has(self.size) || quantity(string(self.size)).isGreaterThan(quantity('0'))",message="spec.storage.size must be a positive quantity, e.g. 10Gi"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.storageClassName) == has(self.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="spec.storage.storageClassName is immutable: volumes cannot move to another storage class"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="spec.storage.size cannot shrink: volumes can only grow"
type StorageSpec struct {
	// Size is the capacity of each member's volume. It may grow, never shrink.
	// Growing it expands every member's volume online, without restarting a
	// member; the StorageClass must allow volume expansion (allowVolumeExpansion).
	// +kubebuilder:default="10Gi"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the StorageClass of the volumes; empty means the
	// cluster's default class. It cannot change once set.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// Reclaim says what happens to the volumes when the Mgors is deleted:
	// Retain (the default) keeps them, Delete removes them.
	// +kubebuilder:default=Retain
	// +optional
	Reclaim VolumeReclaim `json:"reclaim,omitempty"`

	// OplogSizeMB is the size of each member's oplog in megabytes, passed to
	// mongod as --oplogSize. Unset means mongod's default (5% of the disk,
	// 990 MB to 50 GB). mongod uses it only when it creates the oplog; a
	// change of 990 MB or more resizes the running members' oplogs with
	// replSetResizeOplog, without a restart (mongod refuses less than
	// 990 MB at run time: a smaller size applies to new members only). A
	// small oplog makes a member that was away fall too stale to catch up
	// sooner.
	// +kubebuilder:validation:Minimum=1
	// +optional
	OplogSizeMB *int32 `json:"oplogSizeMB,omitempty"`
}
